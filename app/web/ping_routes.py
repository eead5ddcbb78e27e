"""The server panel's Ping: one liveness request, on the timeline like any other, its round trip said beside it.

2025-11-25 has `ping`. 2026-07-28 removed it and names `server/discover` as the way to tell a server is alive
(cheap and cacheable; spec § 7.3), so a session in that era sends that instead, and the button says so.
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import Response

from app.console.scrub import shown_reply
from app.console.session import ConsoleSession
from app.mcp.client import reply_json
from app.web.deps import TargetHTMLResponse, Web, connected, operator_post, respond, wants_json

router = APIRouter()


def ping_method(s: ConsoleSession) -> str:
    """What a ping is in the session's era: `ping` for 2025-11-25, else `server/discover`."""
    return "ping" if s.client is not None and s.client.config.era.name == "legacy" else "server/discover"


@operator_post(router, "/sessions/{session_id}/ping")
async def ping(request: Request, session_id: str, w: Web) -> Response:
    try:
        s = connected(w, session_id)
    except HTTPException as refused:
        if wants_json(request) or refused.status_code != 409:
            raise
        # The button swaps its answer in beside itself, and htmx swaps no error status: a tab is told here.
        return TargetHTMLResponse(w.render("_ping_result.html", reply=None, refused=refused.detail))
    reply = shown_reply(s.timeline.scrubber, await s.run(ping_method(s), {}))
    return respond(request, False, reply_json(reply), w.render("_ping_result.html", s=s, reply=reply))
