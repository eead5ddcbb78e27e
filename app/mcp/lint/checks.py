"""Checks on one frame, given what is known of its request: pure functions that return (rule id, message).

Each check reads hostile input: shapes are tested before use, and anything odd is a problem to report,
never an exception (the engine still catches one, as `lint.internal`).
"""

from __future__ import annotations

import functools
import math
import re
import typing
from typing import Any

from mcp_types import methods as wire_types
from pydantic import BaseModel, ValidationError

from app.mcp.apps import ui_resource_uri
from app.mcp.headers import NAME_PARAM, encode_value, param_headers
from app.mcp.schemas import validate_structured
from app.mcp.state import analyze

Problem = tuple[str, str]
VERSION = "2026-07-28"
MRTR_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
RESULT_TYPES = frozenset({"complete", "input_required"})
CACHEABLE = frozenset(wire_types.CACHEABLE_METHODS)
TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
SUBSCRIPTION_KEY = "io.modelcontextprotocol/subscriptionId"
# The status each MCP error code must travel with on Streamable HTTP (spec § error codes).
ERROR_STATUS = {-32020: 400, -32021: 400, -32022: 400, -32601: 404}
RETIRED_CODES = {-32002: "resource not found (now -32602)", -32042: "URL elicitation required (2025-11-25 only)",
                 -32001: "a pre-release draft's header mismatch (now -32020)",
                 -32003: "a pre-release draft's missing capability (now -32021)",
                 -32004: "a pre-release draft's unsupported version (now -32022)"}
FILTER_FLAGS = ("toolsListChanged", "promptsListChanged", "resourcesListChanged")


def _schema_problem(exc: ValidationError) -> str:
    errors = exc.errors()
    if not errors:
        return str(exc)
    where = "/".join(str(p) for p in errors[0]["loc"]) or "(root)"
    return f"{where}: {errors[0]['msg']}"


def result_problems(method: str, result: Any, version: str = VERSION, tasks: bool = False) -> list[Problem]:
    """A final `result` of `method`: its resultType, its wire type and, when cacheable, ttlMs/cacheScope. A
    2025-11-25 result has no resultType and no cache fields: only its wire type of that revision is checked.
    `tasks`: the request declared the tasks extension, so a `tools/call` may answer `resultType: "task"`."""
    if not isinstance(result, dict):
        return [("frame.schema", f"the result of {method} is {type(result).__name__}, not an object")]
    if version != VERSION:
        return _wire_type(method, result, version)
    problems: list[Problem] = []
    rtype = result.get("resultType")
    if rtype == "task" and tasks and method == "tools/call":
        return [] if isinstance(result.get("taskId"), str) else [
            ("frame.schema", "a task result (resultType task) without a taskId")]
    if "resultType" not in result:
        problems.append(("result.type-missing", f"the result of {method} has no resultType"))
    elif rtype not in RESULT_TYPES:
        problems.append(("result.type-unknown", f"resultType {rtype!r} on {method} is not one the revision "
                                                "defines"))
        return problems  # its shape is unknown too: nothing more to compare it with
    if rtype == "input_required":
        if method not in MRTR_METHODS:
            problems.append(("result.input-required-method", f"input_required is not allowed on {method}"))
        problems.extend(request_state_problems(result))
        return problems
    problems.extend(_wire_type(method, result))
    if method in CACHEABLE:
        problems.extend(cache_problems(method, result))
    return problems


def _wire_type(method: str, result: dict[str, Any], version: str = VERSION) -> list[Problem]:
    if (method, version) not in wire_types.SERVER_RESULTS:
        return []  # a method of an extension: the revision has no type for it
    if version != VERSION:
        try:
            _complete_type(method, version).model_validate(result, by_name=False)
        except ValidationError as exc:
            return [("frame.schema", f"the result of {method} does not match its {version} type at "
                                     f"{_schema_problem(exc)}")]
        return []
    # The cache fields have their own rule; a missing resultType its own too (absent means complete).
    shaped = {"resultType": "complete", "ttlMs": 0, "cacheScope": "public", **result} \
        if method in CACHEABLE else {"resultType": "complete", **result}
    try:
        _complete_type(method).model_validate(shaped, by_name=False)
    except ValidationError as exc:
        return [("frame.schema", f"the result of {method} does not match its 2026-07-28 type at "
                                 f"{_schema_problem(exc)}")]
    return []


