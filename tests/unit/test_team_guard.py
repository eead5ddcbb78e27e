"""The host of this process's advertise_url (`console-a`, where the other processes of a team forward actions)
is accepted only for a request signed with the team key: not with the owner token (every owner's browser holds
it, and a forged registration once made a process send it anywhere), not with a made-up signature, and never for
a browser's own request."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from app.console.team_key import TeamKey
from app.settings import Settings
from app.web.app import create_app
from app.web.peer import peer_headers

TOKEN = "team-guard-owner-token"
SECRET = "team-guard-secret-between-the-console-processes"


def make_app(tmp_path: Path, advertise_url: str, team_secret: str = SECRET) -> FastAPI:
    return create_app(Settings(data_dir=str(tmp_path), token=TOKEN, advertise_url=advertise_url,
                               team_secret=team_secret))


def client(app: FastAPI) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://console-a:8780")


def signed(app: FastAPI, path: str, key: TeamKey, principal: str = "owner", method: str = "GET") -> dict[str, str]:
    receiver = app.state.web.manager.cluster.process_id
    return dict(peer_headers(key, "peer-b", receiver, method, path, "", principal, b""))


@pytest.mark.parametrize("headers, status", [
    ({}, 403),
    ({"Authorization": f"Bearer {TOKEN}"}, 403),
    ({"Cookie": f"mcp_console_token={TOKEN}"}, 403),
    ({"X-MCP-Console-Peer": "v1;b;a;0;n;" + "0" * 64, "X-MCP-Console-Principal": "owner"}, 403),
])
async def test_the_advertise_host_refuses_the_owner_token_and_made_up_signatures(
        tmp_path: Path, headers: dict[str, str], status: int) -> None:
    async with client(make_app(tmp_path, "http://console-a:8780")) as http:
        response = await http.get("/sessions.json", headers=headers)
    assert response.status_code == status, response.text


async def test_the_advertise_host_accepts_a_request_signed_with_the_team_key_once(tmp_path: Path) -> None:
    app = make_app(tmp_path, "http://console-a:8780")
    headers = signed(app, "/sessions.json", TeamKey(SECRET))
    async with client(app) as http:
        first = await http.get("/sessions.json", headers=headers)
        replayed = await http.get("/sessions.json", headers=headers)
    assert first.status_code == 200, first.text
    assert replayed.status_code == 403 and "replay" in replayed.text


async def test_a_request_signed_with_another_teams_key_or_for_another_path_is_refused(tmp_path: Path) -> None:
    app = make_app(tmp_path, "http://console-a:8780")
    async with client(app) as http:
        other_team = await http.get("/sessions.json",
                                    headers=signed(app, "/sessions.json", TeamKey("another-team-secret-" * 3)))
        other_path = await http.get("/sessions.json", headers=signed(app, "/sessions", TeamKey(SECRET)))
    assert other_team.status_code == 403 and "signature" in other_team.text
    assert other_path.status_code == 403 and "signature" in other_path.text


async def test_a_browser_post_to_the_advertise_host_is_refused_even_with_the_token(tmp_path: Path) -> None:
    async with client(make_app(tmp_path, "http://console-a:8780")) as http:
        response = await http.post("/sessions", data={"kind": "http", "url": "http://127.0.0.1:9/mcp"},
                                   headers={"Authorization": f"Bearer {TOKEN}", "Origin": "http://console-a:8780"})
    assert response.status_code == 403


async def test_another_processes_advertise_host_is_not_accepted_here(tmp_path: Path) -> None:
    app = make_app(tmp_path, "http://console-b:8780")
    async with client(app) as http:
        response = await http.get("/sessions.json", headers=signed(app, "/sessions.json", TeamKey(SECRET)))
    assert response.status_code == 403 and "Host" in response.text


async def test_without_a_team_secret_the_advertise_host_is_no_host_of_this_console(tmp_path: Path) -> None:
    app = make_app(tmp_path, "http://console-a:8780", team_secret="")
    async with client(app) as http:
        response = await http.get("/sessions.json", headers=signed(app, "/sessions.json", TeamKey(SECRET)))
    assert response.status_code == 403 and "Host" in response.text


async def test_a_peer_header_of_any_bytes_is_refused_not_a_server_error(tmp_path: Path) -> None:
    """A signature that is not ASCII made the constant-time comparison raise: a 500 instead of a refusal."""
    app = make_app(tmp_path, "http://console-a:8780")
    receiver = app.state.web.manager.cluster.process_id
    peer = f"v1;b;{receiver};{time.time():.3f};n;".encode() + b"\xe9\xff"
    async with client(app) as http:
        response = await http.get("/sessions.json", headers={"X-MCP-Console-Peer": peer,
                                                             "X-MCP-Console-Principal": b"owner\xff"})
    assert response.status_code == 403 and "signature" in response.text, response.text
