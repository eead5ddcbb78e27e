"""Bundled demo MCP server for the console (MCP 2026-07-28, built on `mcp` 2.3.0).

`build_server()` returns the configured `MCPServer`; `main()` is the CLI entry point
(`python -m app.demo --port 8766` or `python -m app.demo --stdio`). Self-contained:
nothing here imports other `app.*` packages, so it can run as a separate process.
"""

from app.demo.run import main
from app.demo.server import build_server

__all__ = ["build_server", "main"]
