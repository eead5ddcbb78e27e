"""The console as an MCP Apps host, through its relay route, against the demo's counter app (a real demo server
process over real HTTP; app/demo/app_view.py): the view read as an operation, the bridge in order, a view's call
forwarded and linked, a model-only tool refused, links and messages, CSP violations, a viewer's replay, and the
sandbox proxy served only under its own host name. The browser side is tests/browser/test_apps.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.integration.conftest import JSON, Console, eventually

pytestmark = pytest.mark.processes


class Relay:
    """One tab's relay for one app: what static/apps.js posts, as a script."""

    def __init__(self, console: Console, sid: str, app: str, frame: str = "tab1",
                 headers: dict[str, str] | None = None) -> None:
        self.console, self.sid, self.app, self.frame = console, sid, app, frame
        self.headers = headers
        self.next_id = 0

    async def step(self, step: str, **body: Any) -> dict[str, Any]:
        response = await self.console.http.post(
            f"/sessions/{self.sid}/apps/{self.app}/bridge", headers=self.headers,
            content=json.dumps({"frame": self.frame, "step": step, **body}))
        assert response.status_code == 200, response.text
        answer: dict[str, Any] = response.json()
        return answer

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        return await self.step("message", message={"jsonrpc": "2.0", "id": self.next_id, "method": method,
                                                   "params": params or {}})

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return await self.step("message", message={"jsonrpc": "2.0", "method": method, "params": params or {}})

    async def collected(self, wanted: Any, what: str) -> dict[str, Any]:
        async def check() -> dict[str, Any] | None:
            for message in (await self.step("collect"))["post"]:
                if wanted(message):
                    found: dict[str, Any] = message
                    return found
            return None
        return await eventually(check, 30, what)

    async def initialized(self) -> list[dict[str, Any]]:
        ready = await self.step("ready")
        assert ready["post"][0]["method"] == "ui/notifications/sandbox-resource-ready"
        init = await self.request("ui/initialize", {"protocolVersion": "2026-01-26", "appCapabilities": {
            "availableDisplayModes": ["inline", "fullscreen"]}})
        assert init["post"][0]["result"]["protocolVersion"] == "2026-01-26"
        posts: list[dict[str, Any]] = (await self.notify("ui/notifications/initialized"))["post"]
        posts += (await self.step("collect"))["post"] if not posts else []
        return posts


async def _app(console: Console, sid: str) -> str:
    response = await console.http.post(f"/sessions/{sid}/tools/call", headers=JSON,
                                       data={"tool": "counter_app", "mode": "json", "json": json.dumps({"start": 5})})
    assert response.status_code == 200, response.text
    session = console.manager.get(sid)
    assert session.state.apps, "a call of a tool with a view opens an app"
    return str(next(reversed(session.state.apps)))


def _entries(console: Console, sid: str, method: str) -> list[dict[str, Any]]:
    session = console.manager.get(sid)
    return [e for e in session.state.entries.values() if e.get("method") == method]


