"""Attacks on the websocket feed by a tab that holds a valid credential and sends what no tab of ours sends.

Each test is one hole that was open.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from websockets.asyncio.client import connect

from tests.integration.conftest import WS_DEADLINE_S, fragment_seq, ws_collect

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from tests.integration.conftest import Console, Served

    Serve = Callable[..., Awaitable[Served]]


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
        reply = await console.call_tool(sid, "echo", text="after an infinite hello")
        assert reply["status"] == "complete"
        frames = await ws_collect(ws, lambda fs: any("after an infinite hello" in f for f in fs),
                                  "the call made after the hello")
    assert all(fragment_seq(f) > 0 for f in frames)
