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
# The tasks extension lives beside the specification, not in it: its rules' links go up to it.
TASKS_SPEC = "../../extensions/tasks/overview"
APPS_SPEC = "../../extensions/apps/overview"  # MCP Apps (io.modelcontextprotocol/ui), beside the spec as tasks are
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
    Rule("oauth.challenge-missing", "warning", "A 401 without a `WWW-Authenticate: Bearer` challenge naming "
         "`resource_metadata` (the client has to probe the well-known URLs).",
         "basic/authorization/authorization-server-discovery"),
    Rule("oauth.cors-expose", "note", "A 401 whose `WWW-Authenticate` a browser-based client cannot read: no "
         "`Access-Control-Expose-Headers: WWW-Authenticate` (a server-side client, as the console, is not affected).",
         "basic/authorization/security-considerations"),
    Rule("oauth.prm-missing", "warning", "No protected resource metadata (RFC 9728) at the challenge's URL or "
         "either well-known URL: only 2025-03-26 servers are read without it.",
         "basic/authorization/authorization-server-discovery"),
    Rule("oauth.prm-invalid", "error", "A protected resource metadata URL answered 200 without a JSON document "
         "naming `authorization_servers`.",
         "basic/authorization/authorization-server-discovery"),
    Rule("oauth.resource-mismatch", "error", "The protected resource metadata's `resource` does not name the "
         "server being connected to (RFC 9728 §3.3): no authorization request is made.",
         "basic/authorization#resource-parameter-implementation"),
    Rule("oauth.server-metadata-missing", "error", "No authorization server metadata (RFC 8414 or OpenID Connect "
         "discovery) at any URL the specification orders, or one without an authorization or token endpoint.",
         "basic/authorization/authorization-server-discovery"),
    Rule("oauth.default-endpoints", "warning", "Neither protected resource metadata nor authorization server "
         "metadata: the 2025-03-26 default endpoints (/authorize, /token, /register on the server's origin) are "
         "used.", "basic/authorization/authorization-server-discovery"),
    Rule("oauth.metadata-issuer", "error", "Authorization server metadata whose `issuer` is not byte-identical to "
         "the issuer its URL was built from.",
         "basic/authorization/authorization-server-discovery"),
    Rule("oauth.pkce-unsupported", "error", "Authorization server metadata without `S256` in "
         "`code_challenge_methods_supported`: the client must refuse to go on.",
         "basic/authorization/security-considerations"),
    Rule("oauth.insecure-endpoint", "error", "An authorization server endpoint that is not https (loopback hosts "
         "excepted, for development).",
         "basic/authorization/security-considerations"),
    Rule("oauth.loopback-http", "note", "An authorization server endpoint on plain http at a loopback host: "
         "allowed for development only.",
         "basic/authorization/security-considerations"),
    Rule("oauth.no-client", "error", "No way to get a client id: no pre-registered client, no client id metadata "
         "document support, no registration endpoint.",
         "basic/authorization/client-registration"),
    Rule("oauth.registration-refused", "error", "Dynamic client registration refused.",
         "basic/authorization/client-registration"),
    Rule("oauth.state-mismatch", "error", "An authorization response whose `state` is not the one sent.",
         "basic/authorization/security-considerations"),
    Rule("oauth.iss-mismatch", "error", "An authorization response whose `iss` (RFC 9207) is not the issuer the "
         "request went to, compared exactly.",
         "basic/authorization#authorization-response-validation"),
    Rule("oauth.iss-missing", "error", "An authorization response without `iss` from a server that advertises "
         "`authorization_response_iss_parameter_supported`.",
         "basic/authorization#authorization-response-validation"),
    Rule("oauth.authorization-refused", "warning", "The authorization server answered the authorization request "
         "with an error (or with neither a code nor an error).",
         "basic/authorization"),
    Rule("oauth.token-refused", "error", "The token endpoint refused the authorization code or the client.",
         "basic/authorization"),
    Rule("oauth.token-invalid", "error", "A token answer whose `token_type` is not Bearer.",
         "basic/authorization"),
    Rule("oauth.step-up-limit", "warning", "The server asked for more scope (403 `insufficient_scope`) more often "
         "than the retry limit allows.",
         "basic/authorization#error-handling"),
    Rule("tasks.wire-fields", "error", "A task (io.modelcontextprotocol/tasks) without its id, with a status the "
         "extension does not define, with the other revision's field names (ttl, pollInterval), or input_required "
         "without inputRequests.", TASKS_SPEC),
    Rule("tasks.status-graph", "error", "A task status change the status graph does not allow.", TASKS_SPEC),
    Rule("tasks.terminal-changed", "error", "A task that was completed, failed or cancelled changed its status "
         "(a terminal status never changes).", TASKS_SPEC),
    Rule("tasks.update-refused", "warning", "tasks/update with the answers to a task's input requests was refused.",
         TASKS_SPEC),
    Rule("apps.resource-uri", "error", "A tool's _meta.ui.resourceUri is not a ui:// URI.", APPS_SPEC),
    Rule("apps.resource-content", "error", "An MCP App's UI resource is not one text/html;profile=mcp-app "
         "document (wrong mimeType, both or neither of text and blob, a blob that is not base64 UTF-8).",
         APPS_SPEC),
    Rule("apps.csp-domain", "warning", "An MCP App's _meta.ui.csp or permissions hold a value the host refused "
         "(not an http(s)/ws(s) origin, not a key of the spec): the view runs without it.", APPS_SPEC),
    Rule("apps.bridge-order", "error", "A view sent a bridge message before ui/initialize, or after ui/initialize "
         "something other than ui/notifications/initialized first.", APPS_SPEC),
    Rule("apps.bridge-message", "error", "A view sent a postMessage that is not a JSON-RPC 2.0 message, or a method "
         "the bridge does not define.", APPS_SPEC),
    Rule("apps.hidden-tool", "error", "A view called a tool whose _meta.ui.visibility leaves out \"app\" (the "
         "host refused it).", APPS_SPEC),
    Rule("apps.display-mode", "warning", "A view asked for a display mode it did not list in "
         "appCapabilities.availableDisplayModes.", APPS_SPEC),
    Rule("apps.csp-violation", "warning", "A view did something its Content-Security-Policy refused (reported by "
         "its frame): it needs a domain its resource does not declare.", APPS_SPEC),
    Rule("lint.internal", "error", "The lint itself failed on a frame (a bug in the console: please report "
         "it with the frame).", "basic/index"),
]

RULES: dict[str, Rule] = {rule.id: rule for rule in _ROWS}


def rules_for(version: str) -> dict[str, Rule]:
    """The rules that hold for a protocol revision (every rule for one the table does not know)."""
    if version not in BOTH:
        return dict(RULES)
    return {rid: rule for rid, rule in RULES.items() if rule.holds_for(version)}
