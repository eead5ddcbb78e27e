"""subscriptions/listen against the real demo server, over Streamable HTTP and over stdio.

Every change is caused by calling a demo tool (add_tool, touch_resource) and observed through the
session JSON; every wait is a poll with a deadline.
"""

from __future__ import annotations

import re
import uuid
from typing import TYPE_CHECKING, Any

import pytest

from tests.integration.conftest import JSON, eventually

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from tests.integration.conftest import Console, DemoProcess

SUBSCRIPTION_KEY = "io.modelcontextprotocol/subscriptionId"
COUNTER = "demo://counter"
EVERYTHING = {"toolsListChanged": "1", "promptsListChanged": "1", "resourcesListChanged": "1",
              "resourceSubscriptions": COUNTER}
RECONNECT_DEADLINE_S = 30.0


@pytest.fixture(params=["http", "stdio"])
async def session_id(request: pytest.FixtureRequest, console: Console, demo_url: str) -> str:
    """A session connected to the demo server: the shared HTTP process, or its own stdio process."""
    form = {"kind": "http", "url": demo_url, "headers": ""} if request.param == "http" else {"kind": "demo-stdio"}
    s = await console.connect(**form)
    assert s["status"] == "connected", s["status_message"]
    return str(s["id"])


async def listen(console: Console, session_id: str, **form: str) -> str:
    response = await console.http.post(f"/sessions/{session_id}/subscriptions", data=form, headers=JSON)
    assert response.status_code == 200, response.text
    return str(response.json()["sub"])


async def snapshot(console: Console, session_id: str, sub: str) -> dict[str, Any]:
    s = await console.session(session_id)
    [found] = [x for x in s["subscriptions"] if x["sub"] == sub]
    return found


async def until_sub(console: Console, session_id: str, sub: str, check: Callable[[dict[str, Any]], bool],
                    what: str, timeout: float = 20.0) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        found = await snapshot(console, session_id, sub)
        return found if check(found) else None

    result: dict[str, Any] = await eventually(probe, timeout, f"subscription {sub}: {what}")
    return result


async def active(console: Console, session_id: str, sub: str) -> dict[str, Any]:
    return await until_sub(console, session_id, sub, lambda x: x["state"] == "active", "to be acknowledged")


def methods(sub: dict[str, Any]) -> list[str]:
    return [n["method"] for n in sub["notifications"]]


def unique_tool() -> str:
    return f"runtime_{uuid.uuid4().hex[:10]}"


async def call(console: Console, session_id: str, tool: str, **args: str) -> dict[str, Any]:
    reply = await console.call_tool(session_id, tool, **args)
    assert reply["status"] == "complete", reply
    return reply


# --- acknowledgement ------------------------------------------------------------------------------


async def test_a_listen_is_acknowledged_with_everything_asked_and_the_listen_request_id(
        console: Console, session_id: str) -> None:
    sub = await listen(console, session_id, **EVERYTHING)
    snap = await active(console, session_id, sub)
    assert snap["requested"] == {"toolsListChanged": True, "promptsListChanged": True,
                                 "resourcesListChanged": True, "resourceSubscriptions": [COUNTER]}
    assert snap["acknowledged"] == snap["requested"], "the demo supports every kind it was asked for"
    assert snap["dropped"] == {}
    assert isinstance(snap["ack_ms"], float) and snap["ack_ms"] > 0
    assert snap["problems"] == [] and snap["reconnects"] == 0
    listen_entry = (await console.entry(session_id, snap["exchange"]))["entry"]
    assert listen_entry["method"] == "subscriptions/listen"
    assert snap["subscription_id"] == listen_entry["id"]
    assert isinstance(snap["subscription_id"], int)


# --- what arrives on a listen -------------------------------------------------------------------------


async def test_add_tool_sends_tools_list_changed_and_auto_refresh_adds_the_tool_to_the_list(
        console: Console, session_id: str) -> None:
    sub = await listen(console, session_id, toolsListChanged="1")
    snap = await active(console, session_id, sub)
    name = unique_tool()
    await call(console, session_id, "add_tool", name=name)

    got = await until_sub(console, session_id, sub, lambda x: "notifications/tools/list_changed" in methods(x),
                          "tools/list_changed")
    [note] = got["notifications"]
    assert note["params"]["_meta"][SUBSCRIPTION_KEY] == snap["subscription_id"]

    async def listed() -> bool:
        return name in {t["name"] for t in (await console.session(session_id))["lists"]["tools"]}

    await eventually(listed, what=f"the tools list to gain {name}")


