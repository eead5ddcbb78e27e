"""Roots are the owner's: a session sends none until the owner sets some, and every roots exchange is on the
timeline. Against the real @modelcontextprotocol/server-filesystem over stdio (a 2025-11-25 server that replaces
the directories it was started with by the client's roots, when the client offers any)."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import JSON, Console, eventually, mcp_console
from tests.realservers.fixtures import ROOT, filesystem_argv, needs_filesystem

pytestmark = [needs_filesystem, pytest.mark.slow]
STARTUP_S = 60.0  # node starting on a busy 2-core machine


async def _filesystem(console: Console, directory: Path) -> dict[str, Any]:
    s = await console.connect(timeout=STARTUP_S, kind="stdio", command=shlex.join(filesystem_argv(directory)),
                              cwd=str(ROOT))
    assert s["status"] == "connected", s["status_message"]
    return s


async def _read(console: Console, sid: str, path: Path) -> str:
    reply = await console.call_tool(sid, "read_text_file", path=str(path))
    return json.dumps(reply.get("result") or reply)


def _roots_answers(s: dict[str, Any]) -> list[Any]:
    """The roots each recorded roots/list got back, oldest first."""
    answers = []
    for r in s.get("server_requests") or []:
        if r.get("method") == "roots/list":
            answers.append((r.get("response") or {}).get("result", {}).get("roots"))
    return answers


async def test_a_new_session_sends_no_roots_so_the_server_keeps_the_directory_it_was_started_on(
        console: Console, tmp_path: Path) -> None:
    (tmp_path / "hello.txt").write_text("hello from the user's directory")
    s = await _filesystem(console, tmp_path)
    text = await _read(console, s["id"], tmp_path / "hello.txt")
    assert "hello from the user's directory" in text, text
    assert s["roots"] == []


async def test_roots_the_owner_sets_reach_the_server_and_each_roots_request_is_on_the_timeline(
        console: Console, tmp_path: Path) -> None:
    started, chosen = tmp_path / "started", tmp_path / "chosen"
    started.mkdir()
    chosen.mkdir()
    (chosen / "note.txt").write_text("in the chosen root")
    s = await _filesystem(console, started)
    sid = s["id"]
    response = await console.http.post(f"/sessions/{sid}/roots", headers=JSON,
                                       data={"roots": f"{chosen.as_uri()} Chosen"})
    assert response.status_code == 200, response.text

    async def asked() -> dict[str, Any] | None:
        now = await console.session(sid)
        return now if any(a and a[0]["uri"] == chosen.as_uri() for a in _roots_answers(now)) else None

    now = await eventually(asked, timeout=STARTUP_S, what="server-filesystem to ask for the changed roots")
    text = await eventually(lambda: _contains(console, sid, chosen / "note.txt", "in the chosen root"),
                            timeout=STARTUP_S, what="server-filesystem to allow the chosen root")
    assert "in the chosen root" in text
    said = [e["message"] for e in now["timeline"] if e.get("kind") == "notice"]
    assert "sent notifications/roots/list_changed" in said, said
    [asked] = [m for m in said if m.startswith("the server asked roots/list")]
    assert f"answered at once with 1 root: {chosen.as_uri()}" in asked, asked


async def _contains(console: Console, sid: str, path: Path, wanted: str) -> str | None:
    text = await _read(console, sid, path)
    return text if wanted in text else None


async def test_the_default_roots_setting_is_what_a_new_session_starts_with(
        make_console: Callable[..., Console], tmp_path: Path) -> None:
    chosen = tmp_path / "chosen"
    chosen.mkdir()
    (chosen / "note.txt").write_text("the default root")
    console = make_console(default_roots=f"{chosen.as_uri()} Default")
    s = await _filesystem(console, tmp_path)
    assert s["roots"] == [{"uri": chosen.as_uri(), "name": "Default"}]
    text = await eventually(lambda: _contains(console, s["id"], chosen / "note.txt", "the default root"),
                            timeout=STARTUP_S, what="server-filesystem to allow the default root")
    assert "the default root" in text


def test_a_default_root_that_is_not_a_file_uri_refuses_to_start_the_console(tmp_path: Path) -> None:
    done = mcp_console("serve", "--port", "0", "--data-dir", str(tmp_path), "--root", "https://example.com/x")
    assert done.returncode != 0
    assert "a root must be a file:// URI" in done.stderr, done.stderr
