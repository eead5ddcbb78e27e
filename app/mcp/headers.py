"""The 2026-07-28 HTTP request headers: MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Param-*."""

from __future__ import annotations

import base64
import re
from typing import Any

# Methods whose request must carry Mcp-Name, and the param it mirrors.
# The tasks extension (2026-07-28) routes its requests by the task id, so a load balancer reaches the instance that
# holds the task (the official Inspector omits it: its #1917).
NAME_PARAM: dict[str, str] = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri",
                              "tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}

_TOKEN = re.compile(r"\A[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")  # RFC 9110 token (\Z: $ lets a final newline by)
_SENTINEL = re.compile(r"^=\?base64\?.*\?=$")
_NOT_PLAIN = re.compile(r"[^\t\x20-\x7e]")


def encode_value(value: Any) -> str:
    """Encode a header value: plain safe ASCII as is, anything else as =?base64?…?=."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, int):
        text = str(value)
    elif isinstance(value, float):
        text = repr(value) if not value.is_integer() else str(int(value))
    else:
        text = str(value)
    # Plain: every character a tab or printable ASCII (one C scan, not a Python loop per character).
    plain = text.isascii() and _NOT_PLAIN.search(text) is None
    if plain and text == text.strip() and not _SENTINEL.fullmatch(text):
        return text
    # A lone surrogate (a JSON escape such as \ud800) has no UTF-8 form. The value mirrors a param of the body,
    # which the transport then refuses to send with a note: the header must not fail first, out of the request path.
    return "=?base64?" + base64.b64encode(text.encode("utf-8", "surrogatepass")).decode("ascii") + "?="


def decode_value(value: str) -> str:
    """Undo encode_value for display (returns the input when it is not the sentinel form)."""
    if _SENTINEL.fullmatch(value):
        try:
            return base64.b64decode(value[9:-2], validate=True).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return value
    return value


def param_headers(tool: dict[str, Any]) -> tuple[dict[str, str], str | None]:
    """Map argument name → header name for a tool's x-mcp-header annotations.

    Returns the mapping, or a reason the tool is invalid (the spec says such a tool is dropped
    from the tools/list result; the console keeps it on screen but flags it).
    """
    schema = tool.get("inputSchema")
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return {}, None
    mapping: dict[str, str] = {}
    seen: set[str] = set()
    for arg, sub in props.items():
        if not isinstance(sub, dict):
            continue
        nested = _nested_annotation(sub)
        if nested:
            return {}, f"argument {arg!r}: x-mcp-header inside {nested} (only top-level properties may carry it)"
        if "x-mcp-header" not in sub:
            continue
        name = sub["x-mcp-header"]
        if not isinstance(name, str) or not name or not _TOKEN.match(name):
            return {}, f"argument {arg!r}: x-mcp-header {name!r} is not a valid header token"
        if name.lower() in seen:
            return {}, f"argument {arg!r}: x-mcp-header {name!r} is not unique"
        kind = sub.get("type")
        if kind not in ("string", "integer", "boolean"):
            return {}, f"argument {arg!r}: x-mcp-header needs type string, integer or boolean, got {kind!r}"
        seen.add(name.lower())
        mapping[arg] = name
    return mapping, None


def _nested_annotation(schema: dict[str, Any], depth: int = 0) -> str | None:
    """Where, below this property, another x-mcp-header hides (items, combinators, nested objects)."""
    if depth > 20:
        return None
    for key, value in schema.items():
        children = value.values() if key in ("properties", "$defs", "definitions") and isinstance(value, dict) \
            else value if isinstance(value, list) else [value]
        for child in children:
            if isinstance(child, dict):
                if "x-mcp-header" in child:
                    return key
                found = _nested_annotation(child, depth + 1)
                if found:
                    return found
    return None


MAX_SAFE_INTEGER = 2**53 - 1


def request_headers(
    method: str,
    params: dict[str, Any],
    protocol_version: str,
    arg_headers: dict[str, str] | None = None,
) -> dict[str, str]:
    """The MCP headers a 2026-07-28 POST must carry for this request."""
    headers = {"MCP-Protocol-Version": protocol_version, "Mcp-Method": method}
    name_key = NAME_PARAM.get(method)
    if name_key and name_key in params:
        headers["Mcp-Name"] = encode_value(params[name_key])
    if method == "tools/call" and arg_headers:
        arguments = params.get("arguments") or {}
        for arg, header in arg_headers.items():
            value = arguments.get(arg) if isinstance(arguments, dict) else None
            if value is not None and not (isinstance(value, int) and abs(value) > MAX_SAFE_INTEGER):
                headers[f"Mcp-Param-{header}"] = encode_value(value)
    return headers


_FIELD_VALUE = re.compile(r"\A[\t\x20-\x7e]*\Z")  # what httpx can write: visible ASCII, spaces and tabs


def typed_header(line: str) -> tuple[str, str]:
    """A header a person typed as `Name: value` (or `Name:value`), as HTTP reads a field line: the name a token, the
    value without the whitespace around it (RFC 9110 §5.5: "Bearer x" after the colon's space, not " Bearer x").
    A ValueError says what is wrong and never quotes the value: it is often a credential, and a CI log keeps it."""
    name, colon, value = line.partition(":")
    name = name.strip()
    if not colon:  # not quoted: "Authorization Bearer x" (a colon forgotten) is a credential all the same
        raise ValueError("a header without a colon: expected NAME: VALUE (what was typed is not shown)")
    if not _TOKEN.match(name):
        raise ValueError("a header name that is not an HTTP token (letters, digits and !#$%&'*+-.^_`|~; what was "
                         "typed is not shown)")
    value = value.strip(" \t")
    if not _FIELD_VALUE.match(value):
        raise ValueError(f"header {name}: its value holds a line break, a control character or a non-ASCII "
                         "character, which an HTTP header cannot carry (the value is not shown)")
    return name, value
