"""Counts of the Python calls one HTTP request makes, step by step, for `bench.call_path`.

Run a server module under it: `python -m bench.call_probe MODULE ARGS...` (the console, `app serve ...`, or
`bench.floor_proxy ...`). It wraps the same points of the parts both share as `bench/step_probe.py` does, and for
the request numbered BENCH_CALL_PROBE_AT (default 200: after the warm-up, caches and lazy imports settled) it turns
on `sys.setprofile` on the event loop's thread and counts every Python function call and every call into C, by
function, in three steps:

- `in`: from the request's head read (uvicorn's `data_received`) to the request to the target on its socket;
- `wait`: from there to the target's answer head (the console's flush of held events runs here);
- `out`: from the answer head to the answer's last body handed to uvicorn.

Then the counts are written as JSON to BENCH_CALL_PROBE_OUT and profiling stops. A count does not depend on the
machine's speed or load: it is the length of the path, which is what a call's time grows with when every call runs
with cold caches (README, issue 13).
"""

from __future__ import annotations

import json
import os
import runpy
import sys
from collections import Counter
from collections.abc import Callable
from types import FrameType
from typing import Any

AT = int(os.environ.get("BENCH_CALL_PROBE_AT", "200"))
# Requests AT, AT+1, ... are counted each on its own: a timer or a callback of something else that happens to run
# inside one request's step (more likely on a loaded machine) shows as calls of that request only, and a reader
# takes the least of each step (`bench.call_path`).
COUNTED = int(os.environ.get("BENCH_CALL_PROBE_COUNT", "3"))
STEPS = ("in", "wait", "out")
_step: list[str | None] = [None]
_python: dict[str, Counter[str]] = {step: Counter() for step in STEPS}
_native: dict[str, Counter[str]] = {step: Counter() for step in STEPS}
_done: list[dict[str, Any]] = []  # the counts of each request counted so far
_seen = [0]


def _where(filename: str) -> str:
    for marker in ("site-packages/", "/lib/python3."):
        if marker in filename:
            tail = filename.split(marker, 1)[1]
            return tail.split("/", 1)[1] if marker.startswith("/lib") else tail
    return os.path.relpath(filename)


def _count(frame: FrameType, event: str, arg: Any) -> None:
    step = _step[0]
    if step is None:
        return
    if event == "call":
        code = frame.f_code
        where = _where(code.co_filename)
        if where == "<string>" and "self" in frame.f_locals:  # a dataclass's generated __init__: name its class
            where = f"<string> {type(frame.f_locals['self']).__qualname__}"
        _python[step][f"{where}:{code.co_name}"] += 1
    elif event == "c_call":
        _native[step][getattr(arg, "__qualname__", repr(arg))] += 1


def _counting() -> bool:
    return AT <= _seen[0] < AT + COUNTED


def _move(from_step: str | None, to_step: str | None) -> None:
    if _step[0] != from_step or (from_step is None and not _counting()):
        return
    _step[0] = to_step
    if to_step is None:
        sys.setprofile(None)
        _done.append({"python": {s: dict(c) for s, c in _python.items()},
                      "native": {s: dict(c) for s, c in _native.items()}})
        for counter in (*_python.values(), *_native.values()):
            counter.clear()
        out = os.environ.get("BENCH_CALL_PROBE_OUT")
        if out and len(_done) == COUNTED:
            with open(out + ".tmp", "w") as f:
                json.dump(_done, f)
            os.replace(out + ".tmp", out)


def install() -> None:
    from uvicorn.protocols.http import httptools_impl

    from app.mcp import lean_http

    protocol = httptools_impl.HttpToolsProtocol
    cycle = httptools_impl.RequestResponseCycle
    received: Callable[..., Any] = protocol.data_received
    send: Callable[..., Any] = cycle.send
    request: Callable[..., Any] = lean_http.LeanPool.request

    def data_received(self: Any, data: bytes) -> None:
        # A request's head: httpx may send the form body in a second write, which this step then includes.
        if data.startswith(b"POST /sessions/"):
            _seen[0] += 1
            if _counting():
                _step[0] = None
                sys.setprofile(_count)
                _move(None, "in")
        received(self, data)

    async def request_counted(self: Any, origin: Any, head: bytes, body: bytes, timeout: Any,
                              on_sent: Callable[[], None] | None = None) -> Any:
        def sent() -> None:
            _move("in", "wait")
            if on_sent is not None:
                on_sent()

        answer = await request(self, origin, head, body, timeout, on_sent=sent)
        _move("wait", "out")
        return answer

    async def send_counted(self: Any, message: Any) -> None:
        await send(self, message)
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            _move("out", None)

    protocol.data_received = data_received  # type: ignore[method-assign]
    cycle.send = send_counted  # type: ignore[method-assign]
    lean_http.LeanPool.request = request_counted  # type: ignore[method-assign]


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: python -m bench.call_probe MODULE [ARGS...]")
    install()
    module = sys.argv[1]
    sys.argv = [module, *sys.argv[2:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
