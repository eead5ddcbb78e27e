"""Which values the owner typed into a target are secret: credential-shaped ones by default, any the owner marks.

Each value the owner typed has a slot, named as the connect form and the target display name it:
- `userinfo`: a URL's user and password (secret by default);
- `path`: a URL's path (a key some servers take there; never by default);
- `query:<name>`: a URL's query parameter (secret when its name is credential-shaped);
- `header:<Name>`: a header's value (Authorization, Proxy-Authorization, Cookie and credential-shaped names);
- `env:<NAME>`: a `NAME=value` assignment before the program (credential-shaped names);
- `arg:<i>`: argument i of the command line (`--token=…`, or the value after a bare `--password`);
- `cwd`: the working directory (never by default).
The owner can mark any slot secret, or a default one not; the set is recorded with the target.
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

from app.mcp.secret import MASK
from app.mcp.stdio import is_assignment

# A name is credential-shaped when it is one of these or contains one of the words.
PATH_KEY_CHARS = 12  # a path segment this long may be a key (see url_slots)
CREDENTIAL_NAMES = frozenset({"authorization", "proxy-authorization", "cookie"})
CREDENTIAL_WORDS = ("token", "key", "secret", "password", "passwd", "credential", "session", "auth")


def credential_name(name: str) -> bool:
    lowered = name.lower()
    return lowered in CREDENTIAL_NAMES or any(word in lowered for word in CREDENTIAL_WORDS)


def credential_header_line(value: str) -> bool:
    """Whether a value is a header line with a credential's name ("Authorization: Bearer x"), as mcp-remote's
    `--header` and an `MCP_HEADERS` variable carry them."""
    name, colon, rest = value.partition(":")
    name = name.strip()
    return bool(colon and name and rest.strip()) and all(c.isalnum() or c == "-" for c in name) \
        and credential_name(name)


@dataclass(frozen=True, slots=True)
class Slot:
    id: str
    label: str  # how the connect form and the target display name it
    default: bool  # secret unless the owner says otherwise


def mask_header(name: str, value: str) -> str:
    """A secret header's display: the scheme of an Authorization kept ("Bearer ••••••" still explains itself)."""
    if name.lower() in ("authorization", "proxy-authorization") and " " in value.strip():
        return value.strip().split(" ", 1)[0] + " " + MASK
    return MASK


def url_slots(url: str) -> list[Slot]:
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    found: list[Slot] = []
    if "@" in parts.netloc:
        found.append(Slot("userinfo", "the URL's user and password", True))
    # A key some servers take in the path (`/mcp/<key>/sse`): offered when a segment is long enough to be one
    # (offering `/mcp` invited masking "mcp" in everything the server says); never secret by default.
    if any(len(segment) >= PATH_KEY_CHARS for segment in parts.path.split("/")):
        found.append(Slot("path", "the URL's path", False))
    seen: set[str] = set()
    for name, _value in parse_qsl(parts.query, keep_blank_values=True):
        if name not in seen:
            seen.add(name)
            found.append(Slot(f"query:{name}", f"query parameter {name}", credential_name(name)))
    return found


def masked_url(url: str, secret: frozenset[str]) -> str:
    """The URL with the secret slots' values masked; every other part as typed."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return MASK
    netloc = parts.netloc
    if "@" in netloc and "userinfo" in secret:
        netloc = MASK + "@" + netloc.rsplit("@", 1)[1]
    query = parts.query
    if query and any(s.startswith("query:") for s in secret):
        pieces = []
        for piece in query.split("&"):
            raw_name, sep, _value = piece.partition("=")
            name = next((n for n, _ in parse_qsl(raw_name + "=x", keep_blank_values=True)), raw_name)
            pieces.append(f"{raw_name}={MASK}" if sep and f"query:{name}" in secret else piece)
        query = "&".join(pieces)
    path = "/" + MASK if parts.path.strip("/") and "path" in secret else parts.path
    return urlunsplit((parts.scheme, netloc, path, query, parts.fragment))


_is_assignment = is_assignment  # one reading of `NAME=value` for the secrets and the transport


def command_parts(argv: list[str]) -> tuple[int, int, int]:
    """Where a command line's parts start: (first assignment, program, first argument).

    `env A=1 B=2 python -m x`: the launcher `env`, the assignments, the program, its arguments. The program and the
    names explain the command; the values after them are the owner's input."""
    i = 1 if argv and os.path.basename(argv[0]) == "env" else 0
    first_assignment = i
    while i < len(argv) and _is_assignment(argv[i]):
        i += 1
    return first_assignment, i, i + 1


