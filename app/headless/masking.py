"""What the CLI shows of the values typed on its command line: the console's rules, not a second set.

A `--header "Authorization: Bearer …"`, an `X-Api-Key`, a URL's user and password, a credential-named query value
and the secret-looking parts of a `--stdio` command line are secret exactly when the console's connect form would
call them so (app/console/secrecy.py, held by app/console/target.py's `Target`). The transport is given them as
`Secret`s (app/mcp/secret.py), so it records their masks; what the server says back (an echo, an error quoting
the request) is masked by the console's own `Scrubber` (app/console/scrub.py) before the HAR, the JSON or a note
is written. `--reveal` turns all of that off for a run whose output stays with its owner.
"""

from __future__ import annotations

import dataclasses
import shlex
from typing import Any

from app.console.scrub import Scrubber, secret_pieces
from app.console.target import Target
from app.mcp.secret import Secret
from app.mcp.wire import WireEvent

NOTHING_SECRET: frozenset[str] = frozenset()


class Masking:
    """The typed target held as the console holds one, and the scrubber of its secret values (None: --reveal, or
    nothing secret was typed)."""

    def __init__(self, target: str, stdio: bool, headers: dict[str, str], reveal: bool = False,
                 made: Target | None = None) -> None:
        secret = NOTHING_SECRET if reveal else None  # None: the credential-shaped slots, as the console has them
        if made is not None:  # from a config file (app/headless/configured.py): its secrets already chosen
            if reveal:
                made.seal(NOTHING_SECRET)
            self.target = made
        elif stdio:
            argv: list[str | Secret] = list(shlex.split(target))
            self.target = Target(kind="stdio", argv=argv, secret=secret)
        else:
            self.target = Target(kind="http", url=target, headers=dict(headers), secret=secret)
        scrubber = None if reveal else Scrubber(secret_pieces(self.target))
        self.scrubber: Scrubber | None = scrubber if scrubber else None

    @property
    def url(self) -> str | Secret:
        return self.target.url

    @property
    def headers(self) -> dict[str, str | Secret]:
        return dict(self.target.headers)

    @property
    def argv(self) -> list[str | Secret]:
        return list(self.target.argv)

    def shown(self) -> str:
        """The target as the report names it: the URL (its secret parts masked), or the command line."""
        return str(self.target.url) if self.target.kind == "http" else self.target.shown()

    def text(self, value: str) -> str:
        return self.scrubber.text(value) if self.scrubber is not None else value

    def value(self, data: Any) -> Any:
        return self.scrubber.value(data) if self.scrubber is not None else data

    def event(self, event: WireEvent) -> WireEvent:
        """A wire event as it may be written out: the server's echo of a secret masked in its text, note, URL and
        headers (the request's own secret headers were recorded as their masks already)."""
        scrubber = self.scrubber
        if scrubber is None:
            return event
        raw = scrubber.raw_frame(event.raw) if event.raw else event.raw
        note = scrubber.text(event.note) if event.note else event.note
        url = scrubber.text(event.url) if event.url else event.url
        headers = event.headers
        if headers:
            shown = scrubber.headers([list(pair) for pair in headers])
            headers = [(str(name), str(value)) for name, value in shown]
        if raw is event.raw and note is event.note and url is event.url and headers == event.headers:
            return event
        return dataclasses.replace(event, raw=raw, note=note, url=url, headers=headers)

    def events(self, events: list[WireEvent]) -> list[WireEvent]:
        return [self.event(e) for e in events]
