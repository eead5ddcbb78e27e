"""The `surface` event in the fold, and "changed since the last connect" made from it (app/console/surfaces.py)."""

from __future__ import annotations

from typing import Any

from app.console.events import Discovered, ListsRefreshed, SurfaceRecorded, TimelineEvent
from app.console.state import MAX_SURFACES, fold
from app.console.surfaces import since_connect, snapshots_in
from app.mcp.surface import snapshot_of

DISCOVERED = {"capabilities": {"tools": {"listChanged": True}}, "supportedVersions": ["2026-07-28"]}


def events(*records: Any) -> list[TimelineEvent]:
    return [TimelineEvent("s1", i + 1, record, at=1000.0 + i) for i, record in enumerate(records)]


def tools(*names: str) -> list[dict[str, Any]]:
    return [{"name": n, "inputSchema": {"type": "object"}} for n in names]


def connect(*names: str, n: int = 1) -> list[Any]:
    lists = {"tools": tools(*names)}
    return [ListsRefreshed(lists=lists, counts={"tools": len(names)}),
            SurfaceRecorded(connect=n, snapshot=snapshot_of(DISCOVERED, lists, era="modern"))]


def test_the_fold_keeps_the_last_connects_snapshot_whole_and_lists_every_connect() -> None:
    state = fold("s1", events(*connect("a"), *connect("a", "b", n=2)))
    assert [t["name"] for t in (state.surface or {})["tools"]] == ["a", "b"]
    assert [(s["seq"], s["connect"], s["counts"]["tools"]) for s in state.surfaces] == [(2, 1, 1), (4, 2, 2)]


def test_nothing_has_changed_right_after_a_connect() -> None:
    diff = since_connect(fold("s1", events(*connect("a"))))
    assert diff is not None and diff.changes == ()


def test_a_refreshed_list_with_a_new_tool_is_an_additive_change_since_the_last_connect() -> None:
    state = fold("s1", events(*connect("a"), ListsRefreshed(only="tools", lists={"tools": tools("a", "b")})))
    diff = since_connect(state)
    assert diff is not None and [(c.level, c.where) for c in diff.changes] == [("additive", "tool b")]


def test_a_list_of_a_capability_no_longer_declared_is_not_counted_as_offered() -> None:
    lists = {"tools": tools("a")}
    no_tools = SurfaceRecorded(connect=2, snapshot=snapshot_of({"capabilities": {}}, {}, era="modern"))
    state = fold("s1", events(ListsRefreshed(lists=lists), no_tools))  # the fold's tools are an older connect's
    diff = since_connect(state)
    assert diff is not None and diff.changes == ()


def test_a_session_never_connected_has_no_changes_to_show() -> None:
    assert since_connect(fold("s1", [])) is None


def test_the_fold_lists_at_most_a_bounded_number_of_connects() -> None:
    records = [r for i in range(MAX_SURFACES + 5) for r in connect("a", n=i)]
    assert len(fold("s1", events(*records)).surfaces) == MAX_SURFACES


def test_a_log_from_before_snapshots_gives_one_from_its_last_lists() -> None:
    found = snapshots_in(events(Discovered(result=DISCOVERED), ListsRefreshed(lists={"tools": tools("a")})))
    assert [(seq, [t["name"] for t in snap["tools"]]) for seq, snap in found] == [(2, ["a"])]


def test_a_snapshot_event_of_no_known_shape_from_an_imported_file_shows_no_changes_instead_of_failing() -> None:
    odd = SurfaceRecorded(connect=1, snapshot={"tools": "many", "capabilities": ["tools"]})
    diff = since_connect(fold("s1", events(ListsRefreshed(lists={"tools": tools("a")}), odd)))
    assert diff is not None and diff.changes == ()