def _has_userinfo(value: str) -> bool:
    """A URL with a user (and password) before its host, `postgres://app:pw@db/x`, as a value or an argument."""
    return "://" in value and "@" in value.split("://", 1)[1].split("/", 1)[0]


def argv_slots(argv: list[str]) -> list[Slot]:
    first_assignment, program, first_arg = command_parts(argv)
    found = [Slot(f"env:{argv[i].partition('=')[0]}", f"variable {argv[i].partition('=')[0]}",
                  credential_name(argv[i].partition("=")[0]) or credential_header_line(argv[i].partition("=")[2])
                  or _has_userinfo(argv[i].partition("=")[2]))
             for i in range(first_assignment, program)]
    flag_before = False  # the argument before was a bare credential-shaped flag: `--password hunter2`
    for i in range(first_arg, len(argv)):
        arg = argv[i]
        name, sep, _ = arg.partition("=")
        flag = arg.startswith("-") and len(arg) > 1
        if flag and not sep:  # a bare flag is the program's vocabulary, not the owner's data
            flag_before = credential_name(arg)
            continue
        default = (sep != "" and (flag or _is_assignment(arg)) and credential_name(name)) or flag_before \
            or _has_userinfo(arg) or credential_header_line(arg.partition("=")[2] if sep and flag else arg)
        after = argv[i - 1] if flag_before else ""
        flag_before = False
        label = f"argument {i} ({name}=…)" if sep and (flag or _is_assignment(arg)) else \
            f"argument {i} (after {after})" if after else f"argument {i}"
        found.append(Slot(f"arg:{i}", label, default))
    return found


def masked_arg(arg: str) -> str:
    name, sep, _ = arg.partition("=")
    return f"{name}={MASK}" if sep and (arg.startswith("-") or _is_assignment(arg)) else MASK


def basic_credential(userinfo: str) -> tuple[str, str]:
    """A URL's user and password as httpx sends them: ("user:password" decoded, its base64 for Basic)."""
    user, _, password = userinfo.partition(":")
    plain = f"{unquote(user)}:{unquote(password)}"
    return plain, base64.b64encode(plain.encode("utf-8", "surrogatepass")).decode("ascii")


def credential_parts(value: str) -> list[str]:
    """A secret value and the parts of it a server may say alone: a header line's value ("Authorization: Bearer
    x"), the credential after a scheme ("Bearer x"), a Basic credential's user:password and password (decoded), each
    `name=value` of a cookie list."""
    value = value.strip()
    parts = [value]
    name, colon, rest = value.partition(":")
    if colon and name.strip() and all(c.isalnum() or c == "-" for c in name.strip()) and rest.strip() \
            and not rest.startswith("//"):  # a header line: its value's parts too
        return parts + credential_parts(rest)
    scheme, _, credential = value.partition(" ")
    if credential and scheme.isalpha():
        parts.append(credential.strip())
        if scheme.lower() == "basic":
            try:
                plain = base64.b64decode(credential.strip(), validate=True).decode("utf-8")
            except (ValueError, UnicodeDecodeError):
                plain = ""
            if plain:
                parts += [plain, plain.partition(":")[2]]
    if "=" in value.strip("=") and (";" in value or " " not in value):  # a cookie list, or one cookie
        parts += [pair.partition("=")[2].strip() for pair in value.split(";") if "=" in pair]
    return [p for p in parts if p]
