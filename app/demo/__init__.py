"""Bundled demo MCP server for the console (MCP 2026-07-28, built on `mcp` 2.3.0).

`build_server()` returns the configured `MCPServer`; `main()` is the CLI entry point
(`python -m app.demo --port 8766` or `python -m app.demo --stdio`). Self-contained:
nothing here imports other `app.*` packages, so it can run as a separate process.

Both are loaded on first use, not on import: the console imports `app.demo.oauth_provider` (the launcher of the
OAuth demo's Node authorization server) without loading the demo server and its SDK into its own process.
"""

from typing import Any

__all__ = ["build_server", "main"]


def __getattr__(name: str) -> Any:
    if name == "main":
        from app.demo.run import main

        return main
    if name == "build_server":
        from app.demo.server import build_server

        return build_server
    raise AttributeError(f"module 'app.demo' has no attribute {name!r}")
