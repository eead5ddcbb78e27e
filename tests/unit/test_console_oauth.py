"""The console's side of OAuth (app/console/oauth.py) without a server: where the redirect URI comes from, what is
kept where (secrets in the owner-only place, never in an event), and the callback matched by its state."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from app.console.events import AuthChanged
from app.console.oauth import SessionAuth, waiting_for
from app.mcp.oauth.grant import Grant
from app.mcp.oauth.steps import Authorize


class Place:
    def __init__(self) -> None:
        self.stored: dict[str, str] = {}
        self.events: list[Any] = []

    def auth(self, port: list[int]) -> SessionAuth:
        return SessionAuth("s1", "http://127.0.0.1:9/mcp", lambda: f"http://mcp-x.localhost:{port[0]}/oauth/callback",
                           lambda: self.stored, lambda text: self.stored.__setitem__("oauth", text),
                           self.events.append)


def test_the_redirect_uri_is_the_consoles_own_as_it_is_when_a_flow_runs_unless_the_owner_typed_one() -> None:
    port = [0]
    place = Place()
    auth = place.auth(port)
    port[0] = 8765  # the console listens now (--port 0 knows its port only then)
    auth.edit({"redirect_uri": ""}, {}, False)
    assert auth.machine.settings.redirect_uri == "http://mcp-x.localhost:8765/oauth/callback"
    auth.edit({"redirect_uri": "http://127.0.0.1:3000/cb"}, {}, False)
    assert auth.machine.settings.redirect_uri == "http://127.0.0.1:3000/cb"
    again = place.auth(port)  # a restart reads the stored settings
    assert again.machine.settings.redirect_uri == "http://127.0.0.1:3000/cb"
    again.edit({"redirect_uri": ""}, {}, False)  # empty: the console's own again
    assert json.loads(place.stored["oauth"])["settings"]["redirect_uri"] == ""


def test_tokens_and_secrets_go_to_the_owner_only_place_never_into_an_event() -> None:
    place = Place()
    auth = place.auth([8765])
    auth.edit({"client_id": "corp", "client_secret": "CLIENT-SECRET-0123456789"}, {"audience": "api"}, True)
    auth.machine.grant = Grant("https://as", "http://127.0.0.1:9/mcp", "ACCESS-TOKEN-0123456789",
                               refresh_token="REFRESH-TOKEN-0123456789")
    auth.edit({}, {"audience": "api"}, True)  # any change persists and publishes (the grant with it)
    events = json.dumps([e.to_data() for e in place.events if isinstance(e, AuthChanged)])
    for secret in ("CLIENT-SECRET-0123456789", "ACCESS-TOKEN-0123456789", "REFRESH-TOKEN-0123456789"):
        assert secret not in events
        assert secret in place.stored["oauth"]
        assert secret in auth.secret_values()
    assert '"has_secret": true' in events and '"audience": "api"' in events


def test_a_callback_is_taken_only_with_the_state_its_flow_sent() -> None:
    async def run() -> None:
        auth = Place().auth([8765])
        waiting = asyncio.ensure_future(auth.authorize(Authorize("authorization", "http://as/authorize?x=1",
                                                                 "http://cb", "the-state")))
        await asyncio.sleep(0)
        assert waiting_for("the-state") is auth and waiting_for("other") is None
        assert not auth.called_back({"state": "other", "code": "c"})
        assert auth.url == "http://as/authorize?x=1"
        assert auth.called_back({"state": "the-state", "code": "c"})
        assert (await waiting)["code"] == "c"
        assert waiting_for("the-state") is None and auth.url is None  # used once

    asyncio.run(run())
