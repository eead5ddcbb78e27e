"""Multi Round-Trip Requests: reading an input_required result and building the retry.

The rules that matter for fidelity: the retry re-sends the original params, adds inputResponses
keyed exactly as the server keyed inputRequests, echoes requestState byte for byte (and sends none
when none came), and goes out under a new JSON-RPC id (the client allocates one per request).
"""

from __future__ import annotations

import copy
from typing import Any, Literal

MRTR_KEYS = ("inputResponses", "requestState", "_meta")
InputKind = Literal["form", "url", "sampling", "roots", "unknown"]

# The primitive shapes a form-mode requestedSchema may use (spec: PrimitiveSchemaDefinition).
_STRING_KEYS = {"type", "title", "description", "minLength", "maxLength", "format", "default"}
_ENUM_KEYS = {"type", "title", "description", "enum", "enumNames", "oneOf", "default"}
_NUMBER_KEYS = {"type", "title", "description", "minimum", "maximum", "default"}
_BOOL_KEYS = {"type", "title", "description", "default"}
_ARRAY_KEYS = {"type", "title", "description", "minItems", "maxItems", "items", "default"}
_FORMATS = {"email", "uri", "date", "date-time"}


def input_requests(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    requests = result.get("inputRequests")
    if not isinstance(requests, dict):
        return {}
    return {k: v for k, v in requests.items() if isinstance(k, str) and isinstance(v, dict)}


def request_state(result: dict[str, Any]) -> str | None:
    state = result.get("requestState")
    return state if isinstance(state, str) else None


def shape_problem(result: dict[str, Any]) -> str | None:
    """What is wrong with an input_required result's shape, if anything (shown on the timeline)."""
    raw = result.get("inputRequests")
    if raw is not None and not isinstance(raw, dict):
        return "inputRequests is not an object"
    if "requestState" in result and not isinstance(result["requestState"], str):
        return "requestState is not a string"
    if isinstance(raw, dict):
        bad = [k for k, v in raw.items() if not isinstance(v, dict) or not isinstance(v.get("method"), str)]
        if bad:
            return f"inputRequests entries without a method: {bad}"
    if not input_requests(result) and request_state(result) is None:
        return "input_required with neither inputRequests nor requestState"
    return None


def retry_params(original: dict[str, Any], responses: dict[str, Any], state: str | None) -> dict[str, Any]:
    """The params of the next round: the original ones, plus the answers and the echoed state."""
    params = {k: copy.deepcopy(v) for k, v in original.items() if k not in MRTR_KEYS}
    if responses:
        params["inputResponses"] = responses
    if state is not None:
        params["requestState"] = state
    return params


def kind_of(request: dict[str, Any]) -> InputKind:
    """Which dialog answers the request. One whose params lack the shape that dialog reads (params that are not an
    object, sampling messages that are not a list of objects) is "unknown": answered as raw JSON, shown as sent."""
    method = request.get("method")
    raw = request.get("params")
    if raw is not None and not isinstance(raw, dict):
        return "unknown"
    params = raw or {}
    if method == "elicitation/create":
        return "url" if params.get("mode") == "url" else "form"
    if method == "sampling/createMessage":
        messages = params.get("messages")
        if messages is not None and not (isinstance(messages, list) and all(
                isinstance(m, dict) and isinstance(m.get("content"), dict | list | None) for m in messages)):
            return "unknown"
        return "sampling"
    if method == "roots/list":
        return "roots"
    return "unknown"


def form_schema_problem(schema: Any) -> str | None:
    """None when requestedSchema stays inside the spec's flat, primitive subset; else why not."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return 'requestedSchema must be {"type": "object", ...}'
    props = schema.get("properties", {})
    if not isinstance(props, dict):
        return "properties must be an object"
    for name, prop in props.items():
        problem = _property_problem(prop)
        if problem:
            return f"property {name!r}: {problem}"
    required = schema.get("required", [])
    if not isinstance(required, list) or any(r not in props for r in required):
        return "required names a property that does not exist"
    return None


def _property_problem(prop: Any) -> str | None:
    if not isinstance(prop, dict):
        return "not an object"
    kind = prop.get("type")
    extra: set[str]
    if kind == "string" and ("enum" in prop or "oneOf" in prop):
        extra = set(prop) - _ENUM_KEYS
        one_of = prop.get("oneOf", [])
        options = prop.get("enum") or [o.get("const") for o in (one_of if isinstance(one_of, list) else [])
                                       if isinstance(o, dict)]
        if not isinstance(options, list) or not options or not all(isinstance(o, str) for o in options):
            return "enum options must be strings"
    elif kind == "string":
        extra = set(prop) - _STRING_KEYS
        if "format" in prop and prop["format"] not in _FORMATS:
            return f"format {prop['format']!r} is not one of {sorted(_FORMATS)}"
    elif kind in ("number", "integer"):
        extra = set(prop) - _NUMBER_KEYS
    elif kind == "boolean":
        extra = set(prop) - _BOOL_KEYS
    elif kind == "array":
        extra = set(prop) - _ARRAY_KEYS
        items = prop.get("items")
        if not isinstance(items, dict):
            return "array without items"
        if not (isinstance(items.get("enum"), list) or isinstance(items.get("anyOf"), list)):
            return "arrays are allowed only as multi-select enums"
    else:
        return f"type {kind!r} is not a primitive"
    if extra:
        return f"keywords outside the allowed subset: {sorted(extra)}"
    return None
