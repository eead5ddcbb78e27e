"""MCP Console: a web debugging console for MCP servers on the 2026-07-28 revision."""

__version__ = "0.1.0"
