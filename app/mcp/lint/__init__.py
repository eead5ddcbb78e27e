"""A conformance lint of what a client sees on the wire (2026-07-28): rules, the live engine, SSE framing."""

from app.mcp.lint.engine import Linter
from app.mcp.lint.rules import RULES, SEVERITY_RANK, Finding, Rule, Severity
from app.mcp.lint.sse import lint_sse_text

__all__ = ["RULES", "SEVERITY_RANK", "Finding", "Linter", "Rule", "Severity", "lint_sse_text"]
