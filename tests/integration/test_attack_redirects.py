"""Attack: the console's own redirects sent to another site.

The launch URL (`/?token=…&next=…`) and the presenter toggle (`next` in its form) redirect to a path of the
caller's choosing after setting a cookie. A check for "starts with / but not //" lets `/\\evil.example` and
`/\\t/evil.example` through, and browsers read both as `//evil.example`: another site, opened from the console
with the owner's trust. Only a plain path on the console itself may be followed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.integration.conftest import TOKEN

if TYPE_CHECKING:
    from tests.integration.conftest import Console

HOSTILE_NEXT = ["/\\evil.example/", "/\t/evil.example/", "/\n/evil.example", "//evil.example", "/\\/evil.example",
                "https://evil.example/"]


@pytest.mark.parametrize("target", HOSTILE_NEXT)
async def test_the_launch_url_never_redirects_off_the_console(console: Console, target: str) -> None:
    response = await console.http.get("/", params={"token": TOKEN, "next": target})
    assert response.status_code == 303
    assert response.headers["location"] == "/"


@pytest.mark.parametrize("target", HOSTILE_NEXT)
async def test_the_presenter_toggle_never_redirects_off_the_console(console: Console, target: str) -> None:
    response = await console.http.post("/presenter", data={"next": target})
    assert response.status_code == 303
    assert response.headers["location"] == "/"


async def test_a_plain_path_with_its_query_is_still_followed(console: Console) -> None:
    response = await console.http.get("/", params={"token": TOKEN, "next": "/sessions/abc?q=x"})
    assert response.headers["location"] == "/sessions/abc?q=x"
