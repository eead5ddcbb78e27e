"""Session files, HAR 1.2 and cURL: what happened in a session, in forms that travel.

Secrets are masked unless the owner explicitly asks to include them.
"""

from __future__ import annotations

import json
import math
import shlex
import time
import unicodedata
from collections import OrderedDict
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from app import __version__
from app.console.events import EXCHANGE_KINDS, TimelineEvent
from app.console.secrets import Redactor, is_secret, mask_url, mask_value
from app.console.store import Store, iter_events
from app.console.target import Target
from app.mcp.http import body_size, request_url
from app.mcp.sse import SSE_REBUILT, sse_text
from app.mcp.sse_transport import ANSWERED_ON_STREAM, LIVE_STREAM_NOTE
from app.mcp.transport import REPLACED

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


# The times a session file may hold (seconds since 1970): from then to the year 3000, which every clock shows.
EARLIEST, LATEST = 0, 32_503_680_000


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def on_the_clock(ts: Any) -> float:
    """A frame's wall time held to the times a clock shows. An imported file's frame may say 1e12 or -1e308 (its
    event's own time is checked on import, a frame's wall is only a float): the HAR's dates and durations are
    made from it, and `iso` raised half-way through the streamed file."""
    if (type(ts) is float and not math.isfinite(ts)) or type(ts) not in (int, float):
        return float(EARLIEST)
    # Compared before any conversion: an int past a float's range (10**400) raised OverflowError in isfinite.
    return float(min(max(ts, EARLIEST), LATEST))


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


def exchanges(session_id: str, store: Store) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every exchange's entry facts, wire events and lint findings, in the order they started.

    Read in chunks; an exchange is handed on once it has finished (its frames and findings come before its
    end) and every exchange started before it has been handed on. One still open after OPEN_LIMIT later
    ones started (a long listen) goes as it stands then, so what is held stays bounded.
    """
    open_: OrderedDict[str, dict[str, Any]] = OrderedDict()
    for chunk in iter_events(store, session_id, kinds=(*EXCHANGE_KINDS, "wire", "finding")):
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
                item["wire"].append(event.data)
        while open_ and (next(iter(open_.values()))["done"] or len(open_) > OPEN_LIMIT):
            yield open_.popitem(last=False)
    yield from open_.items()


def _parts(wire: list[dict[str, Any]]) -> tuple[dict[str, Any] | None, dict[str, Any] | None, list[dict[str, Any]]]:
    sent = next((w for w in wire if w["direction"] == "out"), None)
    head = next((w for w in wire if w["direction"] == "transport" and w.get("http_status") is not None), None)
    frames = [w for w in wire if w["direction"] == "in"]
    return sent, head, frames


def _headers(pairs: list[list[str]] | None, include_secrets: bool) -> list[dict[str, str]]:
    return [{"name": k, "value": v if include_secrets or not is_secret(k) else mask_value(k, v)}
            for k, v in pairs or []]


def har(session_id: str, target: Target, store: Store, include_secrets: bool = False) -> Iterator[str]:
    """The HAR 1.2 log as pieces of text (joined, one JSON document), an exchange at a time."""
    redact = None if include_secrets else Redactor(target)  # typed values, wherever they were echoed
    url = _shown(target.url, include_secrets)
    yield json.dumps({"log": {"version": "1.2", "creator": {"name": "MCP Console", "version": __version__},
                              "pages": []}})[:-2] + ', "entries": ['
    sep = ""
    for key, item in exchanges(session_id, store):
        sent, head, frames = _parts(item["wire"])
        if sent is None or sent.get("headers") is None:
            continue  # not an HTTP exchange (stdio frames carry no headers)
        posted = sent.get("url")  # the 2024-11-05 endpoint: the POST went there, not to the target's URL
        har_entry = _har_entry(key, item["entry"], _shown(posted, include_secrets) if posted else url, sent, head,
                               frames, include_secrets)
        replaced = next((w["note"] for w in item["wire"] if (w.get("note") or "").startswith(REPLACED)), None)
        if replaced is not None:  # the text holds U+FFFD where the server's bytes were not text: said here too
            content = har_entry["response"]["content"]
            content["comment"] = f"{content['comment']}; {replaced}" if "comment" in content else replaced
        har_entry["_mcp"]["findings"] = item["findings"]  # the live lint's findings on this exchange's frames
        yield sep + json.dumps(har_entry if redact is None else redact(har_entry))
        sep = ", "
    yield "]}}"


def _shown(url: str, include_secrets: bool) -> str:
    """A request's URL as HAR 1.2 has it (no fragment), its query values masked unless secrets are included."""
    return request_url(url) if include_secrets else mask_url(request_url(url))


