"""The surface over time with real parts: the console against the demo server process (its add_tool adds a tool at
run time), the surface page and its JSON twin, and `mcp-console snapshot` / `diff` as a CI job runs them, against
session files, snapshot files and live servers (the demo over HTTP, and a stdio server whose schema differs by a
flag: tests/integration/surface_server.py)."""

from __future__ import annotations

import json
import sys
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.integration.conftest import create_link, eventually, mcp_console

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    import httpx

    from tests.integration.conftest import Console

    ShareTab = Callable[..., Awaitable[httpx.AsyncClient]]

SURFACE_V1 = f"{sys.executable} -m tests.integration.surface_server"
SURFACE_V2 = f"{SURFACE_V1} --v2"


async def _demo_session(console: Console, demo_url: str) -> str:
    return await console.connected_http(demo_url)


async def _surface(console: Console, sid: str) -> dict[str, Any]:
    found: dict[str, Any] = (await console.session(sid))["surface"]
    return found


async def _add_tool_and_refresh(console: Console, sid: str) -> str:
    name = f"surf_{uuid.uuid4().hex[:8]}"
    reply = await console.call_tool(sid, "add_tool", name=name)
    assert reply["ok"] is True, reply
    refreshed = await console.http.post(f"/sessions/{sid}/refresh", headers={"Accept": "application/json"})
    assert refreshed.status_code == 200, refreshed.text
    return name


async def _reconnect(console: Console, sid: str) -> None:
    """The connection closes (as when a server goes away) and the owner reconnects."""
    await console.manager.sessions[sid].close()
    assert (await console.http.post(f"/sessions/{sid}/reconnect")).status_code == 303
    assert (await console.settled(sid))["status"] == "connected"


async def test_a_connect_records_a_snapshot_of_every_list_and_the_capabilities(console: Console,
                                                                                demo_url: str) -> None:
    sid = await _demo_session(console, demo_url)
    surface = await _surface(console, sid)
    [snap] = surface["snapshots"]
    assert snap["connect"] == 1 and snap["protocol_version"] == "2026-07-28"
    assert all(snap["counts"][k] > 0 for k in ("tools", "resources", "resourceTemplates", "prompts"))
    assert surface["changed_since_connect"]["changes"] == []
    # Made from what the connect fetched: each list was asked for once.
    timeline = (await console.session(sid))["timeline"]
    assert [e["method"] for e in timeline if e.get("method") == "tools/list"] == ["tools/list"]
    page = await console.http.get(f"/sessions/{sid}/surface.json", params={"a": str(snap["seq"]), "b": "now"})
    assert page.status_code == 200 and page.json()["changes"] == []


async def test_a_2025_11_25_connect_records_its_snapshot_too_and_a_diff_with_a_modern_one_breaks_nothing(
        console: Console, demo_url: str) -> None:
    legacy = await console.connect(kind="http", url=demo_url, era="legacy")
    modern = await _demo_session(console, demo_url)
    [snap] = (await _surface(console, legacy["id"]))["snapshots"]
    assert snap["protocol_version"] == "2025-11-25" and snap["counts"]["tools"] > 0
    found = (await console.http.get(f"/sessions/{legacy['id']}/surface.json",
                                    params={"a": str(snap["seq"]), "b": f"{modern}:now"})).json()
    assert found["breaking"] is False, found["changes"]
    assert {c["rule"] for c in found["changes"] if c["where"].startswith(("tool ", "prompt ", "resource"))} <= {
        "tool.added"}  # the same server: what one session added at run time is all that may differ


async def test_a_tool_added_at_run_time_shows_as_changed_since_the_last_connect(console: Console,
                                                                               demo_url: str) -> None:
    sid = await _demo_session(console, demo_url)
    name = await _add_tool_and_refresh(console, sid)

    async def changed() -> list[dict[str, Any]]:
        found = (await _surface(console, sid))["changed_since_connect"]
        return [c for c in found["changes"] if c["where"] == f"tool {name}"]

    [change] = await eventually(changed, what="the added tool in the changes since the last connect")
    assert (change["level"], change["rule"]) == ("additive", "tool.added")
    html = (await console.http.get(f"/sessions/{sid}")).text
    assert "Changed since the last connect" in html and name in html


