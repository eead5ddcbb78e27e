"""The request-runner seam: all that operations and listeners need from the session they serve.

`OperationDriver` and `Listeners` used to take the whole `ConsoleSession` and reach into its
client, settings, lists and status. They take a `RequestRunner` (plus the session's `Timeline`)
instead, so they can be driven, and unit tested, by anything that can send one recorded request:
`ConsoleSession` in the console, a small runner over `MemoryTransport` in the unit tests.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from app.console.tasks import TaskGroup
from app.mcp.client import Reply
from app.mcp.jsonrpc import Frame
from app.mcp.task import TaskChoice

# Called with an exchange's key and JSON-RPC id at once, before anything is recorded or sent (a cancel that comes
# while the request is still being sent needs the key). What it returns, if anything, runs once the exchange's
# ExchangeStarted is recorded, which is just before its first frame: the caller's own record of the start goes
# there, after the exchange's, as it always did.
OnStart = Callable[[str, Any], Callable[[], None] | None]


class RequestRunner(Protocol):
    """Send recorded requests, cancel them, and tell the few facts operations and listeners read."""

    async def run(self, method: str, params: dict[str, Any], *, op: str | None = None, round_: int | None = None,
                  on_notification: Callable[[Frame], None] | None = None, on_start: OnStart | None = None,
                  stream: bool = False, log_level: str | None = None) -> Reply:
        """Send one request, record it as a timeline entry (a round of `op` when given), return its Reply.

        Never raises for what the server or the wire did: every outcome is in the Reply.
        """

    background: TaskGroup
    """Where work that outlives a request runs (a task's poller), stopped with the session."""

    def as_task(self, method: str, params: dict[str, Any], choice: TaskChoice | None = None) -> dict[str, Any]:
        """The params a request goes with: on 2025-11-25, a tools/call of a tool that requires a task, or allows
        one and the person chose it (`choice`), gets `params.task` (app/mcp/task.py `as_task`); otherwise the same
        params."""

    async def cancel(self, key: str, who: str) -> bool:
        """Cancel the request in flight under this exchange key; False when there is none."""

    @property
    def mrtr_max_rounds(self) -> int:
        """Most rounds one operation may take before it is stopped as "capped"."""

    @property
    def lists(self) -> dict[str, list[dict[str, Any]]]:
        """The server's lists as last fetched; `tools` gives the outputSchema a result is checked against."""

    @property
    def capabilities(self) -> dict[str, Any]:
        """The client capabilities the next request declares."""

    def set_capabilities(self, capabilities: dict[str, Any], saved: bool = True) -> None:
        """A command: change the declared capabilities (enable-and-retry after -32021 uses it)."""

    @property
    def status(self) -> str:
        """The session's connection status: a dropped listen stream is re-opened only while it may come back."""

    @property
    def status_message(self) -> str:
        """Why the status is what it is (said when a listener gives up)."""

    @property
    def target_alive(self) -> bool:
        """False while nothing can answer until a reconnect starts it again (a stdio server whose process ended)."""
