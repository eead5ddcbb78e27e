"""A server author's stdio loop against the real @modelcontextprotocol/server-memory: its environment given as
the shell would (`NAME=value node …`) or in the Environment field, a crashed server restarted from its page with
the same command, environment and directory, and failed tries that do not pile up in the sessions list."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import JSON, Console, eventually
from tests.realservers.fixtures import ROOT, memory_argv, needs_memory

pytestmark = [needs_memory, pytest.mark.slow]
STARTUP_S = 60.0
STARTED = re.compile(r"started pid (\d+)")


def _pids(s: dict[str, Any]) -> list[int]:
    return [int(m.group(1)) for e in s["timeline"] if e.get("kind") == "notice"
            for m in [STARTED.search(str(e.get("message") or ""))] if m]


async def _remember(console: Console, sid: str, name: str) -> None:
    response = await console.http.post(f"/sessions/{sid}/tools/call", headers=JSON, data={
        "tool": "create_entities", "mode": "json",
        "json": json.dumps({"entities": [{"name": name, "entityType": "person", "observations": ["x"]}]})})
    assert response.status_code == 200, response.text
    assert response.json()["operation"]["status"] == "complete", response.json()


async def _graph(console: Console, sid: str) -> str:
    reply = await console.call_tool(sid, "read_graph")
    return json.dumps(reply.get("result") or reply)


@pytest.mark.parametrize("how", ["in the command", "in the environment field"])
async def test_the_memory_servers_file_is_set_by_an_environment_variable(
        console: Console, tmp_path: Path, how: str) -> None:
    memory = tmp_path / "memory.jsonl"
    command = shlex.join(memory_argv())
    form = {"kind": "stdio", "cwd": str(ROOT)}
    if how == "in the command":
        form["command"] = f"MEMORY_FILE_PATH={shlex.quote(str(memory))} {command}"
    else:
        form |= {"command": command, "env": f"MEMORY_FILE_PATH={memory}\n"}
    s = await console.connect(timeout=STARTUP_S, **form)
    assert s["status"] == "connected", s["status_message"]
    await _remember(console, s["id"], "Ada")
    assert "Ada" in memory.read_text()


async def test_a_crashed_stdio_server_is_restarted_with_the_same_command_and_environment(
        console: Console, tmp_path: Path) -> None:
    memory = tmp_path / "memory.jsonl"
    s = await console.connect(timeout=STARTUP_S, kind="stdio", cwd=str(ROOT), command=shlex.join(memory_argv()),
                              env=f"MEMORY_FILE_PATH={memory}")
    sid = s["id"]
    await _remember(console, sid, "Grace")
    [pid] = _pids(s)
    os.kill(pid, signal.SIGTERM)
    down = await eventually(lambda: _status_in(console, sid, {"unreachable", "failed", "closed"}), timeout=STARTUP_S,
                            what="the session to notice its server died")
    page = (await console.http.get(f"/sessions/{sid}")).text
    assert "Restart the server" in page, down["status"]

    response = await console.http.post(f"/sessions/{sid}/reconnect")
    assert response.status_code == 303, response.text
    again = await eventually(lambda: _status_in(console, sid, {"connected"}), timeout=STARTUP_S,
                             what="the restarted server to connect")
    assert len(_pids(again)) == 2 and _pids(again)[0] != pid
    assert "Grace" in await _graph(console, sid)  # the same MEMORY_FILE_PATH: it read back what it wrote


async def _status_in(console: Console, sid: str, wanted: set[str]) -> dict[str, Any] | None:
    s = await console.session(sid)
    return s if s["status"] in wanted else None


async def test_a_retry_of_a_first_try_that_never_connected_replaces_it_unless_kept(
        console: Console, tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-server")
    first = await console.connect(kind="stdio", command=missing)
    assert first["status"] == "failed"
    page = (await console.http.get(f"/sessions/{first['id']}")).text
    assert "Discard this try" in page and 'name="replaces"' in page

    second = await console.connect(kind="stdio", command=missing, replaces=first["id"])
    listed = {s["id"] for s in (await console.http.get("/sessions.json")).json()["sessions"]}
    assert first["id"] not in listed and second["id"] in listed

    third = await console.connect(kind="stdio", command=missing, replaces=second["id"], keep_failed="1")
    listed = {s["id"] for s in (await console.http.get("/sessions.json")).json()["sessions"]}
    assert {second["id"], third["id"]} <= listed


async def test_a_stdio_sessions_har_says_why_it_has_no_entries(console: Console, tmp_path: Path) -> None:
    s = await console.connect(timeout=STARTUP_S, kind="stdio", cwd=str(ROOT), command=shlex.join(memory_argv()),
                              env=f"MEMORY_FILE_PATH={tmp_path / 'm.jsonl'}")
    response = await console.http.get(f"/sessions/{s['id']}/export.har")
    log = response.json()["log"]
    assert log["entries"] == [] and "stdio session" in log["comment"]
