"""A progress flood over a real websocket: every notification is received, the feed carries a bounded number of
coalesced updates, and the last one carries exactly the last value the server sent."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from websockets.asyncio.client import connect

from tests.integration.conftest import WS_DEADLINE_S, ws_collect

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from tests.integration.conftest import Console, Served

BURST = 3000
# The console flushes progress at most once per 50 ms window per request, plus the final value: a burst the demo
# sends in about a second comes as a few dozen updates. 150 leaves room for a slow, shared machine (7.5 s).
MOST_UPDATES = 150
SHOWN = re.compile(r'<span class="progress-text">(\d+) / (\d+)</span>')


async def test_a_burst_of_progress_reaches_the_feed_as_few_updates_ending_at_exactly_the_last_value(
        console: Console, demo_url: str, serve: Callable[..., Awaitable[Served]]) -> None:
    served = await serve(console)
    s = await console.connect(kind="http", url=demo_url, headers="")
    assert s["status"] == "connected", s["status_message"]
    sid = str(s["id"])
    ws = await connect(served.ws_url(sid), additional_headers=served.headers(), open_timeout=WS_DEADLINE_S,
                       **served.via)
    try:
        await ws.send(json.dumps({"last_seq": (await console.session(sid))["seq"]}))
        reply = await console.call_tool(sid, "progress_fast", count=str(BURST))
        assert reply["status"] == "complete", reply
        target = reply["operation"]["key"]
        box = f'id="progress-entry-{target}"'
        finished = f'id="e-{target}" class="entry op is-complete"'
        frames = await ws_collect(ws, lambda got: finished in got[-1], "the finished operation")
    finally:
        await ws.close()
    updates = [f for f in frames if box in f]
    assert 1 <= len(updates) <= MOST_UPDATES, f"{len(updates)} progress fragments for {BURST} notifications"
    values = [tuple(map(int, m.groups())) for f in updates if (m := SHOWN.search(f))]
    assert values[-1] == (BURST, BURST), f"the feed's last progress is {values[-1]}, not the server's last"
    assert values == sorted(values), "coalesced progress went backwards"
    assert f"{BURST} notifications" in updates[-1], "the count of received notifications is exact"