def _har_entry(key: str, entry: dict[str, Any], url: str, sent: dict[str, Any], head: dict[str, Any] | None,
               frames: list[dict[str, Any]], include_secrets: bool) -> dict[str, Any]:
    body = sent["raw"]
    response_headers = (head or {}).get("headers") or []
    ctype = next((v for k, v in response_headers if k.lower() == "content-type"), "")
    # A 2024-11-05 POST is answered 202; its frames came on the SSE stream. The status and headers stay the POST's
    # (a 200 would be a lie a reader acts on), the content is the frames as the stream carried them, and says so.
    on_stream = sent.get("url") is not None
    streamed = on_stream or ctype.startswith("text/event-stream")
    text = sse_text(f["raw"] for f in frames) if streamed else "".join(f["raw"] for f in frames)
    comment = "; ".join(([ANSWERED_ON_STREAM] if on_stream else []) + ([SSE_REBUILT] if streamed else []))
    size = len(text.encode("utf-8", "surrogatepass"))  # an imported frame may hold a lone surrogate itself
    start = on_the_clock(sent["wall"])
    first = on_the_clock(head["wall"]) if head else start
    last = on_the_clock(frames[-1]["wall"]) if frames else first
    status = (head or {}).get("http_status") or 0
    note = (head or {}).get("note") or ""
    result_type = None
    if frames:
        try:
            final = json.loads(frames[-1]["raw"])
            result_type = (final.get("result") or {}).get("resultType") if isinstance(final, dict) else None
        except (ValueError, RecursionError):  # not JSON, or nested deeper than this stack decodes: no resultType
            pass
    return {
        "startedDateTime": iso(start),
        "time": round((last - start) * 1000, 3),
        "request": {"method": "POST", "url": url, "httpVersion": "HTTP/1.1", "cookies": [],
                    "headers": _headers(sent.get("headers"), include_secrets), "queryString": [],
                    "postData": {"mimeType": "application/json", "text": body},
                    "headersSize": -1, "bodySize": len(body.encode("utf-8", "surrogatepass"))},
        "response": {"status": status, "statusText": note.split(" ", 2)[2] if note.count(" ") >= 2 else "",
                     "httpVersion": "HTTP/1.1", "cookies": [], "headers": _headers(response_headers, include_secrets),
                     "content": {"size": size, "mimeType": "text/event-stream" if on_stream else ctype or "x-unknown",
                                 "text": text, **({"comment": comment} if comment else {})},
                     "redirectURL": "", "headersSize": -1,
                     "bodySize": body_size(response_headers) if on_stream else size},
        "cache": {},
        "timings": {"send": 0, "wait": round((first - start) * 1000, 3), "receive": round((last - first) * 1000, 3)},
        "_mcp": {"exchange": key, "method": entry.get("method"), "jsonrpcId": entry.get("id"),
                 "operationId": entry.get("op"), "round": entry.get("round"),
                 "subscriptionId": entry.get("id") if entry.get("method") == "subscriptions/listen" else None,
                 "resultType": result_type, "status": entry.get("status"),
                 **({"answeredOn": "sse-stream"} if on_stream else {})},
    }


def curl(target: Target, wire: list[dict[str, Any]], include_secrets: bool) -> str | None:
    """The request as a curl command line that reproduces it exactly (None for non-HTTP exchanges)."""
    if include_secrets:
        return _curl(target.url, wire, True)
    redact = Redactor(target)  # the sent headers' typed values first (short ones too), then any typed text
    command = _curl(target.url, [redact(w) if w.get("direction") == "out" else w for w in wire], False)
    return None if command is None else redact.text(command)


def _curl(url: str, wire: list[dict[str, Any]], include_secrets: bool) -> str | None:
    sent, _, _ = _parts(wire)
    if sent is None or sent.get("headers") is None:
        return None
    # --globoff: curl reads {a,b} and [1-3] in a URL as patterns and sends one request for each URL they make.
    # --path-as-is: the path goes as the console sent it (httpx has already taken its dot segments out).
    posted = sent.get("url")  # a 2024-11-05 POST went to the endpoint its stream named
    shown_url = _shown(posted or url, include_secrets)  # (curl refuses a space)
    lines = [f"curl -sS --globoff --path-as-is -X POST {shell_word(shown_url)}"]
    header = LIVE_SESSION_NOTE + "\n" if needs_live_session(sent.get("headers")) else ""
    header += LIVE_STREAM_NOTE + "\n" if posted else ""
    for name, value in sent["headers"]:
        if name.lower() in CURL_SKIP:
            continue
        shown = value if include_secrets or not is_secret(name) else mask_value(name, value)
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