async def test_the_view_is_read_once_and_gets_its_policy_then_the_input_and_the_result(
        console: Console, demo_url: str) -> None:
    sid = await console.connected_http(demo_url)
    app = await _app(console, sid)
    relay = Relay(console, sid, app)
    ready = await relay.step("ready")
    params = ready["post"][0]["params"]
    assert "html" not in params and params["src"].startswith("/sandbox/view/")
    assert "connect-src https://api.example.com;" in params["csp"]
    assert params["sandbox"] == "allow-scripts allow-forms"  # never allow-same-origin: the view's origin is opaque
    # The view is served once, on the sandbox origin only, with its policy as a header its HTML cannot undo.
    sandbox = console.app.state.web.guard.sandbox_host
    assert (await console.http.get(params["src"])).status_code == 404  # not on the console's origin
    served = await console.http.get(params["src"], headers={"Host": sandbox})
    assert served.status_code == 200 and "<h1>Demo counter" in served.text
    policy = served.headers["content-security-policy"]
    assert policy.startswith(params["csp"]) and "form-action 'none'" in policy and "frame-ancestors http://" in policy
    assert "securitypolicyviolation" in served.text  # the reporter, after <head>
    assert (await console.http.get(params["src"], headers={"Host": sandbox})).status_code == 404  # used once
    assert len(_entries(console, sid, "resources/read")) == 1
    await Relay(console, sid, app, frame="tab2").step("ready")  # another tab: the view is not read again
    assert len(_entries(console, sid, "resources/read")) == 1
    posts = (await Relay(console, sid, app, frame="tab3").initialized())
    assert [p["method"] for p in posts] == ["ui/notifications/tool-input", "ui/notifications/tool-result"]
    assert posts[0]["params"] == {"arguments": {"start": 5}}
    assert posts[1]["params"]["structuredContent"]["count"] >= 5
    for method in ("app: ui/notifications/sandbox-proxy-ready", "app: ui/notifications/sandbox-resource-ready",
                   "app: ui/initialize", "app: ui/notifications/initialized", "app: ui/notifications/tool-input",
                   "app: ui/notifications/tool-result"):
        assert _entries(console, sid, method), method
    init = _entries(console, sid, "app: ui/initialize")[0]
    assert init["status"] == "ok"
    detail = await console.entry(sid, init["key"])
    assert [f["direction"] for f in detail["wire"]] == ["in", "out"]  # the view's request, then the answer


async def test_a_views_tool_call_is_an_operation_linked_both_ways_and_a_model_only_tool_is_refused(
        console: Console, demo_url: str) -> None:
    sid = await console.connected_http(demo_url)
    app = await _app(console, sid)
    relay = Relay(console, sid, app)
    await relay.initialized()
    answer = await relay.request("tools/call", {"name": "bump_counter", "arguments": {"by": 2}})
    assert answer["post"] == []  # the reply comes when the operation ends
    reply = await relay.collected(lambda m: m.get("id") == relay.next_id, "the forwarded call's reply")
    assert reply["result"]["structuredContent"]["count"] >= 7
    bridge = _entries(console, sid, "app: tools/call")[0]
    assert bridge["status"] == "ok" and str(bridge["via"]).startswith("op-")
    session = console.manager.get(sid)
    op = session.state.entries[bridge["via"]]
    assert op["method"] == "tools/call" and op["name"] == "bump_counter" and op["via"] == bridge["key"]
    assert len(session.state.apps) == 1  # the view's own call opens no app
    assert relay.frame not in bridge["key"]  # a frame id is what lets a tab speak for its view: never on a page
    refused = await relay.request("tools/call", {"name": "reset_counter", "arguments": {}})
    assert refused["post"][0]["error"]["code"] == -32602
    assert [e for e in _entries(console, sid, "tools/call") if e.get("name") == "reset_counter"] == []
    assert session.state.findings.get("apps.hidden-tool") == 1


async def test_a_message_and_a_link_are_the_persons_and_a_csp_violation_is_a_finding(
        console: Console, demo_url: str) -> None:
    sid = await console.connected_http(demo_url)
    app = await _app(console, sid)
    relay = Relay(console, sid, app)
    await relay.initialized()
    said = await relay.request("ui/message", {"role": "user", "content": [{"type": "text", "text": "<b>hi</b>"}]})
    assert said["post"][0]["result"] == {}
    session = console.manager.get(sid)
    assert session.state.apps[app]["said"][-1]["what"] == "message"
    await relay.request("ui/open-link", {"url": "https://modelcontextprotocol.io/"})
    links = session.state.apps[app]["links"]
    assert links[-1]["status"] == "offered"
    viewer = await console.http.post(f"/sessions/{sid}/apps/{app}/links/{links[-1]['id']}", data={"opened": "1"})
    assert viewer.status_code == 204
    reply = await relay.collected(lambda m: m.get("id") == relay.next_id, "the link's answer")
    assert reply["result"] == {}
    assert session.state.apps[app]["links"][-1]["status"] == "opened"
    again = await console.http.post(f"/sessions/{sid}/apps/{app}/links/{links[-1]['id']}", data={"opened": "1"})
    assert again.status_code == 409
    # The console's own host name on another port would get the owner's cookie: refused, never offered.
    host = console.manager.settings.public_host
    for spelling in (f"http://{host}:9301/x", f"http://{host.upper()}.:1/", f"http://{host}:1\\@example.com/"):
        await relay.request("ui/open-link", {"url": spelling})
        own = await relay.collected(lambda m: m.get("id") == relay.next_id, "the refusal")
        assert "the console refused the link" in own["error"]["message"], (spelling, own)
    assert len(session.state.apps[app]["links"]) == 1
    await relay.step("csp", report={"blockedURI": "https://undeclared.example.com/data.json",
                                    "violatedDirective": "connect-src"})
    assert session.state.findings.get("apps.csp-violation") == 1
    mode = await relay.request("ui/request-display-mode", {"mode": "pip"})  # not in its availableDisplayModes
    assert mode["post"][0]["result"] == {"mode": "inline"}
    assert session.state.findings.get("apps.display-mode") == 1


