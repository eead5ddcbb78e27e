"""What a template sees of a session: a read-only view projected from the fold for one audience, never the session.

datasette makes both a page and its `.json` twin from data it has already redacted; mitmproxy filters its flow model
per connection. Here every template gets `s` = a `SessionView`: the fold's state (status, lists, roots, the
timeline's window, operations and server requests waiting) and the target as anyone may see it (its secret values
as masks, which is also what the log holds). The owner's view adds the target as typed, for the owner's own edit
form; no other audience's does. No template reaches the client, the transport, the store or a command: a view has
none of them, and asking a view for something it does not have is an error, not an empty string (a template that
needs more says so in a test).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from app.console.secrecy import Slot
from app.console.surfaces import since_connect
from app.mcp.surface import Diff

if TYPE_CHECKING:
    from app.console.session import ConsoleSession
    from app.console.target import Target

_EMPTY: Mapping[str, Any] = MappingProxyType({})


class _View:
    """Read-only: set once in `__init__`; a missing attribute is a loud error (Jinja would render it empty)."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a view is read-only ({type(self).__name__}.{name})")

    def _set(self, **values: Any) -> None:
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        # Not AttributeError: Jinja turns that into an empty Undefined, and a page would silently lose a part.
        raise LookupError(f"{type(self).__name__} has no {name!r}: a template asked for what no view gives")


class TargetView(_View):
    """The target for one audience: its display (secret values masked) for everyone; as typed for the owner.

    Made as it is read (a page reads the display, the owner's form the rest): the target itself is a value whose
    secrets show as masks wherever they go, and only the owner's view hands out what was typed."""

    __slots__ = ("_owner", "_target", "kind", "secret")

    def __init__(self, target: Target, owner: bool) -> None:
        self._set(_target=target, _owner=owner, kind=target.kind, secret=frozenset(target.secret or ()))

    def shown(self) -> str:
        return str(self._target.shown())

    def slots(self) -> list[Slot]:
        slots: list[Slot] = self._target.slots()
        return slots

    @property
    def url(self) -> Any:
        """The owner's: the URL as a value the owner's form reveals (empty for anyone else)."""
        return self._target.url if self._owner else ""

    @property
    def headers(self) -> Mapping[str, Any]:
        return MappingProxyType(dict(self._target.headers)) if self._owner else _EMPTY

    @property
    def cwd(self) -> Any:
        return self._target.cwd if self._owner else None

    def describe(self) -> str:
        """The owner's: the command or URL as typed (empty for anyone else)."""
        return str(self._target.describe()) if self._owner else ""

    def typed(self) -> Mapping[str, str]:
        """The owner's: each slot's value as typed (empty for anyone else)."""
        return MappingProxyType(self._target.typed()) if self._owner else _EMPTY


class StateView(_View):
    __slots__ = ("doctor", "era", "findings", "links", "operations", "server_requests", "subscriptions")

    def __init__(self, session: ConsoleSession, owner: bool) -> None:
        state = session.state
        self._set(era=state.era, doctor=state.doctor, findings=state.findings,
                  subscriptions=MappingProxyType(state.subscriptions),
                  operations=MappingProxyType(state.operations),
                  server_requests=MappingProxyType(state.server_requests),
                  links=MappingProxyType(state.links) if owner else _EMPTY)  # share links are the owner's


class TimelineView(_View):
    __slots__ = ("_recent", "anchor", "entries", "rounds", "seq", "stderr", "stderr_current", "stderr_dropped")

    def __init__(self, session: ConsoleSession) -> None:
        timeline = session.timeline
        rounds = timeline.rounds

        def anchor(key: str) -> str:
            """The page element that shows an exchange: its own entry, or the operation it is a round of."""
            rnd = rounds.get(key)
            return f"op-{rnd['op']}" if rnd and rnd.get("op") else key

        self._set(entries=MappingProxyType(timeline.entries), rounds=MappingProxyType(rounds), anchor=anchor,
                  stderr=tuple(timeline.stderr), stderr_current=timeline.stderr_current,
                  stderr_dropped=timeline.stderr_dropped, seq=timeline.seq, _recent=timeline.recent)

    def recent(self) -> list[dict[str, Any]]:
        """The window's entries, newest first, as the fold has them."""
        recent: Callable[[], list[dict[str, Any]]] = self._recent
        return recent()


