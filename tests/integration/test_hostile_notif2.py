"""A burst of progress at full rate from the hostile target: every frame is recorded once, byte-exact, in the
entry's frames (JSON twin and HTML), the store gets them in batches (far fewer writes than frames), and the
websocket feed ends on exactly the last value."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from websockets.asyncio.client import connect

from tests.hostile.tools_notif2 import burst_frame
from tests.integration.conftest import WS_DEADLINE_S, ws_collect

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from tests.integration.conftest import Console, Served

BURST = 3000
SHOWN = re.compile(r'<span class="progress-text">(\d+) / (\d+)</span>')


async def test_a_burst_of_progress_is_recorded_frame_by_frame_byte_exact_in_few_store_writes(
        make_console: Callable[..., Console], hostile_http: Callable[..., str],
        serve: Callable[..., Awaitable[Served]]) -> None:
    console = make_console()
    served = await serve(console)
    s = await console.connect(kind="http", url=hostile_http("notif2"), headers="")
    assert s["status"] == "connected", s["status_message"]
    sid = str(s["id"])
    store = console.manager.store
    timeline = console.manager.sessions[sid].timeline
    ws = await connect(served.ws_url(sid), additional_headers=served.headers(), open_timeout=WS_DEADLINE_S,
                       **served.via)
    try:
        await ws.send(json.dumps({"last_seq": (await console.session(sid))["seq"]}))
        appends_before, batches_before = store.appends, timeline.frame_batches  # type: ignore[attr-defined]
        reply = await console.call_tool(sid, "progress_burst", count=str(BURST))
        assert reply["status"] == "complete", reply
        appends = store.appends - appends_before  # type: ignore[attr-defined]
        batches = timeline.frame_batches - batches_before
        op_key = reply["operation"]["key"]
        finished = f'id="e-{op_key}" class="entry op is-complete"'
        fragments = await ws_collect(ws, lambda got: finished in got[-1], "the finished operation")
    finally:
        await ws.close()

    key = reply["operation"]["rounds"][0]["key"]
    wire = (await console.entry(sid, key))["wire"]
    progress = [w for w in wire if w["direction"] == "in" and "notifications/progress" in w["raw"]]
    token = json.loads(progress[0]["raw"])["params"]["progressToken"]
    expected = [burst_frame(token, i, BURST) for i in range(1, BURST + 1)]
    assert len(progress) == BURST
    assert [w["raw"] for w in progress] == expected, "a frame's text differs from what crossed the wire"
    seqs = [w["seq"] for w in wire]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), "frames are numbered once each, in order"
    # Batched: the frames of a loop turn are one store write, not one each (the notify, the answer and the
    # exchange's own events add a few).
    assert batches < BURST / 10, f"{batches} frame batches for {BURST} frames"
    assert appends < BURST / 10, f"{appends} store writes for {BURST} frames"

    page = await console.http.get(f"/sessions/{sid}/entries/{key}")
    assert page.status_code == 200
    # The HTML shows each frame in its own box (pretty-printed, invisible characters made visible).
    shown = set(re.findall(r'<div class="frame dir-in" id="w(\d+)">', page.text))
    assert {str(w["seq"]) for w in progress} <= shown, "a recorded frame is missing from the entry's HTML"
    assert page.text.count("&lt;b&gt;step&lt;/b&gt; ") == BURST, "the page shows markup from the server as text"

    box = f'id="progress-entry-{op_key}"'
    values = [tuple(map(int, m.groups())) for f in fragments if box in f and (m := SHOWN.search(f))]
    assert values and values[-1] == (BURST, BURST), f"the feed's last progress is {values[-1:]}"