@functools.cache
def _complete_type(method: str, version: str = VERSION) -> type[BaseModel]:
    """The complete-result model of `method`: a union with InputRequiredResult would let any shape through
    as "input required", so a complete result is held to its own member of the union."""
    surface = wire_types.SERVER_RESULTS[(method, version)]
    members = [t for t in typing.get_args(surface) if isinstance(t, type) and issubclass(t, BaseModel)
               and t.__name__ != "InputRequiredResult"]
    if members:
        return members[0]
    assert isinstance(surface, type) and issubclass(surface, BaseModel)
    return surface


def cache_problems(method: str, result: dict[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    ttl, scope = result.get("ttlMs"), result.get("cacheScope")
    if "ttlMs" not in result:
        problems.append(("cache.fields", f"{method} result has no ttlMs"))
    elif isinstance(ttl, bool) or not isinstance(ttl, int | float) or ttl < 0:
        problems.append(("cache.fields", f"{method} result has ttlMs {ttl!r}: a number ≥ 0 is required"))
    if "cacheScope" not in result:
        problems.append(("cache.fields", f"{method} result has no cacheScope"))
    elif scope not in ("public", "private"):
        problems.append(("cache.fields", f"{method} result has cacheScope {scope!r}: \"public\" or \"private\""))
    return problems


def request_state_problems(result: dict[str, Any]) -> list[Problem]:
    state = result.get("requestState")
    if not isinstance(state, str):
        return []
    info = analyze(state)
    if info["encoding"] in ("JSON", "base64", "base64url") and isinstance(info["decoded"], dict | list):
        return [("request-state.plaintext", f"requestState ({info['size']} bytes) is {info['encoding']} that "
                                            "decodes to readable JSON; the spec calls it opaque")]
    return []


def error_problems(error: Any, http_status: int | None) -> list[Problem]:
    code = error.get("code") if isinstance(error, dict) else None
    if not isinstance(code, int) or isinstance(code, bool):
        return []
    problems: list[Problem] = []
    want = ERROR_STATUS.get(code)
    if http_status is not None and want is not None and http_status != want:
        problems.append(("http.error-status", f"error {code} came with HTTP {http_status}; the revision says "
                                              f"{want}"))
    if code in RETIRED_CODES:
        problems.append(("error.retired-code", f"error code {code}: {RETIRED_CODES[code]}"))
    return problems


def status_problems(method: str, http_status: int) -> list[Problem]:
    """A result (not an error) that came with an HTTP error status: one of the two is wrong, and a client that
    believes the body calls a failed request a success."""
    if http_status >= 400:
        return [("http.result-status", f"the result of {method} came with HTTP {http_status}: an error status "
                                       "carries a JSON-RPC error, not a result")]
    return []


def is_error_problems(result: dict[str, Any]) -> list[Problem]:
    """`isError` is a boolean or absent; anything else leaves the caller to guess whether the tool failed."""
    if "isError" in result and not isinstance(result["isError"], bool):
        shown = repr(result["isError"])
        return [("result.is-error", f"isError is {type(result['isError']).__name__} "
                                    f"{shown[:60]}{'…' if len(shown) > 60 else ''}, not a boolean")]
    return []


def plainly_valid_progress(params: Any) -> bool:
    """True for progress params that ProgressNotificationParams certainly accepts: a string or integer token, a
    number, an optional number total and string message, no _meta. A flood of progress is thousands of these a
    second, and the two pydantic validations were the lint's largest cost per frame; anything else (a bool, a
    numeric string, _meta) still goes through the full check, so no verdict changes."""
    if not isinstance(params, dict) or "_meta" in params:
        return False
    token: Any = params.get("progressToken")
    progress: Any = params.get("progress")
    total: Any = params.get("total")
    message = params.get("message")
    return (type(token) in (str, int) and type(progress) in (int, float) and math.isfinite(progress)
            and (total is None or (type(total) in (int, float) and math.isfinite(total)))
            and (message is None or type(message) is str))


TASK_NOTIFICATIONS = frozenset({("notifications/tasks/status", "2025-11-25"), ("notifications/tasks", VERSION)})


def notification_problems(method: str, params: Any, version: str = VERSION) -> list[Problem]:
    """A server notification against the revision's notification types."""
    if method == "notifications/progress" and plainly_valid_progress(params):
        return []
    if (method, version) in TASK_NOTIFICATIONS:
        # Tasks are no part of the revision's types (experimental in 2025-11-25, an extension in 2026-07-28): the
        # task machine checks what they say of a task (app/mcp/task.py); here only that they name one.
        ok = isinstance(params, dict) and isinstance(params.get("taskId"), str)
        return [] if ok else [("frame.schema", f"{method} names no task (params.taskId)")]
    if (method, version) not in wire_types.SERVER_NOTIFICATIONS:
        return [("frame.schema", f"{method} is not a server notification of {version}")]
    try:
        wire_types.parse_server_notification(method, version, params if isinstance(params, dict) else None)
    except ValidationError as exc:
        return [("frame.schema", f"{method} does not match its {version} type at {_schema_problem(exc)}")]
    except (KeyError, ValueError, RuntimeError) as exc:
        return [("frame.schema", f"{method} could not be checked against its type: {exc}")]
    return []


def tool_problems(tool: Any) -> list[Problem]:
    """One entry of a tools/list result: its name and its x-mcp-header annotations."""
    if not isinstance(tool, dict):
        return []  # the wire type check reports it
    name = tool.get("name")
    problems: list[Problem] = []
    if isinstance(name, str) and not TOOL_NAME.fullmatch(name):
        problems.append(("tools.name", f"tool name {name[:80]!r} is not 1–128 characters of [A-Za-z0-9_.-]"))
    _mapping, problem = param_headers(tool)
    if problem:
        problems.append(("tools.x-mcp-header", f"tool {str(name)[:80]!r}: {problem}"))
    ui = ui_resource_uri(tool)
    if ui is not None and not ui.startswith("ui://"):  # an MCP App's view is always a ui:// resource
        problems.append(("apps.resource-uri", f"tool {str(name)[:80]!r}: _meta.ui.resourceUri {ui[:120]!r} is not a "
                                              "ui:// URI"))
    return problems


def structured_problems(tool: dict[str, Any] | None, result: dict[str, Any]) -> list[Problem]:
    verdict = validate_structured(tool, result)
    if verdict is None or verdict["valid"]:
        return []
    return [("tools.structured-content", f"tool {str((tool or {}).get('name'))[:80]!r}: {verdict['message']}")]


def _filter_of(value: Any) -> tuple[set[str], set[str]]:
    """(flags set true, resource URIs) of a SubscriptionFilter; anything malformed counts as nothing."""
    if not isinstance(value, dict):
        return set(), set()
    flags = {k for k in FILTER_FLAGS if value.get(k) is True}
    uris = value.get("resourceSubscriptions")
    return flags, {u for u in uris if isinstance(u, str)} if isinstance(uris, list) else set()


def granted_problems(requested: Any, granted: Any) -> list[Problem]:
    want_flags, want_uris = _filter_of(requested)
    got_flags, got_uris = _filter_of(granted)
    extra = sorted(got_flags - want_flags) + sorted(got_uris - want_uris)
    if extra:
        return [("listen.granted-superset", f"the acknowledgement grants what was not requested: "
                                            f"{', '.join(map(repr, extra))[:300]}")]
    return []


def header_problems(message: dict[str, Any], headers: dict[str, str]) -> list[Problem]:
    """A request POST's MCP headers against its body (headers keyed in lower case)."""
    method = message.get("method")
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    assert isinstance(params, dict)
    problems: list[Problem] = []
    if headers.get("mcp-method") != method:
        problems.append(("headers.echo", f"Mcp-Method {headers.get('mcp-method')!r} does not echo method "
                                         f"{method!r}"))
    meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
    assert isinstance(meta, dict)
    version = meta.get("io.modelcontextprotocol/protocolVersion")
    if headers.get("mcp-protocol-version") != version:
        problems.append(("headers.echo", f"MCP-Protocol-Version {headers.get('mcp-protocol-version')!r} does "
                                         f"not echo _meta protocolVersion {version!r}"))
    name_key = NAME_PARAM.get(str(method))
    if name_key and name_key in params:
        want = encode_value(params[name_key])
        if headers.get("mcp-name") != want:
            problems.append(("headers.echo", f"Mcp-Name {headers.get('mcp-name')!r} does not echo "
                                             f"params.{name_key} (expected {want!r})"))
    return problems


def subscription_id(params: Any) -> Any:
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta.get(SUBSCRIPTION_KEY, ...) if isinstance(meta, dict) else ...

