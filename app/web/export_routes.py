"""Export (session file, HAR), import, Copy as cURL, replay, reconnect and the connection doctor."""

from __future__ import annotations

import asyncio
import json
import tempfile
import zlib
from collections.abc import Iterator
from typing import IO, Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import PlainTextResponse, RedirectResponse, Response, StreamingResponse

from app.console import export, session_stream
from app.console.scrub import shown_reply
from app.console.session import ConsoleSession
from app.mcp.client import MRTR_METHODS
from app.web.deps import Operator, Owner, Viewer, Web, connected, form_input, principal, respond, session_or_404
from app.web.forms import strict_json
from app.web.op_routes import op_response
from app.web.views import reply_json

router = APIRouter()


def _secrets(request: Request) -> bool:
    """Secrets go out only when the owner asks for them explicitly."""
    return principal(request).sees_secrets and request.query_params.get("secrets") == "1"  # not in presenter mode


def _suffix(request: Request) -> str:
    """A file with the target's secret values says so in its name too: the two downloads are not mixed up."""
    return "-with-secrets" if _secrets(request) else ""


def _streamed(request: Request, pieces: Iterator[str], filename: str) -> Response:
    """A download written as it is made (Starlette runs the iterator on a worker thread).

    Compressed here at level 1 when the client takes gzip: the app's GZip middleware (level 9, and it
    leaves an encoded response alone) spent more time on a 130 MB session file than making it did;
    level 1 is about five times faster for a file a third bigger than level 9's.
    """
    headers = {"Content-Disposition": f'attachment; filename="{filename}"', "Vary": "Accept-Encoding"}
    body: Iterator[bytes] = (piece.encode() for piece in pieces)
    if "gzip" in request.headers.get("accept-encoding", ""):
        headers["Content-Encoding"] = "gzip"
        body = _gzip(body)
    return StreamingResponse(body, media_type="application/json", headers=headers)


def _gzip(pieces: Iterator[bytes]) -> Iterator[bytes]:
    compressor = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    for piece in pieces:
        if out := compressor.compress(piece):
            yield out
    yield compressor.flush()


@router.get("/sessions/{session_id}/export.json")
async def export_session(request: Request, session_id: str, w: Viewer) -> Response:
    s = session_or_404(w, session_id)
    # Streamed: the store is read a chunk at a time (on a worker thread) and each chunk written as it is ready.
    pieces = session_stream.session_file(s.id, s.meta(), s.created, s.timeline.stored(), _secrets(request),
                                         share_links=principal(request).is_owner)
    return _streamed(request, pieces, f"mcp-session-{s.id}{_suffix(request)}.json")


@router.get("/sessions/{session_id}/export.har")
async def export_har(request: Request, session_id: str, w: Viewer) -> Response:
    s = session_or_404(w, session_id)
    pieces = export.har(s.id, s.target, s.timeline.stored(), _secrets(request))  # streamed, as the session file is
    return _streamed(request, pieces, f"mcp-session-{s.id}{_suffix(request)}.har")


@router.post("/sessions/import")
async def import_session(request: Request, w: Owner) -> Response:
    # The file goes to a temporary file as it arrives (the body-size middleware bounds it), then is parsed
    # and stored event by event on a worker thread: memory stays flat however large the session.
    with tempfile.TemporaryFile() as spool:
        await _upload(request, spool)
        spool.seek(0)
        try:
            session = await asyncio.to_thread(_import, w, spool)
        except ValueError as exc:  # JSONDecodeError is a ValueError too
            raise HTTPException(400, f"Cannot import: {exc}") from exc
    w.manager.add(session)
    if "application/json" in request.headers.get("accept", ""):
        return respond(request, True, {"id": session.id, "url": f"/sessions/{session.id}"}, None)
    return RedirectResponse(f"/sessions/{session.id}", status_code=303)


def _import(w: Web, spool: IO[bytes]) -> ConsoleSession:
    reader = session_stream.SessionFileReader.of(spool)
    meta, created = reader.open()
    return w.manager.imported(meta, created, reader.chunks())


async def _upload(request: Request, spool: IO[bytes]) -> None:
    ctype = request.headers.get("content-type", "")
    if ctype.startswith("multipart/form-data"):
        form = await request.form()  # Starlette spools a large upload to disk itself
        upload = form.get("file")
        if upload is None or isinstance(upload, str):
            raise HTTPException(400, "Choose a session file to import")
        while chunk := await upload.read(1 << 20):
            spool.write(chunk)
    else:
        async for chunk in request.stream():
            spool.write(chunk)