async def test_a_reconnect_records_a_second_snapshot_and_the_page_diffs_the_two(console: Console,
                                                                               demo_url: str) -> None:
    sid = await _demo_session(console, demo_url)
    name = await _add_tool_and_refresh(console, sid)
    await _reconnect(console, sid)

    async def two() -> list[dict[str, Any]]:
        snaps: list[dict[str, Any]] = (await _surface(console, sid))["snapshots"]
        return snaps if len(snaps) == 2 else []

    first, second = await eventually(two, what="a second snapshot after the reconnect")
    assert second["counts"]["tools"] == first["counts"]["tools"] + 1
    page = (await console.http.get(f"/sessions/{sid}/surface.json")).json()  # default: the last two connects
    assert (page["a"], page["b"]) == (str(first["seq"]), str(second["seq"]))
    assert [(c["level"], c["where"]) for c in page["changes"]] == [("additive", f"tool {name}")]
    assert page["breaking"] is False
    # ... and backwards it is a removal: breaking.
    back = (await console.http.get(f"/sessions/{sid}/surface.json",
                                   params={"a": str(second["seq"]), "b": str(first["seq"])})).json()
    assert back["breaking"] is True and back["changes"][0]["rule"] == "tool.removed"
    html = (await console.http.get(f"/sessions/{sid}/surface", params={"a": str(second["seq"]),
                                                                        "b": str(first["seq"])})).text
    assert "From (A)" in html and "tool.removed" in html


async def test_the_surface_page_diffs_two_sessions_of_two_servers(console: Console) -> None:
    one = (await console.connect(kind="stdio", command=SURFACE_V1))["id"]
    two = (await console.connect(kind="stdio", command=SURFACE_V2))["id"]
    page = await console.http.get(f"/sessions/{one}/surface.json", params={"a": "now", "b": f"{two}:now"})
    assert page.status_code == 200, page.text
    found = page.json()
    rules = {c["rule"] for c in found["changes"] if c["level"] == "breaking"}
    assert {"tool.removed", "argument.added-required", "type.narrowed", "enum.value-removed",
            "additionalProperties.closed", "output.removed", "capability.removed"} <= rules
    assert (await console.http.get(f"/sessions/{one}/surface.json", params={"a": "bogus"})).status_code == 400


async def test_a_viewer_link_sees_its_sessions_surface_but_not_another_sessions(
        console: Console, demo_url: str, share_tab: ShareTab) -> None:
    sid = await _demo_session(console, demo_url)
    other = await _demo_session(console, demo_url)
    tab = await share_tab(console, await create_link(console, sid, "viewer"))
    page = await tab.get(f"/sessions/{sid}/surface")
    assert page.status_code == 200 and "From (A)" in page.text
    assert other not in page.text  # the owner's other sessions are no choice of a link holder's
    refused = await tab.get(f"/sessions/{sid}/surface.json", params={"a": "now", "b": f"{other}:now"})
    assert refused.status_code == 403
    assert (await tab.get(f"/sessions/{other}/surface.json")).status_code == 403


# -- the command line --------------------------------------------------------------------------------------------

def _changes(run: Any) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(run.stdout)
    return out


