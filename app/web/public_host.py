"""The host name the console is opened under: the only Host its cookies are honoured under.

Browsers do not isolate cookies by port: a cookie set by 127.0.0.1:8765 is sent to every service on
127.0.0.1, including one a hostile MCP server asks the owner to open. `__Host-` cookies do not help on
plain HTTP. So the owner's cookie is bound to a name no other service answers to: a random
`mcp-<16 chars>.localhost` (browsers resolve every `*.localhost` name to loopback), kept in `data_dir`
so launch URLs, cookies and share links survive a restart. A non-loopback bind uses its own host
name unless `public_host` says otherwise.
"""

from __future__ import annotations

import base64
import contextlib
import ipaddress
import os
import re
import secrets
from pathlib import Path

from app.settings import Settings

NAME_FILE = "public_host"
GENERATED = re.compile(r"^mcp-[a-z2-7]{16}\.localhost$")
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
HOST_NAME = re.compile(rf"^(?=.{{1,253}}$){_LABEL}(?:\.{_LABEL})*$")
WILDCARD_SPELLINGS = frozenset({"", "*", "0", "0.0.0.0", "::"})


def resolve_public_host(settings: Settings) -> str:
    """The configured name (validated), else the default for the bind host. Raises ValueError if invalid."""
    if settings.public_host.strip():
        return validated(settings.public_host)
    bind = settings.host.strip().strip("[]").lower()
    if _loopback_or_wildcard(bind):
        return persisted_name(Path(settings.data_dir).expanduser())
    return validated(bind)


def validated(name: str) -> str:
    """A bare host name or IP address, lower-cased; IPv6 in brackets, as it appears in a Host header."""
    name = name.strip().lower()
    bare = name.strip("[]")
    try:
        address = ipaddress.ip_address(bare)
    except ValueError:
        if not HOST_NAME.match(name):
            raise ValueError(f"public_host must be a bare host name (no scheme, port or path), not {name!r}") from None
        return name
    if address.is_unspecified:
        raise ValueError(f"public_host cannot be a wildcard address ({name!r})")
    return f"[{bare}]" if address.version == 6 else bare


def _loopback_or_wildcard(host: str) -> bool:
    if host in WILDCARD_SPELLINGS or host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def new_name() -> str:
    # 10 random bytes are exactly 16 base32 characters: 80 bits, unguessable by a page or a server.
    return "mcp-" + base64.b32encode(secrets.token_bytes(10)).decode("ascii").lower() + ".localhost"


def persisted_name(data_dir: Path) -> str:
    """The name kept in `data_dir/public_host` (mode 0600), made once."""
    path = data_dir / NAME_FILE
    with contextlib.suppress(OSError):
        kept = path.read_text(encoding="ascii").strip()
        if GENERATED.fullmatch(kept):
            return kept
    data_dir.mkdir(parents=True, exist_ok=True)
    name = new_name()
    partial = path.with_name(f".{NAME_FILE}.{os.getpid()}.tmp")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # whatever the umask or a leftover file said
        os.write(fd, (name + "\n").encode("ascii"))
    finally:
        os.close(fd)
    os.replace(partial, path)
    return name
