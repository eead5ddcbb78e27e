"""With Redis unreachable, an action on a session this process does not hold says so (503) instead of failing
with a server error or taking the session over blindly."""

from __future__ import annotations

from collections.abc import Callable

from tests.integration.conftest import JSON, Console, free_port


async def test_an_action_is_answered_503_when_the_directory_is_unreachable(
        make_console: Callable[..., Console]) -> None:
    console = make_console(redis_url=f"redis://:pw@127.0.0.1:{free_port()}/0", advertise_url="http://127.0.0.1:1")
    session_id = await console.create(kind="http", url=f"http://127.0.0.1:{free_port()}/mcp")
    response = await console.http.post(f"/sessions/{session_id}/tools/call", data={"tool": "echo"}, headers=JSON)
    assert response.status_code == 503, response.text
    assert "directory is not reachable" in response.text
