"""The host of this process's advertise_url (`console-a`, where the other processes of a team forward actions)
is accepted only beside the owner token as a Bearer header; a browser, which sends neither, is still refused."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from app.settings import Settings
from app.web.app import create_app

TOKEN = "team-guard-owner-token"


def app_at(tmp_path: Path, advertise_url: str) -> httpx.AsyncClient:
    app = create_app(Settings(data_dir=str(tmp_path), token=TOKEN, advertise_url=advertise_url))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://console-a:8780")


@pytest.mark.parametrize("headers, status", [
    ({"Authorization": f"Bearer {TOKEN}"}, 200),
    ({}, 403),
    ({"Authorization": "Bearer not-the-owner-token"}, 403),
    ({"Cookie": f"mcp_console_token={TOKEN}"}, 403),
])
async def test_the_advertise_host_is_accepted_only_with_the_owner_token_as_bearer(
        tmp_path: Path, headers: dict[str, str], status: int) -> None:
    async with app_at(tmp_path, "http://console-a:8780") as client:
        response = await client.get("/sessions.json", headers=headers)
    assert response.status_code == status, response.text


async def test_a_browser_post_to_the_advertise_host_is_refused_even_with_the_token(tmp_path: Path) -> None:
    async with app_at(tmp_path, "http://console-a:8780") as client:
        response = await client.post("/sessions", data={"kind": "http", "url": "http://127.0.0.1:9/mcp"},
                                     headers={"Authorization": f"Bearer {TOKEN}", "Origin": "http://console-a:8780"})
    assert response.status_code == 403 and "Origin" in response.text


async def test_another_processes_advertise_host_is_not_accepted_here(tmp_path: Path) -> None:
    async with app_at(tmp_path, "http://console-b:8780") as client:
        response = await client.get("/sessions.json", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 403
