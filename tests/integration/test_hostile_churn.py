"""A flood of change notifications: the console re-lists and re-reads a few times, not once per notification."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.hostile.tools_churn import CHANGES, URI
from tests.integration.conftest import JSON, eventually

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.integration.conftest import Console

# Notices that arrive while a re-list runs owe one more, so a long flood costs one re-list per re-list's time,
# a few dozen here. One per notice is thousands.
MAX_RELISTS = CHANGES // 20


async def test_two_thousand_change_notifications_cost_a_few_relists_and_rereads_not_two_thousand_each(
        console: Console, hostile_http: Callable[..., str]) -> None:
    s = await console.connect(kind="http", url=hostile_http("churn"))
    assert s["status"] == "connected", s["status_message"]
    sid = s["id"]
    read = await console.http.post(f"/sessions/{sid}/resources/read", data={"uri": URI}, headers=JSON)
    assert read.status_code == 200, read.text  # on screen now: an update re-reads it
    response = await console.http.post(f"/sessions/{sid}/subscriptions",
                                       data={"toolsListChanged": "1", "resourceSubscriptions": URI}, headers=JSON)
    assert response.status_code == 200, response.text
    sub = str(response.json()["sub"])

    async def flood_seen() -> bool:  # the log line comes after the last notification, on the same stream
        [found] = [x for x in (await console.session(sid))["subscriptions"] if x["sub"] == sub]
        return any(n["method"] == "notifications/message" for n in found["notifications"])

    await eventually(flood_seen, what="the log line after the flood")

    async def settled(tool: str) -> int | None:
        first = await console.call_tool(sid, tool)
        again = await console.call_tool(sid, tool)
        a, b = (int(r["result"]["content"][0]["text"]) for r in (first, again))
        return a if a == b else None

    lists = await eventually(lambda: settled("lists_served"), what="the re-lists to settle")
    assert lists <= MAX_RELISTS, f"{CHANGES} list_changed notifications made the console re-list {lists} times"
    reads = await eventually(lambda: settled("reads_served"), what="the re-reads to settle")
    assert reads <= MAX_RELISTS, f"{CHANGES} resources/updated notifications made {reads} re-reads"
    busiest = int((await console.call_tool(sid, "most_at_once"))["result"]["content"][0]["text"])
    assert busiest <= 1, f"the console sent {busiest} re-lists or re-reads of one kind at once"
    assert (await console.session(sid))["status"] == "connected"
