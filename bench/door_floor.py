"""The console's own process up to its front door's checks, then the floor's forward: for `bench.latency_floor`.

Run the console under it: `BENCH_DOOR_FLOOR='{"target": URL, "headers": {...}, "body": {...}}'
python -m bench.door_floor app serve ...`. Before the console starts, `FrontDoor.__call__` is wrapped: a request
the front door would take (every check passed: body limit, Host/Origin, cookies, the owner token or link, the
route) is then answered as `bench/floor_proxy.py` answers it (its body read, one fixed call sent to the target with
the lean client, the result answered as JSON), and anything else goes on as it always does.

So this series is the console's process (its imports, its memory, its timers, its uvicorn with the coalescing
protocol) and its access checks, with none of its call path after them: no form, no operation, no session, no
client, no recording, no answer built from an operation. Its distance from the floor is what the checks and the
process cost; the console's distance from it is the call path itself. No product code carries this: it wraps from
outside, as `bench/step_probe.py` does.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
from typing import Any

from bench.floor_proxy import Forward, forwarder


def install(forward: Forward) -> None:
    from app.web.front_door import FrontDoor

    original = FrontDoor.__call__

    async def call(self: FrontDoor, scope: Any, receive: Any, send: Any) -> None:
        if self._take(scope, receive) is None:
            await original(self, scope, receive, send)
            return
        await forward(receive, send)

    FrontDoor.__call__ = call  # type: ignore[method-assign]


def main() -> None:
    if len(sys.argv) < 2 or "BENCH_DOOR_FLOOR" not in os.environ:
        sys.exit("usage: BENCH_DOOR_FLOOR='{\"target\": ..., \"headers\": ..., \"body\": ...}' "
                 "python -m bench.door_floor MODULE [ARGS...]")
    spec = json.loads(os.environ["BENCH_DOOR_FLOOR"])
    install(forwarder(spec["target"], spec["headers"], spec["body"]))
    module = sys.argv[1]
    sys.argv = [module, *sys.argv[2:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
