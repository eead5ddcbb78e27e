"""Session files, HAR 1.2 and cURL: what happened in a session, in forms that travel.

Secrets are masked unless the owner explicitly asks to include them.
"""

from __future__ import annotations

import json
import shlex
import time
import unicodedata
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

from app import __version__
from app.console.events import EXCHANGE_KINDS, TimelineEvent
from app.console.secrets import mask_headers, mask_url
from app.console.store import Store, iter_events
from app.console.target import Target
from app.mcp import har as har_file
from app.mcp.har import EARLIEST, LATEST
from app.mcp.http import request_url
from app.mcp.secret import reveal
from app.mcp.sse_transport import LIVE_STREAM_NOTE

FORMAT = "mcp-console-session"
VERSION = 2  # 2: events are typed (event version 2); files of version 1 still import
# Headers curl sets itself, or that would change what comes back (compressed bytes on a terminal).
CURL_SKIP = frozenset({"host", "content-length", "accept-encoding", "connection"})
SESSION_HEADER = "mcp-session-id"
# Linux execs no argument longer than 128 KiB (MAX_ARG_STRLEN): a body that long goes through a pipe from
# bash's own printf (a builtin, so never exec'd), not as curl's --data-raw argument, which failed to run.
ARGUMENT_ROOM = 100_000
OPEN_LIMIT = 1000  # exchanges a HAR export holds while an earlier one is still open
# The first line of a cURL whose request was sent inside a 2025-11-25 session: the id in it lives only as long
# as that session, so the command alone is not a reproduction (a 2026-07-28 request needs nothing before it).
LIVE_SESSION_NOTE = ("# needs a live Mcp-Session-Id: this request was sent inside a 2025-11-25 session; the id below "
                     "works only while that session is open (after it ends, initialize a new session and use its id)")


def read_session_file(data: Any) -> tuple[dict[str, Any], float, list[TimelineEvent]]:
    """Validate an uploaded session file; returns (meta, created, events). Raises ValueError."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError("not an MCP Console session file")
    if data.get("version") not in (1, VERSION):
        raise ValueError(f"session file version {data.get('version')!r} is not supported (this reads {VERSION})")
    session = data.get("session")
    if not isinstance(session, dict) or not isinstance(session.get("meta"), dict):
        raise ValueError("the file has no session metadata")
    raw_events = data.get("events")  # (session_stream reads a file's events one by one, after this)
    if not isinstance(raw_events, list):
        raise ValueError("the file has no events list")
    events = [TimelineEvent.from_dict(e) for e in raw_events]
    return session["meta"], _created(session.get("created")), events


def _created(value: Any) -> float:
    """The file's creation time, one the home page (which shows every session's) can show."""
    if not value:
        return time.time()
    if type(value) not in (int, float) or not EARLIEST <= value <= LATEST:  # NaN fails the test too
        raise ValueError(f"the session's creation time is not a time: {str(value)[:40]!r}")
    return float(value)


def exchanges(session_id: str, store: Store, exact: bool = False) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every exchange's entry facts, wire events and lint findings, in the order they started.

    Read in chunks; an exchange is handed on once it has finished (its frames and findings come before its
    end) and every exchange started before it has been handed on. One still open after OPEN_LIMIT later
    ones started (a long listen) goes as it stands then, so what is held stays bounded. `exact`: a frame
    recorded with a secret value masked comes as it went (the owner's copy, app/console/scrub.py).
    """
    open_: OrderedDict[str, dict[str, Any]] = OrderedDict()
    for chunk in iter_events(store, session_id, kinds=(*EXCHANGE_KINDS, "wire", "finding")):
        exact_frames = store.exact(session_id, [e.seq for e in chunk if e.kind == "wire"]) if exact else {}
        for event in chunk:
            key = event.data.get("key") if event.kind in EXCHANGE_KINDS else event.data.get("exchange")
            if not key:
                continue
            item = open_.get(key)
            if item is None:
                item = open_[key] = {"entry": {}, "wire": [], "findings": [], "done": False}
            if event.kind in EXCHANGE_KINDS:
                item["entry"].update(event.data)
                item["done"] = item["done"] or event.kind == "exchange_finished"
            elif event.kind == "finding":
                item["findings"].append({k: v for k, v in event.data.items() if k != "exchange"})
            else:
                text = exact_frames.get(event.seq)
                item["wire"].append(json.loads(text) if text is not None else event.data)
        while open_ and (next(iter(open_.values()))["done"] or len(open_) > OPEN_LIMIT):
            yield open_.popitem(last=False)
    yield from open_.items()


def _headers(pairs: list[list[str]] | None, include_secrets: bool) -> list[dict[str, str]]:
    # The target's secret headers are recorded as their masks (app/mcp/secret.header_masks); what the server sent
    # back under a credential's name (Set-Cookie, a token) is masked here by its name.
    return [{"name": k, "value": v} for k, v in _shown_pairs(pairs or [], include_secrets)]


def _shown_pairs(pairs: list[Any], include_secrets: bool) -> list[tuple[str, str]]:
    """Headers as [name, value] pairs, credential-named ones masked unless secrets are included; anything else an
    imported file holds there is left out."""
    shown = pairs if include_secrets else mask_headers(pairs)
    return [(p[0], p[1]) for p in shown if type(p) in (list, tuple) and len(p) == 2]


