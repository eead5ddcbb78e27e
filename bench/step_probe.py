"""Wall-clock stamps at the steps of each HTTP request a process serves, for `bench.latency_steps`.

Run a server module under it: `python -m bench.step_probe MODULE ARGS...` (e.g. `app serve --port 8765` or
`bench.floor_proxy ...`). Before the module runs, it wraps a few methods of the parts the console and the floor
proxy share, so the same stamps are taken in both and no product code carries a probe:

- arrive: the last bytes of the request read (uvicorn's `HttpToolsProtocol.data_received`);
- app: the ASGI app called (uvicorn's `RequestResponseCycle.run_asgi`);
- sent: the request to the target on the socket (the lean client's `on_sent`, which runs right after the write);
- head: the target's answer head parsed and handed back (`LeanPool.request` returns);
- answer: the answer's head given to uvicorn (`http.response.start`);
- written: the answer on the client's socket (uvicorn's last body send, or the console's coalesced write after it);
- and inside the wait for the target, the first flush of held events (`Timeline._scheduled_flush`), if any.

Every 500 requests, and when the process exits, the rows of the latest requests are written as JSON to the file
named by BENCH_STEP_PROBE_OUT. The wrappers cost a few microseconds per request; both sides pay them.
"""

from __future__ import annotations

import atexit
import json
import os
import runpy
import sys
import time
from collections.abc import Callable
from typing import Any

ROWS: list[dict[str, float]] = []
KEEP = 20_000
_now = time.perf_counter
_current: dict[str, float] = {}
_arrived = [0.0]
_awaiting_write: list[dict[str, float]] = []
_last_write = [0.0]  # when the console's coalescing transport last put bytes on a socket


def _dump() -> None:
    out = os.environ.get("BENCH_STEP_PROBE_OUT")
    if out:
        tmp = out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(ROWS[-KEEP:], f)
        os.replace(tmp, out)


def _finish(row: dict[str, float], written: float | None = None) -> None:
    row["written"] = written or _now()
    ROWS.append(row)
    if len(ROWS) % 500 == 0:
        _dump()
    if len(ROWS) > 2 * KEEP:
        del ROWS[:KEEP]


def install() -> None:
    from uvicorn.protocols.http import httptools_impl

    from app.mcp import lean_http

    protocol = httptools_impl.HttpToolsProtocol
    cycle = httptools_impl.RequestResponseCycle
    received: Callable[..., Any] = protocol.data_received
    run_asgi: Callable[..., Any] = cycle.run_asgi
    send: Callable[..., Any] = cycle.send
    request: Callable[..., Any] = lean_http.LeanPool.request

    def data_received(self: Any, data: bytes) -> None:
        _arrived[0] = _now()
        received(self, data)

    async def run_asgi_stamped(self: Any, app: Any) -> None:
        global _current
        _current = {"arrive": _arrived[0], "app": _now()}
        await run_asgi(self, app)

    async def send_stamped(self: Any, message: Any) -> None:
        row = _current
        if message["type"] == "http.response.start":
            row.setdefault("answer", _now())
        await send(self, message)
        if message["type"] == "http.response.body" and not message.get("more_body", False) and "answer" in row:
            if hasattr(self.transport, "flush") and _last_write[0] < row["answer"]:
                _awaiting_write.append(row)  # the console's coalescing transport: written at its next flush
            else:
                _finish(row, _last_write[0] if hasattr(self.transport, "flush") else None)

    async def request_stamped(self: Any, origin: Any, head: bytes, body: bytes, timeout: Any,
                              on_sent: Callable[[], None] | None = None) -> Any:
        row = _current

        def sent() -> None:
            row.setdefault("sent", _now())
            if on_sent is not None:
                on_sent()

        answer = await request(self, origin, head, body, timeout, on_sent=sent)
        row.setdefault("head", _now())
        return answer

    protocol.data_received = data_received  # type: ignore[method-assign]
    cycle.run_asgi = run_asgi_stamped  # type: ignore[method-assign]
    cycle.send = send_stamped  # type: ignore[method-assign]
    lean_http.LeanPool.request = request_stamped  # type: ignore[method-assign]

    try:
        from app.web import wire_writes
    except ImportError:  # pragma: no cover - the floor needs none of the web app
        return
    flush: Callable[..., Any] = wire_writes.CoalescingTransport.flush

    def flush_stamped(self: Any) -> None:
        writes = self.writes
        flush(self)
        if self.writes != writes:  # bytes went out (a flush with nothing held writes nothing)
            _last_write[0] = _now()
            while _awaiting_write:
                _finish(_awaiting_write.pop(), _last_write[0])

    wire_writes.CoalescingTransport.flush = flush_stamped  # type: ignore[method-assign]

    from app.console import timeline
    scheduled: Callable[..., Any] = timeline.Timeline._scheduled_flush

    def scheduled_stamped(self: Any) -> None:
        row = _current
        start = _now()
        scheduled(self)
        if "sent" in row and "head" not in row and "flush_start" not in row:
            row["flush_start"], row["flush_end"] = start, _now()

    timeline.Timeline._scheduled_flush = scheduled_stamped  # type: ignore[method-assign]
    if os.environ.get("BENCH_STEP_PROBE_FINE"):
        _install_fine()


# The console's layers a call passes, in order: (module, class or None, function, stamp on entry, stamp on return).
# Each wrapper costs the console a microsecond or two, so the fine steps add up to a little more than the coarse.
FINE_POINTS = [
    ("app.web.front_door", "FrontDoor", "_take", "checks", "checked"),
    ("app.web.actions", None, "form_input", "form", "formed"),
    ("app.console.operations", "OperationDriver", "create", "create", "created"),
    ("app.console.operations", "OperationDriver", "run", "op_run", "op_ran"),
    ("app.console.session", "ConsoleSession", "run", "session_run", "session_ran"),
    ("app.mcp.client", "McpClient", "request", "client", "client_done"),
    ("app.mcp.http", "HttpTransport", "open", "transport", "transport_done"),
    ("app.mcp.lean_http", "LeanPool", "request", "pool", "pool_done"),
]
# The order the stamps of one call come in (`bench.latency_steps --fine` prints the step between each two).
FINE_ORDER = ["app", "checks", "checked", "form", "formed", "create", "created", "op_run", "session_run", "client",
              "transport", "pool", "sent", "head", "pool_done", "transport_done", "client_done", "session_ran",
              "op_ran", "answer", "written"]


def _stamp(name: str) -> None:
    _current.setdefault(name, _now())


def _install_fine() -> None:
    import functools
    import importlib
    import inspect

    for module_name, class_name, name, before, after in FINE_POINTS:
        module = importlib.import_module(module_name)
        owner: Any = getattr(module, class_name) if class_name else module
        real = getattr(owner, name)
        if inspect.iscoroutinefunction(real):
            async def wrapped(*args: Any, _real: Any = real, _b: str = before, _a: str = after, **kw: Any) -> Any:
                _stamp(_b)
                try:
                    return await _real(*args, **kw)
                finally:
                    _stamp(_a)
        else:
            def wrapped(*args: Any, _real: Any = real, _b: str = before, _a: str = after,  # type: ignore[misc]
                        **kw: Any) -> Any:
                _stamp(_b)
                try:
                    return _real(*args, **kw)
                finally:
                    _stamp(_a)
        setattr(owner, name, functools.wraps(real)(wrapped))


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: python -m bench.step_probe MODULE [ARGS...]")
    install()
    atexit.register(_dump)
    module = sys.argv[1]
    sys.argv = [module, *sys.argv[2:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