async def test_touching_a_resource_that_was_read_sends_resources_updated_and_rereads_it(
        console: Console, session_id: str) -> None:
    sub = await listen(console, session_id, resourceSubscriptions=COUNTER)
    snap = await active(console, session_id, sub)
    first = await console.http.post(f"/sessions/{session_id}/resources/read", data={"uri": COUNTER}, headers=JSON)
    assert first.status_code == 200 and first.json()["status"] == "complete", first.text
    first_op = first.json()["operation"]["op"]

    touched = await call(console, session_id, "touch_resource", uri=COUNTER)
    counter = re.search(r"counter=(\d+)", touched["result"]["content"][0]["text"])
    assert counter, touched["result"]
    value = counter.group(1)

    got = await until_sub(console, session_id, sub, lambda x: "notifications/resources/updated" in methods(x),
                          "resources/updated")
    [note] = got["notifications"]
    assert note["params"]["uri"] == COUNTER
    assert note["params"]["_meta"][SUBSCRIPTION_KEY] == snap["subscription_id"]

    async def reread() -> dict[str, Any] | None:
        ops = (await console.session(session_id))["operations"]
        return next((op for op in ops if op["method"] == "resources/read" and op["op"] != first_op
                     and op["status"] == "complete"), None)

    op = await eventually(reread, what="a new resources/read operation after the update")
    assert op["name"] == COUNTER
    [content] = op["final"]["result"]["contents"]
    assert content["uri"] == COUNTER and content["text"] == value


async def test_two_subscriptions_at_once_each_get_only_what_they_asked_for(
        console: Console, session_id: str) -> None:
    tools_sub = await listen(console, session_id, toolsListChanged="1")
    counter_sub = await listen(console, session_id, resourceSubscriptions=COUNTER)
    tools_id = (await active(console, session_id, tools_sub))["subscription_id"]
    counter_id = (await active(console, session_id, counter_sub))["subscription_id"]
    assert tools_id != counter_id

    await call(console, session_id, "add_tool", name=unique_tool())
    await until_sub(console, session_id, tools_sub, lambda x: x["total"] >= 1, "the first tools/list_changed")
    await call(console, session_id, "touch_resource", uri=COUNTER)
    # Each stream is in order: once this arrives, anything published to it earlier has arrived too.
    counter = await until_sub(console, session_id, counter_sub, lambda x: x["total"] >= 1, "resources/updated")
    await call(console, session_id, "add_tool", name=unique_tool())
    tools = await until_sub(console, session_id, tools_sub, lambda x: x["total"] >= 2, "the second list_changed")

    assert methods(tools) == ["notifications/tools/list_changed"] * 2
    assert methods(counter) == ["notifications/resources/updated"]
    assert {n["params"]["_meta"][SUBSCRIPTION_KEY] for n in tools["notifications"]} == {tools_id}
    assert {n["params"]["_meta"][SUBSCRIPTION_KEY] for n in counter["notifications"]} == {counter_id}
    assert tools["problems"] == [] and counter["problems"] == []


# --- stopping ----------------------------------------------------------------------------------------------


async def test_stopping_a_subscription_sets_it_stopped_and_ends_its_listen_request(
        console: Console, session_id: str) -> None:
    sub = await listen(console, session_id, toolsListChanged="1")
    snap = await active(console, session_id, sub)
    response = await console.http.post(f"/sessions/{session_id}/subscriptions/{sub}/stop", headers=JSON)
    assert response.status_code == 200, response.text
    assert response.json()["state"] == "stopped"

    async def ended() -> dict[str, Any] | None:
        entry = (await console.entry(session_id, snap["exchange"]))["entry"]
        return entry if entry["status"] != "pending" else None

    entry = await eventually(ended, what="the listen request to end")
    assert entry["status"] == "cancelled" and entry["cancelled_by"] == "owner"
    after = await snapshot(console, session_id, sub)
    assert after["state"] == "stopped" and after["reconnects"] == 0


# --- a server that goes away and comes back --------------------------------------------------------------


async def test_a_listen_is_opened_again_when_the_http_server_process_is_killed_and_restarted(
        console: Console, demo_process: Callable[[], Awaitable[DemoProcess]]) -> None:
    demo = await demo_process()
    s = await console.connect(kind="http", url=demo.url, headers="")
    assert s["status"] == "connected", s["status_message"]
    sid = s["id"]
    sub = await listen(console, sid, toolsListChanged="1")
    before = await active(console, sid, sub)

    demo.kill()  # a crash: the stream drops without a final response, which calls for a re-listen
    await until_sub(console, sid, sub, lambda x: x["state"] != "active", "to notice the drop")
    await demo.start()  # the same port again
    again = await until_sub(console, sid, sub, lambda x: x["state"] == "active" and x["reconnects"] >= 1,
                            "to be active again after the restart", RECONNECT_DEADLINE_S)
    assert again["subscription_id"] != before["subscription_id"], "a re-listen is a new request with a new id"
    assert any("stream dropped" in p for p in again["problems"]), again["problems"]

    # It really listens to the new process.
    await call(console, sid, "add_tool", name=unique_tool())
    await until_sub(console, sid, sub, lambda x: x["total"] >= 1, "tools/list_changed from the new process")
