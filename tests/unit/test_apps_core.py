"""MCP Apps core without I/O: reading a tool's view, the CSP built from `_meta.ui.csp`, and the bridge machine's order
and refusals (app/mcp/apps.py, app/mcp/app_host.py)."""

from __future__ import annotations

import base64
from typing import Any

from app.mcp.app_host import AppHost, Apply, Finding, Forward, OfferLink, Post, Said
from app.mcp.apps import DEFAULT_CSP, MIME, app_may_call, build_csp, declaring, read_view, ui_resource_uri
from app.mcp.lint.checks import tool_problems

TOOL = {"name": "show", "_meta": {"ui": {"resourceUri": "ui://show/view.html"}}}
APP_ONLY = {"name": "refresh", "_meta": {"ui": {"visibility": ["app"]}}}
MODEL_ONLY = {"name": "secret", "_meta": {"ui": {"visibility": ["model"]}}}
TOOLS = {t["name"]: t for t in (TOOL, APP_ONLY, MODEL_ONLY)}


def _host(**kw: Any) -> AppHost:
    return AppHost(tool=TOOL, tools=TOOLS.get, **kw)


def _posts(actions: list[Any]) -> list[dict[str, Any]]:
    return [a.message for a in actions if isinstance(a, Post)]


def _rules(actions: list[Any]) -> list[str]:
    return [a.rule for a in actions if isinstance(a, Finding)]


def _initialized(host: AppHost) -> list[Any]:
    host.from_view({"jsonrpc": "2.0", "id": 1, "method": "ui/initialize",
                    "params": {"appCapabilities": {"availableDisplayModes": ["inline", "fullscreen"]}}})
    return host.from_view({"jsonrpc": "2.0", "method": "ui/notifications/initialized"})


def test_a_tools_view_is_read_from_meta_ui_or_the_older_flat_key() -> None:
    assert ui_resource_uri(TOOL) == "ui://show/view.html"
    assert ui_resource_uri({"name": "x", "_meta": {"ui/resourceUri": "ui://old"}}) == "ui://old"
    assert ui_resource_uri({"name": "x"}) is None
    assert ui_resource_uri({"name": "x", "_meta": {"ui": {"resourceUri": 3}}}) is None


def test_visibility_defaults_to_both_and_an_app_only_tool_is_callable_by_apps_only() -> None:
    assert app_may_call(TOOL) and app_may_call(APP_ONLY)
    assert not app_may_call(MODEL_ONLY)
    assert app_may_call({"name": "x", "_meta": {"ui": {"visibility": "app"}}})  # malformed: the default


def test_a_view_that_declares_no_csp_gets_the_specs_default_policy() -> None:
    csp = build_csp(None)
    assert csp.policy == DEFAULT_CSP
    assert csp.refused == []


def test_declared_domains_go_to_their_directives_and_nothing_else_is_allowed() -> None:
    csp = build_csp({"connectDomains": ["https://api.example.com"], "resourceDomains": ["https://*.cdn.example"],
                     "frameDomains": ["https://player.example"]})
    directives = dict(part.strip().split(" ", 1) for part in csp.policy.split(";"))
    assert directives["connect-src"] == "https://api.example.com"
    assert "https://*.cdn.example" in directives["script-src"] and "https://*.cdn.example" in directives["img-src"]
    assert directives["frame-src"] == "https://player.example"
    assert directives["base-uri"] == "'self'" and directives["object-src"] == "'none'"
    assert "api.example.com" not in directives["script-src"]


def test_a_declared_value_that_would_add_a_directive_or_a_keyword_is_refused_and_said() -> None:
    csp = build_csp({"connectDomains": ["https://ok.example", "https://x.example; script-src *", "'unsafe-eval'",
                                        "*", "javascript:alert(1)"], "bogus": ["https://a"]})
    assert "script-src *" not in csp.policy and "'unsafe-eval'" not in csp.policy
    assert "connect-src https://ok.example;" in csp.policy
    assert len(csp.refused) == 5
    assert csp.granted == {"connectDomains": ["https://ok.example"]}


