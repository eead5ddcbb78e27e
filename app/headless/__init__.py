"""Headless use of the protocol core: `mcp-console call` and `mcp-console check`, built on app.mcp directly."""
