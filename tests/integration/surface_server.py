"""A small 2026-07-28 stdio server whose surface differs by a flag, for the surface diff's tests.

    python -m tests.integration.surface_server            # version 1
    python -m tests.integration.surface_server --v2       # version 2: the schema changes below

Version 2, against version 1: `forecast`'s `days` narrows from number to integer, a required argument `unit` is
added, the enum value "hourly" of `detail` is removed and additionalProperties is closed; its output drops the
field `humidity`; the tool `legacy_report` is removed, `radar` added; `forecast`'s description changes; the
prompt `summary` gains a required argument; the resources capability loses `subscribe`. Only stdlib: it speaks the
wire by hand, a line a message.
"""

from __future__ import annotations

import json
import sys
from typing import Any

PROTOCOL = "2026-07-28"


def surface(v2: bool) -> dict[str, Any]:
    forecast_input: dict[str, Any] = {
        "type": "object",
        "properties": {"city": {"type": "string", "maxLength": 80},
                       "days": {"type": "integer" if v2 else "number"},
                       "detail": {"enum": ["daily"] if v2 else ["daily", "hourly"]}},
        "required": ["city"]}
    if v2:
        forecast_input["properties"]["unit"] = {"type": "string", "enum": ["C", "F"]}
        forecast_input["required"] = ["city", "unit"]
        forecast_input["additionalProperties"] = False
    output = {"type": "object", "properties": {"temperature": {"type": "number"}, **(
        {} if v2 else {"humidity": {"type": "number"}})}}
    tools = [{"name": "forecast", "description": "The weather ahead." if v2 else "The forecast.",
              "inputSchema": forecast_input, "outputSchema": output}]
    tools.append({"name": "radar", "inputSchema": {"type": "object"}} if v2 else
                 {"name": "legacy_report", "inputSchema": {"type": "object"}})
    prompt_args = [{"name": "city", "required": True}, *([{"name": "style", "required": True}] if v2 else [])]
    return {
        "capabilities": {"tools": {"listChanged": True}, "prompts": {},
                         "resources": {} if v2 else {"subscribe": True}},
        "tools": tools,
        "prompts": [{"name": "summary", "arguments": prompt_args}],
        "resources": [{"uri": "weather://stations", "name": "stations", "mimeType": "application/json"}],
        "resourceTemplates": [{"uriTemplate": "weather://station/{id}", "name": "station"}],
    }


def answer(message: dict[str, Any], found: dict[str, Any]) -> dict[str, Any] | None:
    method, rid = message.get("method"), message.get("id")
    if rid is None:
        return None
    lists = {"tools/list": "tools", "prompts/list": "prompts", "resources/list": "resources",
             "resources/templates/list": "resourceTemplates"}
    if method == "server/discover":
        result: dict[str, Any] = {
            "supportedVersions": [PROTOCOL], "capabilities": found["capabilities"],
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "surface-test", "version": "2" if "radar" in
                                                              json.dumps(found["tools"]) else "1"}}}
    elif method in lists:
        result = {lists[str(method)]: found[lists[str(method)]]}
    else:
        return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"method not found: {method}"}}
    return {"jsonrpc": "2.0", "id": rid, "result": {"resultType": "complete", **result}}


def main() -> None:
    found = surface("--v2" in sys.argv[1:])
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        reply = answer(message, found) if isinstance(message, dict) else None
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