async def test_a_viewer_link_replays_the_view_and_records_nothing(console: Console, demo_url: str) -> None:
    sid = await console.connected_http(demo_url)
    app = await _app(console, sid)
    await Relay(console, sid, app).initialized()  # the owner's tab read the view
    made = await console.http.post(f"/sessions/{sid}/links", data={"role": "viewer"}, headers=JSON)
    assert made.status_code == 200, made.text
    token = str(made.json()["url"]).rsplit("/s/", 1)[1]
    landing = await console.http.get(f"/s/{token}", headers={"Authorization": ""})
    cookie = landing.cookies.get("mcp_console_link") or next(
        (c.value for c in console.http.cookies.jar if c.name == "mcp_console_link"), None)
    assert cookie, landing.status_code
    session = console.manager.get(sid)
    seq = session.timeline.seq
    as_viewer = {"Authorization": "", "Cookie": f"mcp_console_link={cookie}"}
    viewer = Relay(console, sid, app, frame="viewer", headers=as_viewer)
    posts = await viewer.initialized()
    assert [p["method"] for p in posts] == ["ui/notifications/tool-input", "ui/notifications/tool-result"]
    refused = await viewer.request("tools/call", {"name": "bump_counter", "arguments": {}})
    assert refused["post"] == []
    answer = await viewer.collected(lambda m: m.get("id") == viewer.next_id, "the viewer's refusal")
    assert answer["error"]["code"] == -32000
    assert session.timeline.seq == seq, "a viewer's view writes nothing to the session"
    denied = await console.http.post(f"/sessions/{sid}/apps/{app}/links/x", data={"opened": "1"},
                                     headers={"Authorization": "", "Cookie": f"mcp_console_link={cookie}"})
    assert denied.status_code == 403
    # The owner's frame is the owner's: a link holder who knows its id cannot drive it, nor collect its messages.
    for step in ({"step": "message", "message": {"jsonrpc": "2.0", "id": "v1", "method": "tools/call",
                                                 "params": {"name": "bump_counter", "arguments": {}}}},
                 {"step": "collect"}, {"step": "context", "change": {"theme": "dark"}}):
        hijack = await console.http.post(f"/sessions/{sid}/apps/{app}/bridge", headers=as_viewer,
                                         content=json.dumps({"frame": "tab1", **step}))
        assert hijack.status_code == 404, hijack.text
    assert session.timeline.seq == seq
    # Nor can a viewer write findings: a replay records nothing.
    await viewer.step("csp", report={"blockedURI": "https://x.example", "violatedDirective": "connect-src"})
    await viewer.step("message", message="not json-rpc")
    assert session.timeline.seq == seq and "apps.csp-violation" not in session.state.findings


