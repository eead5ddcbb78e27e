"""Share links: unguessable tokens with a role, stored hashed, revocable, optionally expiring.

viewer: sees everything of one session live, sends nothing.
operator: may also call tools, answer dialogs, listen and cancel; never starts processes, changes
the target or creates links.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import asdict, dataclass
from typing import Any, Literal

Role = Literal["owner", "operator", "viewer"]
ROLES: tuple[Role, ...] = ("viewer", "operator")


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(slots=True)
class ShareLink:
    id: str
    session_id: str
    role: Role
    token_hash: str
    created: float
    expires: float | None = None
    revoked: float | None = None
    label: str = ""

    def active(self, now: float | None = None) -> bool:
        now = time.time() if now is None else now
        return self.revoked is None and (self.expires is None or now < self.expires)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ShareLink:
        return cls(**data)


def new_link(session_id: str, role: Role, ttl_s: float | None, label: str = "") -> tuple[ShareLink, str]:
    """A fresh link and its token. The token is shown once; only its hash is kept."""
    token = secrets.token_urlsafe(24)
    now = time.time()
    link = ShareLink(id=secrets.token_hex(4), session_id=session_id, role=role, token_hash=hash_token(token),
                     created=now, expires=now + ttl_s if ttl_s else None, label=label)
    return link, token
