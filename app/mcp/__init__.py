"""Protocol core: JSON-RPC framing, 2026-07-28 requests, transports, wire events.

This package knows nothing of the web app: it imports only the standard library,
httpx and mcp-types, so it can be driven from a plain script. A test enforces it.
"""
