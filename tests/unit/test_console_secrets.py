"""Masking by name: what the server sends under a credential's name, and a 2024-11-05 endpoint's session id.

The target's own secret values are masked when recorded (tests/unit/test_scrub.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.console.secrets import MASK, mask_headers, mask_url, mask_wire


def test_userinfo_and_every_query_value_are_masked_in_a_url() -> None:
    shown = mask_url("https://user:pw@example.com/mcp?api_key=k1&region=eu&auth=t2")
    assert "pw" not in shown and "k1" not in shown and "t2" not in shown and "eu" not in shown
    assert shown == f"https://{MASK}@example.com/mcp?api_key={MASK}&region={MASK}&auth={MASK}"


def test_the_authorization_scheme_stays_visible_while_its_credential_is_masked() -> None:
    assert mask_headers([["Authorization", "Bearer s3cret"], ["Accept", "x"], "odd"]) == [
        ["Authorization", f"Bearer {MASK}"], ["Accept", "x"], MASK]


@pytest.mark.parametrize("headers", [{"Authorization": "b"}, [[1, 2]], [["a"]], "ab", 5, [["X-A", "b", "c"]], [None],
                                     [["Set-Cookie", 5]], [["set-cookie", ["v"]]]])
def test_a_stored_frame_whose_headers_are_not_name_value_pairs_is_masked_whole_not_raised_on(headers: Any) -> None:
    # An imported file's wire event can say anything there: a masked export or a viewer's entry raised on it
    # (the download cut off half way, a 500), before any secret was looked at.
    masked = mask_wire({"raw": "{}", "headers": headers})
    assert masked["raw"] == "{}"
    assert "b" not in json.dumps(masked["headers"]) and "5" not in json.dumps(masked["headers"]) \
        and '"v"' not in json.dumps(masked["headers"])


def test_well_formed_headers_are_masked_by_name_as_before() -> None:
    headers = [["Content-Type", "application/json"], ["Set-Cookie", "sid=1"], ["Authorization", "Bearer t0k"]]
    assert mask_wire({"headers": headers})["headers"] == [["Content-Type", "application/json"],
                                                          ["Set-Cookie", MASK], ["Authorization", "Bearer " + MASK]]


def test_the_url_a_2024_sse_post_went_to_has_its_session_id_masked_and_its_path_kept() -> None:
    # The endpoint's ?sessionId= binds a POST to the server's stream: whoever holds it can post as the session.
    masked = mask_wire({"raw": "{}", "headers": [], "url": "http://h/messages?sessionId=0123abcd"})
    assert masked["url"] == f"http://h/messages?sessionId={MASK}"
    assert mask_wire({"raw": "{}", "headers": None, "url": 5})["url"] == MASK  # an imported file's, whatever it is
