"""The live lint in the console: findings are timeline events, on their entry, counted, filtered, exported, kept."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tests.integration.conftest import JSON, create_link, eventually

if TYPE_CHECKING:
    from collections.abc import Awaitable

    import httpx

    from tests.integration.conftest import Console, ConsoleRestarts

    ShareTab = Callable[..., Awaitable[httpx.AsyncClient]]


async def entry_of(console: Console, sid: str, op_id: str) -> dict[str, Any]:
    data = await console.session(sid)
    return next(e for e in data["timeline"] if e.get("op") == op_id)


async def call_and_wait_for_findings(console: Console, sid: str, tool: str) -> dict[str, Any]:
    result = await console.call_tool(sid, tool)
    op_id = result["operation"]["op"]

    async def found() -> dict[str, Any] | None:
        entry = await entry_of(console, sid, op_id)
        return entry if entry.get("finding_count") else None

    return dict(await eventually(found, what=f"findings on the {tool} entry"))


async def test_a_result_without_result_type_is_a_finding_on_its_entry_counted_and_filterable(
        console: Console, hostile_http: Callable[..., str]) -> None:
    sid = str((await console.connect(kind="http", url=hostile_http("lint")))["id"])
    clean = await console.call_tool(sid, "lint_fine")
    entry = await call_and_wait_for_findings(console, sid, "no_result_type")
    rules = {f["rule"] for f in entry["findings"]}
    assert "result.type-missing" in rules
    finding = next(f for f in entry["findings"] if f["rule"] == "result.type-missing")
    assert finding["severity"] == "error" and finding["spec_url"].startswith("https://")
    assert finding["frame_seq"] > 0
    data = await console.session(sid)
    assert data["findings"].get("result.type-missing", 0) >= 1
    clean_entry = await entry_of(console, sid, clean["operation"]["op"])
    assert not clean_entry.get("finding_count")
    filtered = (await console.http.get(f"/sessions/{sid}.json?findings=1", headers=JSON)).json()
    assert filtered["timeline"] and all(e.get("finding_count") for e in filtered["timeline"])
    page = await console.http.get(f"/sessions/{sid}?findings=1")
    assert "result.type-missing" in page.text and "Lint:" in page.text


async def test_findings_travel_in_the_har_and_to_a_viewer_link(
        console: Console, hostile_http: Callable[..., str], share_tab: ShareTab) -> None:
    sid = str((await console.connect(kind="http", url=hostile_http("lint")))["id"])
    await call_and_wait_for_findings(console, sid, "unknown_result_type")
    har = (await console.http.get(f"/sessions/{sid}/export.har")).json()
    found = [f["rule"] for e in har["log"]["entries"] for f in e["_mcp"].get("findings", [])]
    assert "result.type-unknown" in found
    tab = await share_tab(console, await create_link(console, sid, "viewer"))
    seen = (await tab.get(f"/sessions/{sid}.json")).json()
    assert seen["findings"].get("result.type-unknown", 0) >= 1


async def test_findings_survive_a_restart_as_events(restarts: ConsoleRestarts,
                                                     hostile_http: Callable[..., str]) -> None:
    console = restarts.first()
    sid = str((await console.connect(kind="http", url=hostile_http("lint")))["id"])
    before = await call_and_wait_for_findings(console, sid, "no_result_type")
    counts = (await console.session(sid))["findings"]
    again = await restarts.restart(console)
    after = await entry_of(again, sid, str(before["op"]))
    assert [f["rule"] for f in after["findings"]] == [f["rule"] for f in before["findings"]]
    assert (await again.session(sid))["findings"] == counts and "result.type-missing" in counts


async def test_the_demo_server_gives_no_findings_in_the_console(console: Console, demo_url: str) -> None:
    sid = str((await console.connect(kind="http", url=demo_url))["id"])
    await console.call_tool(sid, "echo", text="hi")
    await console.call_tool(sid, "add", a="2", b="3")
    assert (await console.session(sid))["findings"] == {}