def har(session_id: str, target: Target, store: Store, include_secrets: bool = False) -> Iterator[str]:
    """The HAR 1.2 log as pieces of text (joined, one JSON document), an exchange at a time: the entries are the CLI's
    (`app/mcp/har.py`), with what the session knows of each exchange and the live lint's findings."""
    url = request_url(reveal(target.url) if include_secrets else str(target.url))
    head = har_file.log_head("MCP Console", __version__)
    if target.kind == "stdio":  # an empty log with no word why read as a broken export
        log = head["log"]
        entries = log.pop("entries")  # stays last: the entries are streamed into the end of the text below
        log["comment"] = ("A stdio session: its frames went over the server's stdin and stdout, not HTTP, so "
                      "this HAR has no entries. The session file (export.json) holds every frame.")
        log["entries"] = entries
    yield json.dumps(head)[:-4] + "["
    sep = ""

    def shown(pairs: list[Any] | None) -> list[dict[str, str]]:
        return _headers(target.reveal_headers(pairs or []) if include_secrets else pairs, include_secrets)

    for key, item in exchanges(session_id, store, exact=include_secrets):
        sent, _, _ = har_file.parts(item["wire"])
        posted = sent.get("url") if sent is not None else None  # the 2024-11-05 endpoint: the POST went there
        meta = item["entry"]
        har_entry = har_file.entry(key, item["wire"], _shown(posted, include_secrets) if posted else url, shown, {
            "method": meta.get("method"), "jsonrpcId": meta.get("id"), "operationId": meta.get("op"),
            "round": meta.get("round"),
            "subscriptionId": meta.get("id") if meta.get("method") == "subscriptions/listen" else None,
            "status": meta.get("status"), "findings": item["findings"]})
        if har_entry is None:
            continue  # not an HTTP exchange (stdio frames carry no headers)
        yield sep + json.dumps(har_entry)  # the frames hold the target's secret values as masks already
        sep = ", "
    yield "]}}"


def _shown(url: str, include_secrets: bool) -> str:
    """A 2024-11-05 endpoint as HAR 1.2 has it (no fragment), its query values masked unless secrets are included:
    its `?sessionId=` binds a POST to the server's stream, a credential as Mcp-Session-Id is."""
    return request_url(url) if include_secrets else mask_url(request_url(url))


def curl(target: Target, wire: list[dict[str, Any]], include_secrets: bool) -> str | None:
    """The request as a curl command line that reproduces it exactly (None for non-HTTP exchanges)."""
    if include_secrets:
        sent = [{**w, "headers": target.reveal_headers(w["headers"])}
                if w.get("direction") == "out" and type(w.get("headers")) is list else w for w in wire]
        return _curl(reveal(target.url), sent, True)
    return _curl(str(target.url), wire, False)  # the frames hold the secret values as masks already


def _curl(url: str, wire: list[dict[str, Any]], include_secrets: bool) -> str | None:
    sent, _, _ = har_file.parts(wire)
    if sent is None or sent.get("headers") is None:
        return None
    # --globoff: curl reads {a,b} and [1-3] in a URL as patterns and sends one request for each URL they make.
    # --path-as-is: the path goes as the console sent it (httpx has already taken its dot segments out).
    posted = sent.get("url")  # a 2024-11-05 POST went to the endpoint its stream named
    # (curl refuses a space.) A masked command keeps its masks readable: it cannot be run as it stands anyway.
    shown_url = _shown(posted, include_secrets) if posted else request_url(url) if include_secrets else url
    lines = [f"curl -sS --globoff --path-as-is -X POST {shell_word(shown_url)}"]
    header = LIVE_SESSION_NOTE + "\n" if needs_live_session(sent.get("headers")) else ""
    header += LIVE_STREAM_NOTE + "\n" if posted else ""
    for name, shown in _shown_pairs(sent["headers"], include_secrets):
        if name.lower() in CURL_SKIP:
            continue
        # curl reads "name:" with nothing after it as "do not send this header"; "name;" sends it empty.
        lines.append(f"  -H {shell_word(f'{name}: {shown}' if shown.strip() else f'{name};')}")
    body = shell_word(sent["raw"])
    if len(body.encode("utf-8", "surrogatepass")) <= ARGUMENT_ROOM:
        lines.append(f"  --data-raw {body}")
        return header + " \\\n".join(lines)
    lines.append("  --data-binary @-")  # read whole before it is sent: a Content-Length, as the console sent
    return header + f"printf %s {body} |\n" + " \\\n".join(lines)


def shell_word(text: str) -> str:
    """`text` as one bash word that reads back as exactly its UTF-8 bytes and holds no control or format character.

    shlex.quote keeps every character as it is: a target's tool name holding DEL, pasted into a shell that reads
    the paste as typed keys, rubbed out the quote that reopens the word after an escaped `'`, and the rest of the
    name ran as a command (ESC and C1 controls act on the terminal; a bidi override makes the line read as
    another). Such text goes as bash's $'...', each of those characters as its bytes (backslash, x, 2 hex digits).
    """
    if not any(_unprintable(char) for char in text):
        return shlex.quote(text)
    return "$'" + "".join(_escaped(char) for char in text) + "'"


def _unprintable(char: str) -> bool:
    # Cc, Cf, Cs, Co, Cn (controls, format characters such as bidi and zero-width ones, surrogates, private use,
    # unassigned), Zl, Zp, and every space but the ASCII one: each acts on a terminal, hides, or looks like another.
    return char != " " and unicodedata.category(char)[0] in "CZ"


def _escaped(char: str) -> str:
    if char in "\\'":
        return "\\" + char
    if _unprintable(char):
        return "".join(f"\\x{byte:02x}" for byte in char.encode("utf-8", "surrogatepass"))
    return char


def needs_live_session(headers: list[list[str]] | list[tuple[str, str]] | None) -> bool:
    """True when a request went with an Mcp-Session-Id: repeating it needs that session still open."""
    return any(name.lower() == SESSION_HEADER for name, _ in headers or [])

