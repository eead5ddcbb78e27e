"""Attack: a link holder (or whoever receives an export) reads a short header value the owner typed.

Every value the owner typed into the target is a secret whatever its name, but values under four characters are
masked only where they stand (replacing every "ab1" in every string would destroy the timeline). A request's
own header list is where a typed header stands, too: `X-Tenant: ab1` went out unmasked in the frame's headers
of a masked session file, of the HAR and of a viewer's entry (its name is no credential's).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import httpx

from tests.integration.conftest import create_link

if TYPE_CHECKING:
    from tests.integration.conftest import Console

SHORT = "zq7"  # three characters: below the substring-masking length, and found nowhere else on a page


async def test_a_short_typed_header_value_is_masked_in_the_frames_headers_for_a_viewer_and_in_exports(
        console: Console, demo_url: str, share_tab: Callable[..., Awaitable[httpx.AsyncClient]]) -> None:
    sid = await console.connected_http(demo_url, headers=f"X-Tenant: {SHORT}")
    discover = next(e for e in (await console.session(sid))["timeline"] if e.get("method") == "server/discover")

    def sent(detail: dict[str, Any]) -> str:
        [out] = [w for w in detail["wire"] if w["direction"] == "out"]
        return str(next(v for k, v in out["headers"] if k.lower() == "x-tenant"))

    assert sent(await console.entry(sid, discover["key"])) == SHORT  # the owner sees what went out
    for path in (f"/sessions/{sid}/export.json", f"/sessions/{sid}/export.har"):
        text = (await console.http.get(path)).text
        assert f'"{SHORT}"' not in text, path
    tab = await share_tab(console, await create_link(console, sid, "viewer"))
    assert sent((await tab.get(f"/sessions/{sid}/entries/{discover['key']}.json")).json()) != SHORT
    for path in (f"/sessions/{sid}/entries/{discover['key']}", f"/sessions/{sid}/entries/{discover['key']}/body",
                 f"/sessions/{sid}/entries/{discover['key']}/curl",
                 f"/sessions/{sid}/export.json?secrets=1", f"/sessions/{sid}/export.har?secrets=1"):
        response = await tab.get(path)
        assert response.status_code == 200, path
        assert SHORT not in response.text, f"a viewer sees {SHORT!r} in {path}"
