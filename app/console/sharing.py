"""The registry of share links: create, find by token, revoke, and tell the hub to cut sockets."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from app.console.hub import Hub
from app.console.links import Role, ShareLink, hash_token, new_link
from app.console.store import Store


class LinkRegistry:
    def __init__(self, store: Store, hub: Hub,
                 on_change: Callable[[ShareLink, bool], None] | None = None) -> None:
        self._store = store
        self._hub = hub
        self._on_change = on_change  # (link, created): the session records it as an event
        self._by_hash: dict[str, ShareLink] = {}
        for raw in store.links():
            link = ShareLink.from_dict(raw)
            self._by_hash[link.token_hash] = link

    def create(self, session_id: str, role: Role, ttl_s: float | None, label: str = "") -> tuple[ShareLink, str]:
        link, token = new_link(session_id, role, ttl_s, label)
        self._by_hash[link.token_hash] = link
        self._store.save_link(link.to_dict())
        if self._on_change is not None:
            self._on_change(link, True)
        return link, token

    def reload(self) -> None:
        """Read the links again from the store: another console process made or revoked one (team deployment).

        A link revoked elsewhere stops opening here at once, and its sockets on this process are cut.
        """
        self.apply(self._store.links())

    def apply(self, rows: list[dict[str, Any]]) -> None:
        """What `reload` does with links already read (a worker thread read them with a replica's session).

        A revoke is for good: a row read before it was stored (a read that started first and ended after the
        revoke's event came) does not open the link again."""
        for raw in rows:
            link = ShareLink.from_dict(raw)
            known = self._by_hash.get(link.token_hash)
            if known is not None and known.revoked is not None and link.revoked is None:
                link.revoked = known.revoked
            self._by_hash[link.token_hash] = link
            if link.revoked is not None and (known is None or known.revoked is None):
                self._hub.close_link(link.id, "this share link was revoked")

    def revoked_elsewhere(self, link_id: str, revoked: float) -> None:
        """Another process revoked a link (its event says which and when): it stops opening here at once, with
        no store read, and its sockets on this process are cut. A link not known here has nothing to stop."""
        link = self.get(link_id)
        if link is not None and link.revoked is None:
            link.revoked = revoked
            self._hub.close_link(link.id, "this share link was revoked")

    def find(self, token: str | None) -> ShareLink | None:
        """The active link for a token; None for unknown, revoked or expired tokens."""
        if not token:
            return None
        link = self._by_hash.get(hash_token(token))
        return link if link is not None and link.active() else None

    def lookup(self, token: str | None) -> ShareLink | None:
        """The link for a token whether or not it is still active, so a page can say it was revoked or expired."""
        return self._by_hash.get(hash_token(token)) if token else None

    def lookup_hash(self, token_hash: str) -> ShareLink | None:
        return self._by_hash.get(token_hash)

    def for_session(self, session_id: str) -> list[ShareLink]:
        return sorted((lk for lk in self._by_hash.values() if lk.session_id == session_id), key=lambda lk: lk.created)

    def get(self, link_id: str) -> ShareLink | None:
        return next((lk for lk in self._by_hash.values() if lk.id == link_id), None)

    def revoke(self, link: ShareLink) -> None:
        link.revoked = time.time()
        self._store.save_link(link.to_dict())
        if self._on_change is not None:
            self._on_change(link, False)
        self._hub.close_link(link.id, "this share link was revoked")

    def forget_session(self, session_id: str) -> None:
        for link in self.for_session(session_id):
            self._hub.close_link(link.id, "the session was deleted")
            del self._by_hash[link.token_hash]