async def test_the_sandbox_proxy_is_served_only_under_its_own_host_name(console: Console) -> None:
    sandbox = console.app.state.web.guard.sandbox_host
    assert sandbox and sandbox.endswith("-sandbox.localhost") and sandbox != console.public_host
    own = await console.http.get("/sandbox/proxy?host=x", headers={"Host": sandbox})
    assert own.status_code == 200
    assert own.headers["content-security-policy"].startswith("frame-ancestors ")
    assert console.public_host in own.headers["content-security-policy"]
    assert "set-cookie" not in own.headers
    refused = await console.http.get("/sandbox/proxy?host=x")  # the console's own origin
    assert refused.status_code == 404
    page = await console.http.get("/")
    assert f"frame-src 'self' http://{sandbox}:*" in page.headers["content-security-policy"]


async def test_reading_a_view_from_the_resources_says_what_it_is_and_folds_the_html(
        console: Console, demo_url: str) -> None:
    sid = await console.connected_http(demo_url)
    read = await console.http.post(f"/sessions/{sid}/resources/read", data={"uri": "ui://demo/counter.html"})
    assert read.status_code == 200, read.text
    assert "An MCP App view" in read.text and "<details><summary>The HTML as sent</summary>" in read.text


async def _link_headers(console: Console, sid: str, role: str) -> dict[str, str]:
    made = await console.http.post(f"/sessions/{sid}/links", data={"role": role}, headers=JSON)
    assert made.status_code == 200, made.text
    token = str(made.json()["url"]).rsplit("/s/", 1)[1]
    await console.http.get(f"/s/{token}", headers={"Authorization": ""})
    cookie = next(c.value for c in console.http.cookies.jar if c.name == "mcp_console_link")
    console.http.cookies.clear()
    return {"Authorization": "", "Cookie": f"mcp_console_link={cookie}"}


async def test_what_reaches_a_link_holders_view_has_the_targets_secret_values_masked(
        console: Console, demo_url: str) -> None:
    secret = "supersecretvalue123"
    sid = await console.connected_http(demo_url, headers=f"X-Api-Key: {secret}")
    assert console.manager.get(sid).timeline.scrubber is not None, "the header was taken as a secret"
    app = await _app(console, sid)
    operator = Relay(console, sid, app, frame="op-tab", headers=await _link_headers(console, sid, "operator"))
    await operator.initialized()
    await operator.request("tools/call", {"name": "echo", "arguments": {"text": secret}})
    reply = await operator.collected(lambda m: m.get("id") == operator.next_id, "the operator's echo")
    assert secret not in json.dumps(reply), json.dumps(reply)[-600:]
    assert "••••••" in json.dumps(reply, ensure_ascii=False)
    owner = Relay(console, sid, app, frame="owner-tab")
    await owner.initialized()
    await owner.request("tools/call", {"name": "echo", "arguments": {"text": secret}})
    mine = await owner.collected(lambda m: m.get("id") == owner.next_id, "the owner's echo")
    assert secret in json.dumps(mine)  # the owner sees what the server said


async def test_a_view_that_floods_link_offers_and_never_collects_is_bounded(console: Console, demo_url: str) -> None:
    sid = await console.connected_http(demo_url)
    app = await _app(console, sid)
    relay = Relay(console, sid, app)
    await relay.initialized()
    for _ in range(12):
        await relay.request("ui/open-link", {"url": "https://example.com/"})
    session = console.manager.get(sid)
    offered = [x for x in session.state.apps[app]["links"] if x["status"] == "offered"]
    assert len(offered) == 5
    frame = session.apps.frames[app]["tab1"]
    assert frame.outbox.qsize() == 7  # the refusals, waiting for a collect
    for _ in range(300):
        await relay.request("ping")
        session.apps._act(app, frame, [*frame.host.answered("x", {}, None)], None)
    assert frame.outbox.qsize() <= 200


async def test_a_page_load_runs_no_view_every_app_is_closed_until_the_person_opens_it(
        console: Console, demo_url: str) -> None:
    sid = await console.connected_http(demo_url)
    app = await _app(console, sid)
    page = await console.http.get(f"/sessions/{sid}")
    assert f'id="app-{app}"' in page.text
    article = page.text.split(f'id="app-{app}"', 1)[1].split("</article>", 1)[0]
    assert '<details class="app-body">' in article  # not open: static/apps.js mounts only open apps
