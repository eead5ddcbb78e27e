"""Share-link news from another process: a revoke counts at once and for good, whatever the store read says."""

from __future__ import annotations

from typing import Any

from app.console.links import new_link
from app.console.sharing import LinkRegistry


class _Store:
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def links(self) -> list[dict[str, Any]]:
        return [dict(row) for row in self.rows]

    def save_link(self, row: dict[str, Any]) -> None:
        self.rows = [r for r in self.rows if r["id"] != row["id"]] + [dict(row)]


class _Hub:
    def __init__(self) -> None:
        self.closed: list[str] = []

    def close_link(self, link_id: str, why: str) -> None:
        self.closed.append(link_id)


def _registry_knowing_one_link() -> tuple[LinkRegistry, _Store, _Hub, str, str]:
    store, hub = _Store(), _Hub()
    link, token = new_link("s1", "viewer", None)
    store.save_link(link.to_dict())  # made on another process: this one reads it from the store
    registry = LinkRegistry(store, hub)  # type: ignore[arg-type]
    assert registry.find(token) is not None
    return registry, store, hub, link.id, token


def test_a_revoke_from_another_process_stops_the_link_and_cuts_its_sockets_without_a_store_read() -> None:
    registry, store, hub, link_id, token = _registry_knowing_one_link()
    store.rows = []  # were the store read, the link would not even be there
    registry.revoked_elsewhere(link_id, 123.0)
    assert registry.find(token) is None
    assert hub.closed == [link_id]
    registry.revoked_elsewhere(link_id, 124.0)  # told twice: cut once
    assert hub.closed == [link_id]


def test_a_row_read_before_the_revoke_was_stored_does_not_open_the_link_again() -> None:
    registry, store, _hub, link_id, token = _registry_knowing_one_link()
    stale = store.links()  # read by a worker thread before the revoke reached the store
    registry.revoked_elsewhere(link_id, 123.0)
    registry.apply(stale)
    assert registry.find(token) is None
    assert registry.lookup(token) is not None and registry.lookup(token).revoked == 123.0  # type: ignore[union-attr]


def test_a_revoke_for_a_link_not_known_here_changes_nothing() -> None:
    registry, _store, hub, _link_id, token = _registry_knowing_one_link()
    registry.revoked_elsewhere("no-such-link", 1.0)
    assert registry.find(token) is not None and hub.closed == []