class Waiting(_View):
    """Operations or server requests waiting for an answer, as the fold has them (read when asked)."""

    __slots__ = ("_read",)

    def __init__(self, read: Callable[[], list[Any]]) -> None:
        self._set(_read=read)

    def awaiting(self) -> list[Any]:
        read: Callable[[], list[Any]] = self._read
        return list(read())


class ClientView(_View):
    __slots__ = ("invalid_tools",)

    def __init__(self, invalid_tools: Mapping[str, str]) -> None:
        self._set(invalid_tools=MappingProxyType(dict(invalid_tools)))


class SettingsView(_View):
    __slots__ = ("page_entries", "timeline_window")

    def __init__(self, page_entries: int, timeline_window: int) -> None:
        self._set(page_entries=page_entries, timeline_window=timeline_window)


class SessionView(_View):
    __slots__ = ("_surface_changes", "apps", "auth", "auth_url", "auto_refresh", "capabilities", "client", "created",
                 "deadline_view",
                 "discover", "ever_connected", "id",
                 "idle_timeout_s", "last_activity", "lists", "log_level", "max_s", "name", "named", "operations",
                 "owned_by",
                 "owner_gone", "progress_enabled", "read_only", "roots", "server_capabilities", "server_info",
                 "server_requests", "settings", "state", "status", "status_message", "status_since",
                 "supported_versions", "surfaces", "target", "timeline")

    def __init__(self, session: ConsoleSession, owner: bool) -> None:
        client = session.client
        deadline: Callable[[str | None], dict[str, Any] | None] = session.deadline_view
        oauth = session.oauth
        self._set(
            apps=MappingProxyType(session.state.apps),  # MCP Apps: id → what anyone may see (app_changed)
            auth=session.state.auth,
            # The authorization page's URL (its state and PKCE challenge) is the owner's: for their click only.
            auth_url=oauth.url if owner and oauth is not None else None,
            id=session.id, name=session.name, named=bool(session.state.label),
            ever_connected=session.state.ever_connected,
            status=session.status, status_message=session.status_message,
            status_since=session.status_since, read_only=session.read_only,
            created=session.created, last_activity=session.last_activity,
            target=TargetView(session.target, owner), state=StateView(session, owner), timeline=TimelineView(session),
            server_info=session.server_info, discover=session.discover, roots=tuple(session.roots),
            capabilities=session.capabilities, server_capabilities=session.server_capabilities,
            supported_versions=tuple(session.supported_versions), lists=MappingProxyType(session.lists),
            log_level=session.log_level, progress_enabled=session.progress_enabled,
            auto_refresh=session.auto_refresh, idle_timeout_s=session.idle_timeout_s, max_s=session.max_s,
            owned_by=session.owned_by, owner_gone=session.owner_gone,
            settings=SettingsView(session.settings.page_entries, session.settings.timeline_window),
            client=ClientView(client.invalid_tools) if client is not None else None,
            operations=Waiting(session.operations.awaiting),
            server_requests=Waiting(session.server_requests.awaiting),
            deadline_view=deadline,
            surfaces=tuple(session.state.surfaces),  # every connect's snapshot, listed (the store has them whole)
            _surface_changes=lambda: since_connect(session.state))

    def surface_changes(self) -> Diff | None:
        """What changed in the lists since the last connect's snapshot (None before a connect): worked out when a
        template asks, not for every view made."""
        found: Callable[[], Diff | None] = self._surface_changes
        return found()


    def request_settings(self) -> dict[str, Any]:
        return {"log_level": self.log_level, "progress": self.progress_enabled, "auto_refresh": self.auto_refresh,
                "idle_timeout_s": self.idle_timeout_s, "max_s": self.max_s}
