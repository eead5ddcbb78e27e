"""HAR 1.2 entries made from recorded wire events: one writer for the console's export and the CLI's `--har`.

An entry is one HTTP exchange: the request that went out (its headers and body as sent), the head that came
back (status line and headers) and the frames that answered it, as the text the wire carried (a stream's frames
as SSE again, so an SSE reader reads them back). It works on the wire events' dicts (`WireEvent.to_dict`, which is
also what the console stores), so the CLI's live events and a session's stored ones give the same entry. What
the caller adds: which headers are shown (masked or not) and what else it knows of the exchange (`_mcp`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from app.mcp.http import body_size
from app.mcp.sse import SSE_REBUILT, sse_text
from app.mcp.sse_transport import ANSWERED_ON_STREAM
from app.mcp.transport import REPLACED

Wire = dict[str, Any]
ShownHeaders = Callable[[list[Any] | None], list[dict[str, str]]]
# The times an entry may hold (seconds since 1970): from then to the year 3000, which every clock shows.
EARLIEST, LATEST = 0, 32_503_680_000


def log_head(creator: str, version: str) -> dict[str, Any]:
    return {"log": {"version": "1.2", "creator": {"name": creator, "version": version}, "pages": [], "entries": []}}


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


# The note the OAuth driver puts on the request it sends: "OAuth <step>: <METHOD> <url>".
OAUTH_REQUEST = re.compile(r"\AOAuth [^:]+: (GET|POST) (\S+)\Z")


def parts(wire: list[Wire]) -> tuple[Wire | None, Wire | None, list[Wire]]:
    """The request that went out, the HTTP head that came back, the frames that came back."""
    sent = next((w for w in wire if w["direction"] == "out"), None)
    head = next((w for w in wire if w["direction"] == "transport" and w.get("http_status") is not None), None)
    frames = [w for w in wire if w["direction"] == "in"]
    return sent, head, frames


def plain_headers(pairs: list[Any] | None) -> list[dict[str, str]]:
    return [{"name": k, "value": v} for k, v in pairs or []]


def entry(key: str, wire: list[Wire], url: str, shown: ShownHeaders = plain_headers,
          mcp: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The HAR entry of one exchange's wire events; None when it is no HTTP exchange (stdio frames have no
    headers) or nothing went out. `url` is the target's, as HAR shows it (no fragment); `mcp` is added to `_mcp`."""
    sent, head, frames = parts(wire)
    if sent is None or sent.get("headers") is None:
        return None
    body = sent["raw"]
    response_headers = (head or {}).get("headers") or []
    ctype = next((v for k, v in response_headers if k.lower() == "content-type"), "")
    oauth = OAUTH_REQUEST.match(sent.get("note") or "")
    method, posted_type = "POST", "application/json"
    if oauth is not None:  # an exchange of the OAuth flow (app/mcp/oauth/driver.py): a plain HTTP request of its own
        method = oauth.group(1)
        posted_type = next((v for k, v in sent.get("headers") or [] if k.lower() == "content-type"), "")
    # A 2024-11-05 POST is answered 202; its frames came on the SSE stream. The status and headers stay the POST's
    # (a 200 would be a lie a reader acts on), the content is the frames as the stream carried them, and says so.
    on_stream = sent.get("url") is not None and oauth is None
    streamed = on_stream or ctype.startswith("text/event-stream")
    text = sse_text(f["raw"] for f in frames) if streamed else "".join(f["raw"] for f in frames)
    comments = ([ANSWERED_ON_STREAM] if on_stream else []) + ([SSE_REBUILT] if streamed else [])
    # The text holds U+FFFD where the server's bytes were not text: said here too.
    comments += [w["note"] for w in wire if (w.get("note") or "").startswith(REPLACED)][:1]
    size = len(text.encode("utf-8", "surrogatepass"))  # an imported frame may hold a lone surrogate itself
    start = on_the_clock(sent["wall"])
    first = on_the_clock(head["wall"]) if head else start
    last = on_the_clock(frames[-1]["wall"]) if frames else first
    status = (head or {}).get("http_status") or 0
    note = (head or {}).get("note") or ""
    return {
        "startedDateTime": iso(start),
        "time": round((last - start) * 1000, 3),
        "request": {"method": method, "url": url, "httpVersion": "HTTP/1.1", "cookies": [],
                    "headers": shown(sent.get("headers")), "queryString": [],
                    **({"postData": {"mimeType": posted_type, "text": body}} if method == "POST" else {}),
                    "headersSize": -1,
                    "bodySize": len(body.encode("utf-8", "surrogatepass")) if method == "POST" else 0},
        "response": {"status": status, "statusText": note.split(" ", 2)[2] if note.count(" ") >= 2 else "",
                     "httpVersion": "HTTP/1.1", "cookies": [], "headers": shown(response_headers),
                     "content": {"size": size, "mimeType": "text/event-stream" if on_stream else ctype or "x-unknown",
                                 "text": text, **({"comment": "; ".join(comments)} if comments else {})},
                     "redirectURL": "", "headersSize": -1,
                     "bodySize": body_size(response_headers) if on_stream else size},
        "cache": {},
        "timings": {"send": 0, "wait": round((first - start) * 1000, 3), "receive": round((last - first) * 1000, 3)},
        "_mcp": {"exchange": key, "resultType": _result_type(frames), **(mcp or {}),
                 **({"answeredOn": "sse-stream"} if on_stream else {})},
    }


def _result_type(frames: list[Wire]) -> Any:
    if not frames:
        return None
    try:
        final = json.loads(frames[-1]["raw"])
    except (ValueError, RecursionError):  # not JSON, or nested deeper than this stack decodes: no resultType
        return None
    result = final.get("result") if isinstance(final, dict) else None
    return result.get("resultType") if isinstance(result, dict) else None
