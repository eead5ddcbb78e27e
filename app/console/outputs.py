"""Checking what a tool returned against what it promised: the check lives in the protocol core
(`app.mcp.schemas`), where the lint uses it too; this name stays for the console's callers."""

from app.mcp.schemas import validate_structured

__all__ = ["validate_structured"]