@router.get("/sessions/{session_id}/entries/{key}/curl")
async def copy_as_curl(request: Request, session_id: str, key: str, w: Viewer) -> Response:
    s = session_or_404(w, session_id)
    who = principal(request)
    # The owner's cURL sends what was sent (exact frames); anyone else's is made from the log's.
    wire = await s.timeline.read_off_loop(s.timeline.exact_wire if who.sees_secrets else s.timeline.wire, key)
    command = export.curl(s.target, wire, include_secrets=who.sees_secrets)
    if command is None:
        raise HTTPException(404, "Only HTTP requests can be copied as cURL")
    return PlainTextResponse(command)


# Requests that make claims for the client (not what a link holder may change) are re-sent by the owner alone.
OWNER_ONLY_REPLAYS = frozenset({"initialize", "notifications/initialized"})


@router.post("/sessions/{session_id}/replay")
async def replay(request: Request, session_id: str, w: Operator) -> Response:
    """Re-send a past request, as it was or edited, as a new entry linked to the original."""
    s = connected(w, session_id)
    form = await form_input(request)
    original = form.first("key") or ""
    method, params = _original_request(s, original)
    if form.first("mode") == "edited":
        method = (form.first("method") or method).strip()
        try:
            params = strict_json(form.first("params") or "{}")
        except ValueError as exc:
            raise HTTPException(400, f"The edited params are not valid JSON: {exc}") from exc
        if not isinstance(params, dict):
            raise HTTPException(400, "The edited params must be a JSON object")
    params.pop("_meta", None)  # the console stamps fresh per-request _meta, as on every request
    if method in OWNER_ONLY_REPLAYS and not principal(request).is_owner:
        # initialize says what the client is and can do: on a 2025-11-25 session an operator's edited one declared
        # capabilities the owner never chose (roots, sampling), which an operator may not change (see the README).
        raise HTTPException(403, f"Only the session's owner may send {method}: it declares the client's "
                                 "capabilities, which are the owner's to choose")
    if method == "subscriptions/listen":
        raise HTTPException(400, "A listen is a stream: start it again from the Subscriptions panel")
    if method in MRTR_METHODS:
        op = s.operations.create(method, params, replay_of=original, keep_mrtr=True)
        await s.operations.run(op)
        return op_response(w, request, s, op)
    # Answered as the log has it (masked as recorded): the request was re-sent exactly, but a replay's answer is
    # no way for a link holder to read back what the owner's target holds.
    reply = shown_reply(s.timeline.scrubber, await s.run(method, params, replay_of=original))
    return respond(request, False, reply_json(reply), w.render("_result.html", s=s, reply=reply,
                                                                result=reply.result, validation=None))


def _original_request(s: ConsoleSession, key: str) -> tuple[str, dict[str, Any]]:
    # The request as it went (`exact_wire`), whoever replays it: the log's copy may hold a secret's mask, and a
    # replay "as is" must never send that.
    sent = next((w for w in s.timeline.exact_wire(key) if w["direction"] == "out"), None)
    if sent is None:
        raise HTTPException(404, f"No request recorded under {key!r}")
    try:
        message = json.loads(sent["raw"])
    except ValueError as exc:
        raise HTTPException(400, "The recorded request is not JSON") from exc
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    return str(message.get("method")), dict(params)


@router.post("/sessions/{session_id}/reconnect")
async def reconnect(request: Request, session_id: str, w: Owner) -> Response:
    """Connect a restored session again (for stdio this starts the process: owner only, POST only)."""
    s = session_or_404(w, session_id)
    if s.read_only:
        raise HTTPException(409, "An imported session is read-only: it has no target to connect to")
    if s.status in ("connecting", "connected"):  # "unreachable" too: a stdio server that died starts again
        raise HTTPException(409, f"The session is already {s.status}")
    w.manager.start(s)
    return RedirectResponse(f"/sessions/{s.id}", status_code=303)


@router.post("/sessions/{session_id}/doctor")
async def doctor(request: Request, session_id: str, w: Owner) -> Response:
    """Run the connection doctor on the session's target (for stdio this starts the process: owner only, POST
    only); its check list arrives on the session's feed, as the head."""
    s = session_or_404(w, session_id)
    if s.read_only:
        raise HTTPException(409, "An imported session is read-only: it has no target to diagnose")
    if s.doctoring:
        raise HTTPException(409, "The doctor is running on this session already")
    w.manager.doctor(s)
    return RedirectResponse(f"/sessions/{s.id}", status_code=303)
