"""A 2025-11-25 stdio server, by hand, whose tools break their outputSchema: for the console's outputSchema check
on a session of that revision (app/mcp/lint/output.py), where the 2026-07-28 lint does not apply.

    python -m tests.hostile.legacy_output

It answers `initialize`, `tools/list` (`count`, whose outputSchema wants an integer `n`; `fine`, the same schema
kept) and `tools/call`: `count` answers with `{"n": "seven"}`, `fine` with `{"n": 7}`. Anything else is -32601.
"""

from __future__ import annotations

import json
import sys
from typing import Any

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
TOOLS = [{"name": name, "description": f"{name} n", "inputSchema": {"type": "object"}, "outputSchema": SCHEMA}
         for name in ("count", "fine")]


def answer(message: dict[str, Any]) -> dict[str, Any] | None:
    method, request_id = message.get("method"), message.get("id")
    if request_id is None:
        return None  # a notification (initialized, cancelled)
    if method == "initialize":
        result: dict[str, Any] = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                                  "serverInfo": {"name": "legacy-output", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        n: Any = "seven" if (message.get("params") or {}).get("name") == "count" else 7
        result = {"content": [{"type": "text", "text": json.dumps({"n": n})}], "structuredContent": {"n": n}}
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": f"no {method}"}}
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def main() -> None:
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        reply = answer(message) if isinstance(message, dict) else None
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