@pytest.mark.processes  # the command line, as a process of its own (tests/conftest.py)
async def test_the_cli_diffs_a_session_file_with_two_connects_and_the_demo_live(
        console: Console, demo_url: str, tmp_path: Path) -> None:
    before = tmp_path / "before.json"
    snap = mcp_console("snapshot", demo_url, "-o", str(before))
    assert snap.returncode == 0, snap.stderr
    assert json.loads(before.read_text())["format"] == "mcp-console-surface"

    sid = await _demo_session(console, demo_url)
    name = await _add_tool_and_refresh(console, sid)
    await _reconnect(console, sid)

    async def two() -> bool:
        return len((await _surface(console, sid))["snapshots"]) == 2

    await eventually(two, what="a second snapshot after the reconnect")
    session_file = tmp_path / "session.json"
    session_file.write_bytes((await console.http.get(f"/sessions/{sid}/export.json")).content)

    # One session file: its last two connects. Forward additive (exit 0), backward breaking (exit 1).
    forward = mcp_console("diff", str(session_file), "--json")
    assert forward.returncode == 0, forward.stderr
    assert [(c["level"], c["where"]) for c in _changes(forward)["changes"]] == [("additive", f"tool {name}")]
    backward = mcp_console("diff", f"{session_file}@2", f"{session_file}@1", "--junit", str(tmp_path / "j.xml"))
    assert backward.returncode == 1, backward.stderr
    assert f"breaking: tool {name}: removed" in backward.stdout
    suite = ET.parse(tmp_path / "j.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "1"

    # The snapshot taken before add_tool against the live demo now: the added tool is new (additive, exit 0).
    live = mcp_console("diff", str(before), demo_url, "--json")
    assert live.returncode == 0, live.stderr
    added = [c["where"] for c in _changes(live)["changes"] if c["rule"] == "tool.added"]
    assert f"tool {name}" in added


@pytest.mark.processes  # the command line, as a process of its own (tests/conftest.py)
def test_the_cli_diff_of_a_schema_change_between_two_stdio_servers_exits_1_with_a_junit_failure_per_breaking_change(
        tmp_path: Path) -> None:
    junit = tmp_path / "surface.xml"
    run = mcp_console("diff", "--stdio", SURFACE_V1, "--stdio", SURFACE_V2, "--junit", str(junit))
    assert run.returncode == 1, run.stderr
    for line in ("breaking: tool legacy_report: removed", "breaking: tool forecast: arguments.unit: added, required",
                 'breaking: tool forecast: arguments.days: type "number" → "integer" (narrowed)',
                 "breaking: tool forecast: output.humidity: field removed",
                 "breaking: capabilities: resources.subscribe: removed", "additive: tool radar: added",
                 "cosmetic: tool forecast: description: description changed"):
        assert line in run.stdout, run.stdout
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    failed = [c for c in cases if c.find("failure") is not None]
    assert len(cases) == int(suite.get("tests", "0")) == 11
    assert len(failed) == int(suite.get("failures", "0")) == 8
    assert {f.find("failure").get("type") for f in failed} >= {"tool.removed", "type.narrowed"}  # type: ignore[union-attr]


@pytest.mark.processes  # the command line, as a process of its own (tests/conftest.py)
def test_the_cli_diff_of_one_server_against_itself_exits_0_and_says_no_changes(tmp_path: Path) -> None:
    snap = tmp_path / "v1.json"
    assert mcp_console("snapshot", "--stdio", SURFACE_V1, "-o", str(snap)).returncode == 0
    run = mcp_console("diff", str(snap), "--stdio", SURFACE_V1, "--junit", str(tmp_path / "j.xml"))
    assert run.returncode == 0, run.stderr
    assert "no changes" in run.stdout
    suite = ET.parse(tmp_path / "j.xml").getroot().find("testsuite")
    assert suite is not None and (suite.get("tests"), suite.get("failures")) == ("1", "0")
    alone = mcp_console("diff", str(snap))  # one surface alone: said as such, with what to add
    assert alone.returncode == 2 and "holds 1 connect: " in alone.stderr and "give a second surface" in alone.stderr


@pytest.mark.processes  # the command line, as a process of its own (tests/conftest.py)
def test_the_cli_diff_exits_2_for_a_file_that_is_no_surface_and_for_a_server_that_cannot_be_reached(
        tmp_path: Path) -> None:
    junk = tmp_path / "junk.json"
    junk.write_text('{"hello": 1}')
    run = mcp_console("diff", str(junk), str(junk))
    assert run.returncode == 2 and "neither a surface snapshot nor a session file" in run.stderr
    gone = mcp_console("diff", str(junk), "http://127.0.0.1:9/mcp")
    assert gone.returncode == 2
    one = mcp_console("diff", str(junk))
    assert one.returncode == 2


@pytest.mark.processes  # the command line, as a process of its own (tests/conftest.py)
def test_the_cli_diffs_two_servers_of_a_config_file(tmp_path: Path) -> None:
    here = str(Path(__file__).resolve().parents[2])
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "old": {"command": sys.executable, "args": ["-m", "tests.integration.surface_server"], "cwd": here},
        "new": {"command": sys.executable, "args": ["-m", "tests.integration.surface_server", "--v2"], "cwd": here}}}))
    run = mcp_console("diff", "--config", str(config), "--server", "old", "--server", "new", "--json")
    assert run.returncode == 1, run.stderr
    found = _changes(run)
    assert found["counts"] == {"breaking": 8, "additive": 1, "cosmetic": 2}
    same = mcp_console("diff", "--config", str(config), "--server", "new", "--server", "new")
    assert same.returncode == 0 and "no changes" in same.stdout