def test_the_view_is_read_from_text_or_base64_blob_and_a_wrong_mime_type_is_a_problem() -> None:
    html = "<!doctype html><html><head></head><body>hi</body></html>"
    view = read_view("ui://v", {"contents": [{"uri": "ui://v", "mimeType": MIME, "text": html}]})
    assert view.html == html and view.problems == []
    blob = base64.b64encode(html.encode()).decode()
    view = read_view("ui://v", {"contents": [{"uri": "ui://v", "mimeType": "text/html", "blob": blob}]})
    assert view.html == html
    assert any("mimeType" in p for p in view.problems)
    assert read_view("ui://v", {"contents": []}).html is None


def test_the_views_meta_ui_is_taken_from_the_content_item_else_from_its_listing() -> None:
    item = {"uri": "ui://v", "mimeType": MIME, "text": "<p>x</p>",
            "_meta": {"ui": {"csp": {"connectDomains": ["https://api.example"]}, "permissions": {"camera": {}},
                             "prefersBorder": True}}}
    view = read_view("ui://v", {"contents": [item]})
    assert "connect-src https://api.example" in view.csp.policy
    assert view.allow == "camera" and view.prefers_border is True
    listed = {"uri": "ui://v", "_meta": {"ui": {"permissions": {"clipboardWrite": {}, "teleport": {}}}}}
    view = read_view("ui://v", {"contents": [{"uri": "ui://v", "mimeType": MIME, "text": "x"}]}, listed)
    assert view.allow == "clipboard-write"
    assert any("teleport" in p for p in view.problems)


def test_declaring_adds_the_extension_beside_the_others() -> None:
    caps = declaring({"roots": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}})
    assert set(caps["extensions"]) == {"io.modelcontextprotocol/tasks", "io.modelcontextprotocol/ui"}
    assert caps["extensions"]["io.modelcontextprotocol/ui"] == {"mimeTypes": [MIME]}


def test_a_tool_whose_resource_uri_is_not_ui_is_a_lint_finding() -> None:
    assert [r for r, _ in tool_problems({"name": "t", "_meta": {"ui": {"resourceUri": "https://x/view"}}})] \
        == ["apps.resource-uri"]
    assert tool_problems(TOOL) == []


def test_the_host_sends_nothing_before_initialized_then_the_input_once_then_the_result() -> None:
    host = _host()
    assert host.call_started({"q": 1}) == []
    assert host.call_ended({"content": [{"type": "text", "text": "done"}]}, None) == []
    answer = host.from_view({"jsonrpc": "2.0", "id": 1, "method": "ui/initialize", "params": {}})
    result = _posts(answer)[0]["result"]
    assert result["protocolVersion"] == "2026-01-26"
    assert result["hostContext"]["toolInfo"]["tool"]["name"] == "show"
    posts = _posts(host.from_view({"jsonrpc": "2.0", "method": "ui/notifications/initialized"}))
    assert [p["method"] for p in posts] == ["ui/notifications/tool-input", "ui/notifications/tool-result"]
    assert posts[0]["params"] == {"arguments": {"q": 1}}
    assert host.call_ended({"content": []}, None) == []  # once only


def test_a_result_that_comes_after_initialized_is_posted_when_it_comes() -> None:
    host = _host()
    host.call_started({})
    assert [p["method"] for p in _posts(_initialized(host))] == ["ui/notifications/tool-input"]
    posts = _posts(host.call_ended(None, None))
    assert posts == [{"jsonrpc": "2.0", "method": "ui/notifications/tool-cancelled",
                      "params": {"reason": "the call was cancelled"}}]


def test_a_failed_call_reaches_the_view_as_an_error_result() -> None:
    host = _host()
    host.call_started({})
    _initialized(host)
    posts = _posts(host.call_ended(None, {"message": "boom"}))
    assert posts[0]["params"]["isError"] is True and "boom" in posts[0]["params"]["content"][0]["text"]


