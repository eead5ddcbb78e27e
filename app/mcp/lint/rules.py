"""The lint's rule table: every rule a client can observe, with its id, severity, summary and spec link.

A rule is a row here and a check elsewhere (`checks.py` for one frame, `engine.py` for what needs the
request in flight). Findings name their rule by id; `docs/lint-rules.md` documents every id (a test checks
the two agree), and `mcp-console check --junit` writes one test case per row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Severity = Literal["error", "warning", "note"]
SEVERITY_RANK: dict[str, int] = {"note": 0, "warning": 1, "error": 2}

SPEC = "https://modelcontextprotocol.io/specification/2026-07-28/"
MODERN, LEGACY = "2026-07-28", "2025-11-25"
# The revisions a rule holds for. A 2025-11-25 server (initialize, server requests, no resultType) is held to the
# rules both revisions share; one of 2026-07-28 to all of them (`Linter.settle` says which a connection spoke).
BOTH: frozenset[str] = frozenset({MODERN, LEGACY})
ONLY_MODERN: frozenset[str] = frozenset({MODERN})


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    severity: Severity
    summary: str
    spec: str  # a page of the 2026-07-28 specification, with the section anchor
    eras: frozenset[str] = BOTH  # the protocol revisions it holds for

    def holds_for(self, version: str) -> bool:
        return version in self.eras

    @property
    def spec_url(self) -> str:
        return SPEC + self.spec


@dataclass(frozen=True, slots=True)
class Finding:
    """One rule broken by one frame: `exchange` ties it to a request, `seq` to the wire event that showed it."""

    rule: str
    severity: Severity
    message: str
    exchange: str | None
    seq: int
    frame_index: int | None
    spec_url: str

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "severity": self.severity, "message": self.message, "exchange": self.exchange,
                "seq": self.seq, "frame_index": self.frame_index, "spec_url": self.spec_url}


_ROWS = [
    Rule("frame.malformed", "error", "A frame is not JSON or not a JSON-RPC 2.0 message (batches included).",
         "basic/index#messages"),
    Rule("frame.schema", "error", "A result or notification does not match the revision's wire types "
         "(the mcp-types models of the revision the connection speaks).", "basic/index#messages"),
    Rule("result.type-missing", "error", "A result has no `resultType` (required on every 2026-07-28 result).",
         "basic/index#result-type", ONLY_MODERN),
    Rule("result.type-unknown", "error", "A `resultType` the revision does not define (the client must treat "
         "it as invalid).", "basic/index#result-type", ONLY_MODERN),
    Rule("result.input-required-method", "error", "`input_required` on a method that cannot take MRTR rounds "
         "(only tools/call, prompts/get, resources/read).", "basic/patterns/mrtr#input-required-result", ONLY_MODERN),
    Rule("response.unmatched-id", "error", "A response whose id matches no request in flight (or answers one "
         "twice).", "basic/index#responses"),
    Rule("response.after-cancel", "warning", "A response to a request the client had cancelled.",
         "basic/patterns/cancellation#behavior-requirements"),
    Rule("headers.echo", "error", "A request's `MCP-Protocol-Version`, `Mcp-Method` or `Mcp-Name` header does "
         "not echo its body.", "basic/transports/streamable-http#request-headers", ONLY_MODERN),
    Rule("http.error-status", "error", "An error code and its HTTP status disagree (-32020/-32021/-32022 need "
         "400, -32601 needs 404).", "basic/transports/streamable-http#error-handling", ONLY_MODERN),
    Rule("http.request-accepted", "error", "A request answered with 202 Accepted (202 is for notifications).",
         "basic/transports/streamable-http#sending-messages-to-the-server"),
    Rule("http.notification-status", "error", "A notification POST answered with something other than 202 "
         "Accepted or an error status.", "basic/transports/streamable-http#sending-messages-to-the-server"),
    Rule("error.retired-code", "warning", "An error code the revision retired or a pre-release draft used "
         "(-32002, -32042, -32001, -32003, -32004).", "basic/index#error-codes", ONLY_MODERN),
    Rule("listen.ack-first", "error", "A listen stream whose first frame is not "
         "`notifications/subscriptions/acknowledged`.", "basic/patterns/subscriptions#acknowledgement", ONLY_MODERN),
    Rule("listen.subscription-id", "error", "A frame on a listen stream without the right "
         "`io.modelcontextprotocol/subscriptionId`.", "basic/patterns/subscriptions#notifications", ONLY_MODERN),
    Rule("listen.granted-superset", "error", "The acknowledged filter grants what was not requested (it must be "
         "a subset).", "basic/patterns/subscriptions#acknowledgement", ONLY_MODERN),
    Rule("listen.request-scoped", "error", "Progress or log notifications on a listen stream (they ride only "
         "on their request's stream).", "basic/patterns/subscriptions#notifications", ONLY_MODERN),
    Rule("server.request", "error", "A JSON-RPC request from the server (servers must not send requests in "
         "2026-07-28).", "basic/transports/streamable-http#sending-messages-to-the-server", ONLY_MODERN),
    Rule("progress.after-final", "error", "Progress for a request after its final response.",
         "basic/patterns/progress#behavior-requirements"),
    Rule("progress.after-cancel", "warning", "Progress for a request after the client cancelled it.",
         "basic/patterns/cancellation#behavior-requirements"),
    Rule("tools.x-mcp-header", "error", "A tool whose `x-mcp-header` annotations break the rules (the client "
         "must drop it).", "basic/transports/streamable-http#custom-headers-from-tool-parameters", ONLY_MODERN),
    Rule("tools.name", "warning", "A tool name outside 1–128 characters of `[A-Za-z0-9_.-]` (it then needs "
         "base64 in `Mcp-Name`).", "server/tools#tool-names"),
    Rule("tools.structured-content", "error", "`structuredContent` missing or not matching the tool's "
         "`outputSchema`.", "server/tools#output-schema"),
    Rule("cache.fields", "error", "`ttlMs` / `cacheScope` missing or ill-formed on a cacheable result.",
         "server/utilities/caching#cacheable-results", ONLY_MODERN),
    Rule("sse.framing", "error", "An SSE stream that breaks framing: an event that is not one JSON-RPC "
         "message, an unknown event type, an unterminated event or an oversized line.",
         "basic/transports/streamable-http#sending-messages-to-the-server"),
    Rule("request-state.plaintext", "warning", "A `requestState` that decodes to readable JSON (the spec calls "
         "it opaque; readable state can be tampered with).", "basic/patterns/mrtr#request-state", ONLY_MODERN),
    Rule("result.is-error", "error", "A tools/call result whose `isError` is not a boolean (a string \"true\" "
         "is no boolean: a client that tests it as one reads the failure as a success).", "server/tools#tool-result"),
    Rule("http.result-status", "error", "A JSON-RPC result that came with an HTTP error status (4xx or 5xx): the "
         "status says the request failed, the body that it succeeded.",
         "basic/transports/streamable-http#sending-messages-to-the-server"),
    Rule("lint.internal", "error", "The lint itself failed on a frame (a bug in the console: please report "
         "it with the frame).", "basic/index"),
]

RULES: dict[str, Rule] = {rule.id: rule for rule in _ROWS}


def rules_for(version: str) -> dict[str, Rule]:
    """The rules that hold for a protocol revision (every rule for one the table does not know)."""
    if version not in BOTH:
        return dict(RULES)
    return {rid: rule for rid, rule in RULES.items() if rule.holds_for(version)}
