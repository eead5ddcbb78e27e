"""Requests *from* the server (2025-11-25 elicitation, sampling, roots): the session's answerer.

A legacy server asks on the stream of one of our requests and waits for a JSON-RPC response with its id.
Each question is recorded as transitions (`sr_asked`, `sr_refused`, `sr_ended`), folded into a record the MRTR
dialog macro can show, so it
opens in the same "Awaiting your input" inbox with the same forms, validation and URL warnings as an MRTR
input request. A person's answer resolves the future `ask` awaits; `ask` returns what goes back. Nobody
answering within `server_request_timeout_s` sends a JSON-RPC error and marks the dialog timed out.

Roots are answered at once from the session's roots list, without a dialog: they are the owner's standing
claim about the owner's machine (only the owner edits them, under client settings), a legacy client
answers `roots/list` without asking anyone, and servers ask again after every `roots/list_changed`. The
answer is still recorded, nested under the request that carried it, so it is visible.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from app.console.events import Notice
from app.console.live_events import SrAsked, SrEnded, SrRefused
from app.console.live_records import ServerRequestRecord
from app.mcp import mrtr
from app.mcp.era import ServerAnswer
from app.mcp.jsonrpc import Frame

if TYPE_CHECKING:
    from app.console.timeline import Timeline

Json = dict[str, Any]
TIMEOUT_CODE = -32001  # what the SDKs answer for a request that timed out
REJECTED_CODE = -1     # 2025-11-25 sampling: "User rejected sampling request"
UNATTACHED_NOTICES = 50        # questions outside any request that get a timeline line each
UNATTACHED_COUNT_EVERY = 1000  # past those, one line per this many
NOTICE_RAW_CHARS = 2000        # of such a question's frame, as its notice keeps it


class ServerRequests:
    """The open questions of one session and their futures (the driver's part: what each question is and where
    it stands is the fold's, `timeline.state.server_requests`)."""

    def __init__(self, timeline: Timeline, roots: Callable[[], list[Json]], timeout_s: Callable[[], float]) -> None:
        self.timeline = timeline
        self._roots = roots
        self._timeout_s = timeout_s
        self._live: dict[str, tuple[str, asyncio.Future[ServerAnswer]]] = {}  # id → (its carrier's key, future)
        self._asked_outside = 0  # questions no request of ours carried, so far

    async def ask(self, frame: Frame, key: str) -> ServerAnswer:
        """The `Answerer` of the session's client: record the question, wait for an answer or the deadline."""
        now = time.time()
        method = frame.method or ""
        roots = mrtr.kind_of({"method": method, "params": frame.params}) == "roots"
        if not key:  # asked outside any request of ours (stdio, the standalone GET stream): an entry of its own
            key = self._unattached(frame, method, roots)
        sr_id = f"sr{self.timeline.seq + 1}"
        if roots:
            self.timeline.append(SrAsked(id=sr_id, key=key, request_id=frame.id, method=method,
                                         params=dict(frame.params), asked=now))
            answer = ServerAnswer(result={"roots": [dict(r) for r in self._roots()]})
            self._record(sr_id, key, "answered", answer, "console")
            return answer
        timeout = self._timeout_s()
        future: asyncio.Future[ServerAnswer] = asyncio.get_running_loop().create_future()
        self._live[sr_id] = (key, future)
        self.timeline.append(SrAsked(id=sr_id, key=key, request_id=frame.id, method=method, params=dict(frame.params),
                                     asked=now, due=now + timeout))
        try:
            try:
                done, _ = await asyncio.wait({future}, timeout=timeout)
            except asyncio.CancelledError:
                if not future.done():  # the server withdrew it (notifications/cancelled): nothing goes back
                    future.cancel()
                    self._record(sr_id, key, "withdrawn", None, "server")
                raise
            if not done:
                timed_out = ServerAnswer(error={"code": TIMEOUT_CODE, "message": (
                    f"Request timed out: nobody answered within {timeout:g} s "
                    "(the console's setting server_request_timeout_s)")})
                self._finish(sr_id, "timed_out", timed_out, "console")
            return await future
        finally:
            self._live.pop(sr_id, None)

    def _unattached(self, frame: Frame, method: str, roots: bool) -> str:
        """A notice on the timeline for a question no request of ours carried (a server asks for roots again
        after `notifications/roots/list_changed` this way): its key, under which the question is recorded."""
        if roots:
            listed = self._roots()
            said = (f"answered at once with {len(listed)} root{'s' if len(listed) != 1 else ''}"
                    + (": " + ", ".join(str(r.get("uri")) for r in listed) if listed else " (none are set: "
                       "Client settings → Roots)"))
        else:
            said = "it waits under “Awaiting your input”"
        self._asked_outside += 1
        if self._asked_outside > UNATTACHED_NOTICES:  # a server asking in a loop gets a count, not a line each
            if self._asked_outside % UNATTACHED_COUNT_EVERY == 0:
                self.timeline.append(Notice(level="warning", signal="server_request", message=(
                    f"the server has asked {self._asked_outside} questions outside any request; past the first "
                    f"{UNATTACHED_NOTICES} they are answered as usual but counted here, not listed one by one")))
            return ""
        raw = json.dumps({"jsonrpc": "2.0", "id": frame.id, "method": method, "params": frame.params})
        shown_id = repr(frame.id)
        event = self.timeline.append(Notice(
            message=f"the server asked {method[:100]} (id {shown_id[:80]}) outside any request; {said}",
            raw=raw if len(raw) <= NOTICE_RAW_CHARS else raw[:NOTICE_RAW_CHARS] + " …(cut)",
            signal="server_request"))
        return f"n{event.seq}" if event is not None else ""

    def awaiting(self) -> list[ServerRequestRecord]:
        return [r for r in self.timeline.state.server_requests.values() if r.status == "awaiting"]

    def get(self, sr_id: str) -> ServerRequestRecord | None:
        return self.timeline.state.server_requests.get(sr_id)

    def is_open(self, sr_id: str) -> bool:
        return sr_id in self._live and not self._live[sr_id][1].done()

    def answer(self, sr_id: str, result: Json, who: str) -> bool:
        """A result goes back (elicitation accept/decline/cancel, a sampling reply); False if no longer open."""
        action = result.get("action")
        status = {"decline": "declined", "cancel": "cancelled"}.get(action, "answered") \
            if isinstance(action, str) else "answered"
        return self._finish(sr_id, status, ServerAnswer(result=result), who)

    def reject_sampling(self, sr_id: str, who: str) -> bool:
        """Sampling has no decline result: the 2025-11-25 client answers with an error."""
        return self._finish(sr_id, "declined", ServerAnswer(
            error={"code": REJECTED_CODE, "message": "User rejected sampling request"}), who)

    def refuse(self, sr_id: str, errors: dict[str, str], drafts: dict[str, list[str]]) -> None:
        """An answer that did not pass the checks: nothing goes back; every tab shows why beside what was typed."""
        if not self.is_open(sr_id):
            return
        self.timeline.append(SrRefused(id=sr_id, key=self._live[sr_id][0], errors=dict(errors), drafts=dict(drafts)))

    def end_of(self, key: str) -> None:
        """The client request `key` is over: questions it carried can no longer be answered on its stream."""
        for sr_id, (carrier, _) in list(self._live.items()):
            if carrier == key:
                self._finish(sr_id, "gone", ServerAnswer(error={
                    "code": TIMEOUT_CODE, "message": "the request that carried this one is over"}), "console")

    def close(self) -> None:
        for sr_id in list(self._live):
            self._finish(sr_id, "gone", ServerAnswer(error={"code": TIMEOUT_CODE, "message": "session closed"}),
                         "console")

    def _finish(self, sr_id: str, status: str, answer: ServerAnswer, who: str) -> bool:
        live = self._live.get(sr_id)
        if live is None or live[1].done():
            return False  # answered already (perhaps in another tab), or timed out
        key, future = live
        self._record(sr_id, key, status, answer, who)
        future.set_result(answer)
        return True

    def _record(self, sr_id: str, key: str, status: str, answer: ServerAnswer | None, who: str) -> None:
        response: Json | None = None if answer is None else \
            {"error": answer.error} if answer.error is not None else {"result": answer.result or {}}
        self.timeline.append(SrEnded(id=sr_id, key=key, status=status, answered_by=who, response=response,
                                     ended=time.time()))