def test_a_views_tools_call_is_forwarded_only_for_tools_visible_to_apps() -> None:
    host = _host()
    _initialized(host)
    forwarded = host.from_view({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "refresh"}})
    assert forwarded == [Forward(7, "tools/call", {"name": "refresh"})]
    refused = host.from_view({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "secret"}})
    assert _rules(refused) == ["apps.hidden-tool"]
    assert _posts(refused)[0]["error"]["code"] == -32602
    unknown = host.from_view({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "nope"}})
    assert "error" in _posts(unknown)[0] and not any(isinstance(a, Forward) for a in unknown)
    assert host.answered(7, {"content": []}, None) == [Post({"jsonrpc": "2.0", "id": 7, "result": {"content": []}})]


def test_a_message_before_initialize_is_a_finding_and_so_is_an_unknown_method() -> None:
    host = _host()
    assert _rules(host.from_view({"jsonrpc": "2.0", "id": 1, "method": "ping"})) == ["apps.bridge-order"]
    _initialized(host)
    actions = host.from_view({"jsonrpc": "2.0", "id": 2, "method": "ui/teleport", "params": {}})
    assert _rules(actions) == ["apps.bridge-message"]
    assert _posts(actions)[0]["error"]["code"] == -32601
    assert _rules(host.from_view("not json-rpc")) == ["apps.bridge-message"]


def test_open_link_is_offered_to_the_person_and_only_for_http_urls() -> None:
    host = _host()
    _initialized(host)
    assert host.from_view({"jsonrpc": "2.0", "id": 3, "method": "ui/open-link",
                           "params": {"url": "https://example.com"}}) == [OfferLink(3, "https://example.com")]
    bad = host.from_view({"jsonrpc": "2.0", "id": 4, "method": "ui/open-link", "params": {"url": "javascript:x"}})
    assert "error" in _posts(bad)[0]
    assert _posts(host.link_answered(3, False))[0]["error"]["code"] == -32000
    assert _posts(host.link_answered(3, True))[0]["result"] == {}


def test_display_mode_is_granted_only_when_the_view_listed_it() -> None:
    host = _host()
    _initialized(host)
    granted = host.from_view({"jsonrpc": "2.0", "id": 5, "method": "ui/request-display-mode",
                              "params": {"mode": "fullscreen"}})
    assert Apply(display_mode="fullscreen") in granted
    assert _posts(granted)[0]["result"] == {"mode": "fullscreen"}
    kept = host.from_view({"jsonrpc": "2.0", "id": 6, "method": "ui/request-display-mode", "params": {"mode": "pip"}})
    assert _rules(kept) == ["apps.display-mode"]
    assert _posts(kept)[0]["result"] == {"mode": "fullscreen"}


def test_messages_and_context_updates_are_said_and_answered() -> None:
    host = _host()
    _initialized(host)
    said = host.from_view({"jsonrpc": "2.0", "id": 10, "method": "ui/message",
                           "params": {"role": "user", "content": {"type": "text", "text": "hi"}}})
    assert isinstance(said[0], Said) and said[0].what == "message"
    assert _posts(said)[0]["result"] == {}
    change = host.context_changed({"theme": "dark"})
    assert _posts(change) == [{"jsonrpc": "2.0", "method": "ui/notifications/host-context-changed",
                               "params": {"theme": "dark"}}]
    assert host.host_context()["theme"] == "dark"


def test_teardown_is_a_request_sent_once_and_nothing_follows_it() -> None:
    host = _host()
    host.call_started({})
    _initialized(host)
    posts = _posts(host.teardown("closed"))
    assert posts[0]["method"] == "ui/resource-teardown" and "id" in posts[0]
    assert host.teardown("again") == []
    assert host.call_ended({"content": []}, None) == []
