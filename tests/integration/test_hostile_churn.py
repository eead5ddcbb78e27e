"""A flood of list-change notifications: the console re-lists a few times, not once per notification."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.hostile.tools_churn import CHANGES
from tests.integration.conftest import JSON, eventually

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.integration.conftest import Console

# One re-list may be under way when the flood starts and one more is owed for what came during it; a few more
# are allowed for notices that arrive while a re-list is running. Thousands are not.
MAX_RELISTS = 10


async def test_two_thousand_list_changed_notifications_cost_a_few_relists_not_two_thousand(
        console: Console, hostile_http: Callable[..., str]) -> None:
    s = await console.connect(kind="http", url=hostile_http("churn"))
    assert s["status"] == "connected", s["status_message"]
    sid = s["id"]
    response = await console.http.post(f"/sessions/{sid}/subscriptions", data={"toolsListChanged": "1"},
                                       headers=JSON)
    assert response.status_code == 200, response.text
    sub = str(response.json()["sub"])

    async def flood_seen() -> bool:  # the log line comes after the last notification, on the same stream
        [found] = [x for x in (await console.session(sid))["subscriptions"] if x["sub"] == sub]
        return any(n["method"] == "notifications/message" for n in found["notifications"])

    await eventually(flood_seen, what="the log line after the flood")

    async def settled() -> int | None:
        first = await console.call_tool(sid, "lists_served")
        again = await console.call_tool(sid, "lists_served")
        a, b = (int(r["result"]["content"][0]["text"]) for r in (first, again))
        return a if a == b else None

    served = await eventually(settled)
    assert served <= MAX_RELISTS + 1, f"{CHANGES} list_changed notifications made the console re-list {served} times"
    assert (await console.session(sid))["status"] == "connected"
