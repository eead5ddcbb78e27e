"""Attacks on the websocket feed and what it pushes: a tab holding a valid credential that sends what no tab of ours
sends (a hello the page never writes, a catch-up from 0 over and over), and a hostile server whose text lands in
pushed fragments. Each test is one hole that was open."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from websockets.asyncio.client import connect

from tests.integration.conftest import (
    JSON,
    LINK_COOKIE,
    WS_DEADLINE_S,
    create_link,
    eventually,
    fragment_seq,
    is_reset,
    link_token,
    ws_closed,
    ws_collect,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from tests.integration.conftest import Console, Seen, Served, TinyHttp

    Serve = Callable[..., Awaitable[Served]]


async def subscribed(console: Console, session_id: str) -> None:
    """The socket said its hello and is on the hub: what is published from now on reaches it."""

    async def check() -> bool:
        return bool(console.manager.hub.subscribers(session_id))

    await eventually(check, WS_DEADLINE_S, "the socket to subscribe")


async def pushed_after(console: Console, serve: Serve, session_id: str, act: Callable[[], Awaitable[Any]],
                       until: Callable[[list[str]], bool], what: str) -> tuple[Any, list[str]]:
    """An owner's socket caught up to now; then `act` runs, and the frames pushed until `until` holds come back
    with what `act` returned."""
    served = await serve(console)
    async with connect(served.ws_url(session_id), additional_headers=served.headers(), open_timeout=WS_DEADLINE_S,
                       **served.via) as ws:
        await ws.send(json.dumps({"last_seq": (await console.session(session_id))["seq"]}))
        await subscribed(console, session_id)
        done = await act()
        return done, await ws_collect(ws, until, what)


def obeyed(html: str, in_attributes: bool = True) -> bool:
    """Whether a bidi override or a zero-width space stands in the markup as it came (in attribute values too,
    unless `in_attributes` is False: a data attribute may hold the value exactly, where nothing renders it)."""
    text = html if in_attributes else re.sub(r'"[^"]*"', "", html)
    return "\u202e" in text or "\u200b" in text


async def demo_session(console: Console, demo_url: str) -> str:
    s = await console.connect(kind="http", url=demo_url)
    assert s["status"] == "connected", s["status_message"]
    return str(s["id"])


async def test_a_hello_whose_last_seq_is_infinity_is_taken_as_no_last_seq_and_the_feed_goes_on(
        console: Console, demo_url: str, serve: Serve) -> None:
    """Python's JSON reads `Infinity` as a float no int can hold: the hello raised OverflowError out of the
    websocket route (a 1011 close and a traceback in the console's log for every such socket)."""
    sid = await demo_session(console, demo_url)
    served = await serve(console)
    async with connect(served.ws_url(sid), additional_headers=served.headers(), open_timeout=WS_DEADLINE_S,
                       **served.via) as ws:
        await ws.send('{"last_seq": Infinity}')
        await subscribed(console, sid)
        reply = await console.call_tool(sid, "echo", text="after an infinite hello")
        assert reply["status"] == "complete"
        frames = await ws_collect(ws, lambda fs: any("after an infinite hello" in f for f in fs),
                                  "the call made after the hello")
    assert all(fragment_seq(f) > 0 for f in frames)


async def test_a_viewer_socket_asking_for_megabytes_of_catch_up_is_told_to_reload_instead(
        console: Console, demo_url: str, serve: Serve) -> None:
    """A hello's last_seq is the holder's to choose: `0` asked the hub to render the whole ring again (a socket's
    own copy, masked) and queue it, ~110 KB per call with large results: 1.4 s of the event loop and 33 MB per
    socket after 300 calls, twenty sockets per link. Past a budget of catch-up bytes the socket gets the reset
    a tab older than the ring gets (it reloads its bounded page) and nothing else."""
    sid = await demo_session(console, demo_url)
    link = await create_link(console, sid, "viewer")
    bulky = "x" * 40_000
    for n in range(60):
        assert (await console.call_tool(sid, "echo", text=f"call {n} {bulky}"))["status"] == "complete"
    current = (await console.session(sid))["seq"]
    served = await serve(console)
    async with connect(served.ws_url(sid), additional_headers=served.headers(f"{LINK_COOKIE}={link_token(link)}"),
                       open_timeout=WS_DEADLINE_S, **served.via) as ws:
        await ws.send(json.dumps({"last_seq": 0}))
        frames, _ = await ws_closed(ws)
    [reset] = frames
    assert is_reset(reset) and fragment_seq(reset) == current
    assert console.manager.hub.subscribers(sid) == 0


async def test_a_hello_nested_two_thousand_deep_is_taken_as_no_last_seq_and_the_feed_goes_on(
        console: Console, demo_url: str, serve: Serve) -> None:
    """The hello was parsed whatever its size: 4 KB of `[` raised RecursionError out of the websocket route."""
    sid = await demo_session(console, demo_url)
    served = await serve(console)
    async with connect(served.ws_url(sid), additional_headers=served.headers(), open_timeout=WS_DEADLINE_S,
                       **served.via) as ws:
        await ws.send('{"last_seq": ' + "[" * 2_000 + "]" * 2_000 + "}")
        await subscribed(console, sid)
        reply = await console.call_tool(sid, "echo", text="after a deep hello")
        assert reply["status"] == "complete"
        await ws_collect(ws, lambda fs: any("after a deep hello" in f for f in fs), "the call made after the hello")


async def test_a_second_viewer_socket_catching_up_on_the_same_events_renders_none_of_their_fragments_again(
        console: Console, demo_url: str, serve: Serve) -> None:
    """Each socket's catch-up rendered the ring afresh for it (masked): a link's twenty sockets reconnecting in a
    loop cost the event loop twenty renderings of up to the catch-up budget each round. The renderings of one
    catch-up now serve the next, and the fragments are the same."""
    sid = await demo_session(console, demo_url)
    link = await create_link(console, sid, "viewer")
    for n in range(10):
        assert (await console.call_tool(sid, "echo", text=f"call {n}"))["status"] == "complete"
    end = (await console.session(sid))["seq"]
    hub = console.manager.hub
    renders: list[int] = []
    render_masked = hub._render_masked

    def counted(event: Any) -> Any:
        fragment = render_masked(event)
        if fragment:  # one that renders to nothing (an early return) costs nothing, and is not kept
            renders.append(event.seq)
        return fragment

    hub._render_masked = counted
    served = await serve(console)

    async def catch_up() -> list[str]:
        async with connect(served.ws_url(sid), open_timeout=WS_DEADLINE_S, **served.via,
                           additional_headers=served.headers(f"{LINK_COOKIE}={link_token(link)}")) as ws:
            await ws.send(json.dumps({"last_seq": 0}))
            return await ws_collect(ws, lambda fs: fragment_seq(fs[-1]) >= end, "the catch-up")

    first = await catch_up()
    assert renders, "the first catch-up rendered nothing: the test no longer measures it"
    rendered_first = len(renders)
    renders.clear()
    second = await catch_up()
    assert renders == [], f"the second catch-up rendered {len(renders)} events again (the first {rendered_first})"
    assert second == first
    assert any("call 9" in f for f in second)


async def test_a_servers_error_in_the_session_status_shows_its_bidi_and_zero_width_characters_page_and_push(
        console: Console, tiny_http: TinyHttp, serve: Serve) -> None:
    """The status line ("server/discover failed: …") carries the server's error message, and it was the one place
    the session head put server text as it came: `evil‮exe.pdf` read reversed, in the page and in every push."""
    evil = "invoice\u202efdp.exe\u200b"

    def handler(seen: Seen) -> tuple[int, str, bytes]:
        body = seen.json()
        if body.get("method") == "server/discover":
            return 200, "application/json", tiny_http.error(body["id"], -32000, evil)
        return 202, "application/json", b""

    url = tiny_http.start(handler).url
    s = await console.connect(kind="http", url=url, era="modern")
    assert s["status"] == "failed" and evil in s["status_message"]
    page = (await console.http.get(f"/sessions/{s['id']}")).text
    reconnected, frames = await pushed_after(
        console, serve, s["id"], lambda: console.http.post(f"/sessions/{s['id']}/reconnect", headers=JSON),
        lambda fs: any("status-message" in f and "failed" in f for f in fs),
        "the status pushed after the reconnect failed again")
    assert reconnected.status_code < 400
    assert not any(obeyed(html) for html in (page, *frames))
    assert "⟨U+202E⟩" in page and any("⟨U+202E⟩" in f for f in frames)


async def test_a_servers_error_answer_to_a_call_shows_its_bidi_and_zero_width_characters_in_the_card_and_push(
        console: Console, tiny_http: TinyHttp, serve: Serve) -> None:
    """A JSON-RPC error's message became the operation's message and the result's error, both put on the card as
    they came: the call's answer and the card pushed to every tab read `invoice‮fdp.exe` reversed."""
    evil = "invoice\u202efdp.exe\u200b"
    tools = {"resultType": "complete", "tools": [{"name": "t", "inputSchema": {"type": "object"}}]}

    def handler(seen: Seen) -> tuple[int, str, bytes]:
        body = seen.json()
        method = body.get("method")
        if method == "server/discover":
            return 200, "application/json", tiny_http.result(body["id"], tiny_http.discover(capabilities={"tools": {}}))
        if method == "tools/list":
            return 200, "application/json", tiny_http.result(body["id"], tools)
        if method == "tools/call":
            return 200, "application/json", tiny_http.error(body["id"], -32000, evil)
        return 202, "application/json", b""

    s = await console.connect(kind="http", url=tiny_http.start(handler).url, era="modern")
    assert s["status"] == "connected", s["status_message"]
    called, frames = await pushed_after(
        console, serve, s["id"], lambda: console.http.post(f"/sessions/{s['id']}/tools/call", data={"tool": "t"}),
        lambda fs: any("op-card-" in f and "fdp" in f for f in fs), "the failed operation's card")
    answer = called.text
    assert not any(obeyed(html) for html in (answer, *frames))
    assert "⟨U+202E⟩" in answer and any("⟨U+202E⟩" in f for f in frames)


async def test_a_servers_log_line_and_argument_labels_show_their_bidi_and_zero_width_characters(
        console: Console, tiny_http: TinyHttp, serve: Serve) -> None:
    """A log notification's level, logger and data (pushed live to every tab) and an argument's title and
    description (the form a person types into) were put on the page as they came: a label could read
    `Password for moc.elgoog` reversed."""
    evil = "invoice\u202efdp.exe\u200b"
    schema = {"type": "object", "properties": {"p": {"type": "string", "title": evil, "description": evil}}}
    tools = {"resultType": "complete", "tools": [{"name": "t", "inputSchema": schema}]}
    log = {"jsonrpc": "2.0", "method": "notifications/message",
           "params": {"level": "info", "logger": evil, "data": f"said {evil}"}}

    def handler(seen: Seen) -> tuple[int, str, bytes]:
        body = seen.json()
        method = body.get("method")
        if method == "server/discover":
            caps = {"tools": {}, "logging": {}}
            return 200, "application/json", tiny_http.result(body["id"], tiny_http.discover(capabilities=caps))
        if method == "tools/list":
            return 200, "application/json", tiny_http.result(body["id"], tools)
        if method == "tools/call":
            done = tiny_http.result(body["id"], {"resultType": "complete", "content": []}).decode()
            return 200, "text/event-stream", f"data: {json.dumps(log)}\n\ndata: {done}\n\n".encode()
        return 202, "application/json", b""

    s = await console.connect(kind="http", url=tiny_http.start(handler).url, era="modern")
    assert s["status"] == "connected", s["status_message"]
    form = (await console.http.get(f"/sessions/{s['id']}/tools/form", params={"name": "t"})).text
    _, frames = await pushed_after(console, serve, s["id"], lambda: console.call_tool(s["id"], "t"),
                                   lambda fs: any("said" in f and "logs-" in f for f in fs), "the log line")
    assert not any(obeyed(html, in_attributes=False) for html in (form, *frames))
    assert form.count("⟨U+202E⟩") >= 2 and any(f.count("⟨U+202E⟩") >= 2 for f in frames)
