"""Attacks on the websocket feed of a console started as `mcp-console serve` is: limits that live in its server."""

from __future__ import annotations

import json
import queue
import re
import subprocess
import sys
import threading
from typing import TYPE_CHECKING

import httpx
import pytest
from websockets.asyncio.client import connect

from tests.integration.conftest import (
    AUTH,
    JSON,
    OWNER_COOKIE,
    REPO_ROOT,
    TOKEN,
    WS_DEADLINE_S,
    child_env,
    free_port,
    pump,
    stop_process,
    wait_for_line,
    ws_closed,
)

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

STARTUP_TIMEOUT_S = 30.0
MESSAGE_TOO_BIG = 1009


@pytest.fixture
def served_console(tmp_path: Path) -> Iterator[tuple[str, int]]:
    """A console process; its public host name and port."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "app", "serve", "--port", str(port), "--data-dir", str(tmp_path)],
                            cwd=REPO_ROOT, env={**child_env(), "MCP_CONSOLE_TOKEN": TOKEN},
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        assert proc.stdout is not None
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=pump, args=(proc.stdout, lines), name="console-out", daemon=True).start()
        launch = re.compile(rf"http://(mcp-[a-z2-7]+\.localhost):{port}/\?token=")
        line, seen = wait_for_line(lines, proc, lambda text: bool(launch.search(text)), STARTUP_TIMEOUT_S)
        if line is None:
            pytest.fail(f"the console did not start: {''.join(seen)!r}")
        match = launch.search(line)
        assert match is not None
        yield match[1], port
    finally:
        stop_process(proc)


async def test_a_websocket_message_far_larger_than_a_hello_is_refused_as_too_big(
        served_console: tuple[str, int], demo_url: str) -> None:
    """A tab sends one message, its hello of a few bytes; uvicorn's default let every socket hand the console a
    16 MiB message to buffer and decode (a few times that in memory), twenty sockets per share link."""
    host, port = served_console
    public = f"{host}:{port}"
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", headers={**AUTH, "Host": public},
                                 timeout=WS_DEADLINE_S) as owner:
        made = await owner.post("/sessions", data={"kind": "http", "url": demo_url}, headers=JSON)
        assert made.status_code == 200, made.text
        sid = made.json()["id"]
        async with connect(f"ws://{public}/sessions/{sid}/ws", host="127.0.0.1", port=port,
                           open_timeout=WS_DEADLINE_S, max_size=None,
                           additional_headers={"Cookie": f"{OWNER_COOKIE}={TOKEN}",
                                               "Origin": f"http://{public}"}) as ws:
            await ws.send(json.dumps({"last_seq": 0}))
            await ws.send("x" * (1024 * 1024))
            _, close = await ws_closed(ws)
    assert close is not None and close.code == MESSAGE_TOO_BIG, close
