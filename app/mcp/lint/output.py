"""The outputSchema rule alone, for a session on 2025-11-25.

The live lint (`engine.Linter`) holds a server to the 2026-07-28 rules, and a session that settled on 2025-11-25 is
not held to them (no resultType, no cache fields, requests from the server are allowed there). One of its rules
is the same in both revisions: a tool that declares an `outputSchema` MUST return `structuredContent` that conforms
(2025-11-25 server/tools § output schema). Most servers people run speak 2025-11-25, so the console checks that
one rule there too, with this small watcher: it learns the tools from tools/list results and checks each
tools/call result, as the Linter does, and nothing else. Pure, like the Linter; `observe` never raises.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from app.mcp.lint import checks
from app.mcp.lint.engine import KEEP_REQUESTS
from app.mcp.lint.rules import RULES, Finding
from app.mcp.wire import WireEvent

RULE = "tools.structured-content"
LEGACY_SPEC = "https://modelcontextprotocol.io/specification/2025-11-25/server/tools#output-schema"


class OutputLint:
    def __init__(self) -> None:
        self.tools: dict[str, dict[str, Any]] = {}
        self._requests: OrderedDict[str, tuple[Any, str, Any]] = OrderedDict()  # exchange → (id, method, name)

    def observe(self, event: WireEvent, seq: int) -> list[Finding]:
        try:
            return self._observe(event, seq)
        except Exception:  # hostile shapes are tested below; a bug here must not kill the reader
            return []

    def _observe(self, event: WireEvent, seq: int) -> list[Finding]:
        frame, key = event.frame, event.exchange
        if frame is None or key is None or frame.message is None:
            return []
        if event.direction == "out" and frame.kind == "request" and frame.method in ("tools/list", "tools/call"):
            self._requests[key] = (frame.id, frame.method, frame.params.get("name"))
            while len(self._requests) > KEEP_REQUESTS:
                self._requests.popitem(last=False)
            return []
        if event.direction != "in" or frame.kind != "response" or key not in self._requests:
            return []
        request_id, method, name = self._requests[key]
        result = frame.message.get("result")
        if frame.id != request_id or not isinstance(result, dict):
            return []
        if method == "tools/list":
            listed = result.get("tools")
            for tool in listed if isinstance(listed, list) else []:
                if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                    self.tools[tool["name"]] = tool
            return []
        del self._requests[key]
        tool = self.tools.get(name) if isinstance(name, str) else None
        if tool is None or not isinstance(tool.get("outputSchema"), dict):
            return []
        row = RULES[RULE]
        return [Finding(rule, row.severity, message, key, seq, None, LEGACY_SPEC)
                for rule, message in checks.structured_problems(tool, result)]
