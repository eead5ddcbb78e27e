"""Wire fidelity under attack: a hostile target (`tools_fidelity`) sends odd but legal bytes, and what the console
shows, exports and sends back is held beside what really crossed the wire."""

from __future__ import annotations

import base64
import html
import json
import re
from collections.abc import Callable
from typing import Any

from tests.hostile.fixtures import HostileUrl
from tests.integration.conftest import JSON, Console


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _answer(head: list[str], *body: bytes) -> list[str]:
    """The parts of a whole HTTP answer for the `say` tool: the head, then each piece of body as its own write."""
    first = ("HTTP/1.1 200 OK\r\n" + "\r\n".join([*head, "Connection: close"]) + "\r\n\r\n").encode("latin-1")
    return [_b64(first), *(_b64(piece) for piece in body)]


async def _say(console: Console, sid: str, parts: list[str]) -> dict[str, Any]:
    response = await console.http.post(f"/sessions/{sid}/tools/call", headers=JSON, data={
        "tool": "say", "mode": "json", "json": json.dumps({"parts": parts})})
    assert response.status_code == 200, response.text
    reply: dict[str, Any] = response.json()
    return reply


def _received(entry: dict[str, Any]) -> list[dict[str, Any]]:
    return [w for w in entry["wire"] if w["direction"] == "in"]


def _shown_frames(page: str) -> list[str]:
    """The text of each frame's box on the entry page, as a reader sees it."""
    return [html.unescape(re.sub(r"<[^>]+>", "", box)) for box in re.findall(r'<pre class="raw">(.*?)</pre>', page,
                                                                              re.S)]


ODD_RESULT = (b'{"jsonrpc":"2.0","id":@@ID@@,"result":{"resultType":"complete","content":[],"structuredContent":'
              b'{"a":1,"a":2,"z":-0,"inf":1e400,"f":1.0,"big":123456789012345678901234567890,"e":"caf\\u00e9",'
              b'"lone":"\\ud800","nul":"\\u0000"}}}')


async def test_the_frame_box_shows_the_targets_own_spelling_of_every_key_and_number(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    # Shown through a decode and re-encode, this answer read "a": 2 alone, "z": 0, "inf": Infinity (not JSON: the
    # target sent 1e400), "e": "café" and "lone": "�", in the box that stands for the frame as it came.
    sid = await console.connected_http(hostile_http("fidelity"))
    reply = await _say(console, sid, _answer(["Content-Type: application/json"], ODD_RESULT))
    (frame,) = _received(await console.entry(sid, reply["key"]))
    sent_by_target = ODD_RESULT.replace(b"@@ID@@", str(reply["id"]).encode()).decode()
    assert frame["raw"] == sent_by_target
    page = (await console.http.get(f"/sessions/{sid}/entries/{reply['key']}")).text
    shown = _shown_frames(page)[-1]
    assert re.sub(r"\s", "", shown) == sent_by_target  # laid out on lines, and nothing else changed
    for spelled in ('"a": 1', '"a": 2', '"z": -0', '"inf": 1e400', '"f": 1.0', r'"e": "caf\u00e9"',
                    r'"lone": "\ud800"', r'"nul": "\u0000"'):
        assert spelled in shown, spelled
