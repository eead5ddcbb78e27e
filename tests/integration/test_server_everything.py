"""The real @modelcontextprotocol/server-everything (a 2025-11-25 server from npm) over stdio and Streamable HTTP.

Auto probes server/discover, the server refuses it, and the console falls back to initialize; then the
lists, a plain tool call and a tool that reports progress work as on any legacy server.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

import pytest

from tests.everything.fixtures import ROOT, everything_argv, everything_sse_url, everything_url, needs_everything
from tests.integration.conftest import JSON, Console, eventually

__all__ = ["everything_sse_url", "everything_url"]

pytestmark = [needs_everything, pytest.mark.slow]
STARTUP_S = 60.0  # node starting on a busy 2-core machine


@pytest.fixture(params=["stdio", "http"])
async def session(request: pytest.FixtureRequest, console: Console) -> dict[str, Any]:
    if request.param == "stdio":
        form = {"kind": "stdio", "command": shlex.join(everything_argv("stdio")), "cwd": str(ROOT)}
    else:
        form = {"kind": "http", "url": request.getfixturevalue("everything_url"), "headers": ""}
    s = await console.connect(timeout=STARTUP_S, **form)
    assert s["status"] == "connected", s["status_message"]
    return s


def tool_names(s: dict[str, Any]) -> set[str]:
    return {t["name"] for t in s["lists"]["tools"]}


async def test_auto_falls_back_to_2025_11_25_on_server_everything_and_says_why(session: dict[str, Any]) -> None:
    era = session["era"]
    assert era["era"] == "legacy" and era["chosen"] == "auto", era
    assert era["protocol_version"] == "2025-11-25", era
    assert era["probe"] and "server/discover not served" in era["reason"], era
    assert "everything" in session["server"]["info"]["name"], session["server"]["info"]


async def test_server_everything_lists_its_tools_and_echo_answers(console: Console, session: dict[str, Any]) -> None:
    assert {"echo", "get-sum", "trigger-long-running-operation"} <= tool_names(session), tool_names(session)
    reply = await console.call_tool(session["id"], "echo", message="hello from the console")
    assert "hello from the console" in str(reply), reply


async def test_a_long_running_server_everything_tool_shows_its_progress(
        console: Console, session: dict[str, Any]) -> None:
    sid = session["id"]
    await console.call_tool(sid, "trigger-long-running-operation", duration="1", steps="3")

    async def done() -> dict[str, Any] | None:
        ops = (await console.session(sid))["operations"]
        op = next((o for o in ops if o["name"] == "trigger-long-running-operation"), None)
        return op if op and op["status"] not in ("running", "pending") else None

    op = await eventually(done, what="the long-running operation to finish")
    assert op["status"] == "complete", op
    [entry] = [e for e in (await console.session(sid))["timeline"] if e["key"] == op["key"]]
    assert (entry["progress"]["progress"], entry["progress"]["total"]) == (3, 3), entry["progress"]


async def test_a_resource_list_change_from_server_everything_refreshes_the_resources_list(
        console: Console, session: dict[str, Any]) -> None:
    # gzip-file-as-resource registers a new session resource, so the server says resources/list_changed
    # unprompted: on stdio as a line outside any response, on HTTP on the standalone GET stream.
    sid = session["id"]
    await console.call_tool(sid, "gzip-file-as-resource", name="hello.txt.gz", data="data:text/plain;base64,aGVsbG8=",
                            outputType="resourceLink")

    async def listed() -> list[str] | None:
        names = [r.get("name") for r in (await console.session(sid))["lists"]["resources"]]
        return names if "hello.txt.gz" in names else None

    await eventually(listed, what="the new resource to appear in the refreshed resources list")
    s = await console.session(sid)
    assert not [n for n in s["timeline"] if n.get("kind") == "notice" and "list_changed" in str(n.get("raw"))]


async def test_setting_the_log_level_in_a_legacy_session_sends_logging_set_level(
        console: Console, session: dict[str, Any]) -> None:
    sid = session["id"]
    response = await console.http.post(f"/sessions/{sid}/request-settings", headers=JSON,
                                       data={"log_level": "debug", "progress": "on", "auto_refresh": "on"})
    assert response.status_code == 200, response.text

    async def answered() -> dict[str, Any] | None:
        entries = [e for e in (await console.session(sid))["timeline"]
                   if e.get("kind") == "exchange" and e.get("method") == "logging/setLevel"]
        return entries[0] if entries and entries[0]["status"] != "pending" else None

    entry = await eventually(answered, what="logging/setLevel to be sent and answered")
    assert entry["status"] == "ok", entry
    sent = await console.entry(sid, entry["key"])
    [out] = [w for w in sent["wire"] if w["direction"] == "out"]
    assert json.loads(out["raw"])["params"]["level"] == "debug", out


async def test_a_legacy_resource_subscription_subscribes_gets_updates_and_unsubscribes_on_stop(
        console: Console, session: dict[str, Any]) -> None:
    sid, uri = session["id"], "demo://resource/dynamic/text/1"
    response = await console.http.post(f"/sessions/{sid}/subscriptions", headers=JSON,
                                       data={"resourceSubscriptions": uri})
    assert response.status_code == 200, response.text
    sub = response.json()["sub"]

    async def active() -> dict[str, Any] | None:
        found = next(x for x in (await console.session(sid))["subscriptions"] if x["sub"] == sub)
        return found if found["state"] == "active" else None

    found = await eventually(active, what="resources/subscribe to be granted")
    assert found["acknowledged"] == {"resourceSubscriptions": [uri]}, found
    # The server sends updates for subscribed URIs once this is on (at once, then every 5 s).
    await console.call_tool(sid, "toggle-subscriber-updates")

    async def updated() -> dict[str, Any] | None:
        found = next(x for x in (await console.session(sid))["subscriptions"] if x["sub"] == sub)
        return found if found["total"] >= 1 else None

    found = await eventually(updated, what="notifications/resources/updated to reach the subscription")
    assert found["notifications"][0]["method"] == "notifications/resources/updated", found
    assert found["notifications"][0]["params"]["uri"] == uri
    response = await console.http.post(f"/sessions/{sid}/subscriptions/{sub}/stop", headers=JSON)
    assert response.status_code == 200, response.text
    methods = [e.get("method") for e in (await console.session(sid))["timeline"] if e.get("kind") == "exchange"]
    assert "resources/subscribe" in methods and "resources/unsubscribe" in methods, methods


async def test_the_2024_11_05_http_sse_transport_is_an_explicit_choice_that_connects_and_calls_echo(
        console: Console, everything_sse_url: str) -> None:
    s = await console.connect(timeout=STARTUP_S, kind="http", url=everything_sse_url, headers="", era="sse-2024")
    assert s["status"] == "connected", s["status_message"]
    assert s["era"]["era"] == "legacy" and s["era"]["chosen"] == "sse-2024", s["era"]
    assert not [e for e in s["timeline"] if e.get("method") == "server/discover"], "an explicit choice: no probe"
    assert "echo" in tool_names(s)
    reply = await console.call_tool(s["id"], "echo", message="over the old transport")
    assert "over the old transport" in str(reply), reply
