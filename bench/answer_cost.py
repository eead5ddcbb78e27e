"""What the client pays to read the console's answer, apart from anything the console does.

`bench.latency` times the whole client call, so its console figure includes the client's own work on the console's
answer: four more response headers for h11 and httpx to parse (the security headers and `cache-control`) and a
1.4 kB JSON body with the operation beside the result, against the demo server's 0.3 kB. This bench measures that
part alone.

It makes one real `tools/call` through a console on the demo server and one direct call, as `bench.latency` does,
and keeps the raw bytes of both answers. A child process then serves those bytes back, canned, on four ports:
the console's answer, the direct answer, and each one's body under the other's headers. The client calls all four
exactly as `bench.latency` calls the console (the form POST) and the direct side (the JSON POST), in a shuffled
order every round, so the difference between the series is the client reading a different answer and sending a
different request, and nothing else.

    .venv/bin/python -m bench.answer_cost [--calls 3000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from bench.common import Proc, Rig, emit_json, median, percentile, print_table, r
from bench.latency import request_template

CANNED_READY = re.compile(r"canned answers on ports (\S+)")
SERIES = ("console answer", "console body, direct headers", "direct body, console headers", "direct answer")


def _raw_answer(url: str, request: bytes) -> bytes:
    """One request on a fresh socket, and the whole answer's bytes (read up to its Content-Length)."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80), timeout=10) as sock:
        sock.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data or len(data) < _answer_length(data):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    return data


def _answer_length(data: bytes) -> int:
    head, _, _ = data.partition(b"\r\n\r\n")
    found = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    if found is None:
        raise RuntimeError(f"an answer without Content-Length: {head[:200]!r}")
    return len(head) + 4 + int(found.group(1))


def _recut(head: bytes, body: bytes) -> bytes:
    """`head`'s headers over `body`, with the Content-Length made right."""
    lines = [line for line in head.split(b"\r\n") if not line.lower().startswith(b"content-length:")]
    return b"\r\n".join([*lines, b"content-length: %d" % len(body)]) + b"\r\n\r\n" + body


def captured(rig: Rig, session_id: str) -> tuple[bytes, bytes, dict[str, Any], dict[str, str]]:
    """The raw bytes of one console answer and one direct answer, and the direct call's body and headers."""
    body, headers = request_template(rig, session_id)
    parts = urlsplit(rig.base)
    form = b"tool=echo&arg.text=hi"
    console_request = (f"POST /sessions/{session_id}/tools/call HTTP/1.1\r\nHost: {parts.netloc}\r\n"
                       f"Authorization: Bearer {rig.token}\r\nAccept: application/json\r\n"
                       "Content-Type: application/x-www-form-urlencoded\r\n"
                       f"Content-Length: {len(form)}\r\n\r\n").encode() + form
    target = urlsplit(rig.demo_url)
    payload = json.dumps({**body, "id": 9_000_000}).encode()
    direct_request = (f"POST {target.path or '/'} HTTP/1.1\r\nHost: {target.netloc}\r\n"
                      + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
                      + f"Content-Length: {len(payload)}\r\n\r\n").encode() + payload
    return _raw_answer(rig.base, console_request), _raw_answer(rig.demo_url, direct_request), body, headers


# -- the canned server (a child process: the client's process must not share its CPU time with it) -------------

def serve(answers: list[bytes]) -> None:
    class Canned(asyncio.Protocol):
        def __init__(self, answer: bytes) -> None:
            self.answer, self.buffer, self.transport = answer, b"", None

        def connection_made(self, transport: Any) -> None:
            self.transport = transport

        def data_received(self, data: bytes) -> None:
            self.buffer += data
            while b"\r\n\r\n" in self.buffer and len(self.buffer) >= _answer_length(self.buffer):
                self.buffer = self.buffer[_answer_length(self.buffer):]
                self.transport.write(self.answer)  # type: ignore[union-attr]

    async def main() -> None:
        loop = asyncio.get_running_loop()
        servers = [await loop.create_server(lambda a=answer: Canned(a), "127.0.0.1", 0) for answer in answers]
        ports = [str(s.sockets[0].getsockname()[1]) for s in servers]
        print(f"canned answers on ports {','.join(ports)}", flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())


def run(calls: int) -> dict[str, Any]:
    with Rig() as rig:
        session_id = rig.open_demo_session()
        console_raw, direct_raw, body, headers = captured(rig, session_id)
        token = rig.token
    console_head, _, console_body = console_raw.partition(b"\r\n\r\n")
    direct_head, _, direct_body = direct_raw.partition(b"\r\n\r\n")
    answers = [console_raw, _recut(direct_head, console_body), _recut(console_head, direct_body), direct_raw]
    with tempfile.TemporaryDirectory(prefix="answer-cost-") as tmp:
        path = Path(tmp) / "answers.json"
        path.write_text(json.dumps([a.decode("latin-1") for a in answers]))
        server = Proc("canned", [sys.executable, "-m", "bench.answer_cost", "--serve", str(path)])
        try:
            ports = server.wait_for(CANNED_READY).group(1).split(",")
            return _measure(ports, calls, token, body, headers, len(console_head), len(console_body),
                            len(direct_head), len(direct_body))
        finally:
            server.stop()


def _measure(ports: list[str], calls: int, token: str, body: dict[str, Any], headers: dict[str, str],
             *sizes: int) -> dict[str, Any]:
    clients = [httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30.0,
                            headers={"Authorization": f"Bearer {token}", "Accept": "application/json"})
               for port in ports]
    times: dict[str, list[float]] = {name: [] for name in SERIES}

    def as_console(client: httpx.Client) -> None:  # the request bench.latency sends the console
        client.post("/sessions/s/tools/call", data={"tool": "echo", "arg.text": "hi"}).json()

    def as_direct(client: httpx.Client) -> None:  # the request bench.latency sends the demo server
        client.post("/mcp", json=body, headers=headers).json()

    steps = [(SERIES[0], clients[0], as_console), (SERIES[1], clients[1], as_console),
             (SERIES[2], clients[2], as_console), (SERIES[3], clients[3], as_direct)]
    try:
        for n in range(calls + 50):
            random.shuffle(steps)
            for name, client, call in steps:
                t0 = time.perf_counter()
                call(client)
                if n >= 50:
                    times[name].append((time.perf_counter() - t0) * 1e6)
    finally:
        for client in clients:
            client.close()
    base = median(times[SERIES[3]])
    print_table(f"the client's side of one call, canned answers, {calls} rounds, µs", ["series", "median", "p95",
                                                                                     "− direct"],
                [[name, r(median(t), 1), r(percentile(t, 95), 1), r(median(t) - base, 1)]
                 for name, t in times.items()])
    console_head, console_body, direct_head, direct_body = sizes
    print(f"\nanswer sizes: console head {console_head} B + body {console_body} B; "
          f"direct head {direct_head} B + body {direct_body} B")
    return {"calls": calls, "us": {name: r(median(t), 1) for name, t in times.items()},
            "console_answer_minus_direct_us": r(median(times[SERIES[0]]) - base, 1),
            "bytes": {"console_head": console_head, "console_body": console_body, "direct_head": direct_head,
                      "direct_body": direct_body}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve([a.encode("latin-1") for a in json.loads(Path(args.serve).read_text())])
        return
    emit_json("answer_cost", run(args.calls))


if __name__ == "__main__":
    main()
