"""Results nested as deep as the console's frame decoder takes: every JSON twin still answers."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.integration.conftest import Console


async def test_a_result_nested_as_deep_as_the_decoder_takes_leaves_the_sessions_json_twins_answering(
        console: Console, hostile_http: Callable[..., str]) -> None:
    s = await console.connect(kind="http", url=hostile_http("forms"))
    sid = s["id"]
    # The deepest result the decoder takes depends on the stack it runs on: find it (deeper ones are bad frames).
    deepest = None
    for n in range(1000, 700, -10):
        reply = await console.call_tool(sid, "deep_result", n=str(n))
        if reply["ok"] and "structuredContent" in (reply.get("result") or {}):
            deepest = reply
            break
    assert deepest is not None, "no deep result was taken at all"
    key = deepest["key"]
    for path in (f"/sessions/{sid}.json", f"/sessions/{sid}/entries/{key}.json", f"/sessions/{sid}",
                 f"/sessions/{sid}/entries/{key}", f"/sessions/{sid}/export.json", f"/sessions/{sid}/export.har"):
        shown = await console.http.get(path)
        assert shown.status_code == 200, (path, shown.status_code, shown.text[:200])
        if "/export." in path:  # streamed: a failure midway would still have said 200, and cut the file short
            assert shown.text.rstrip().endswith("]}}" if path.endswith(".har") else "]}"), (path, shown.text[-200:])
            assert "deep_result" in shown.text
    assert (await console.session(sid))["status"] == "connected"
