"""The doctor's vocabulary: a check's result, the report of a run, and the rule that orders them.

Each step is a small async function of the run's `Visit` (what earlier steps learned) returning a `Check`. Steps
run in order; once one fails, the rest are skipped with the reason, except the ones marked `always` (a stdio
process's stderr and exit code are what explain a failed first line, so they are read whatever came before).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

from app.mcp.client import McpClient, Reply
from app.mcp.handshake import Negotiated
from app.mcp.secret import Secret
from app.mcp.wire import WireEvent

Status = Literal["ok", "warn", "fail", "skipped"]
STATUSES: tuple[Status, ...] = ("ok", "warn", "fail", "skipped")
MAX_DETAIL = 600  # a server's words quoted in a detail are cut: a check list is read at a glance


@dataclass(frozen=True, slots=True)
class Check:
    """One step's result: `fix` says what to do, for a failed step (and a warning that has a remedy)."""

    name: str
    status: Status
    detail: str
    fix: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status, "detail": self.detail, "fix": self.fix}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Check:
        status = data.get("status")
        known: Status = next((s for s in STATUSES if s == status), "fail")
        return cls(str(data.get("name", "")), known, str(data.get("detail", "")), str(data.get("fix", "")))


@dataclass(frozen=True, slots=True)
class Report:
    """A run of the doctor: the target as shown (secrets masked), its kind, the checks in order."""

    target: str
    kind: Literal["http", "stdio"]
    checks: tuple[Check, ...]

    @property
    def passed(self) -> bool:
        return not any(c.status == "fail" for c in self.checks)

    @property
    def failed(self) -> Check | None:
        return next((c for c in self.checks if c.status == "fail"), None)

    @property
    def verdict(self) -> str:
        """One line: "every step passed", with the warnings counted when there are some (a passing report that
        lists a warning read as a contradiction), or the first failed step."""
        failed = self.failed
        if failed is not None:
            return f"failed at {failed.name}"
        warned = sum(1 for c in self.checks if c.status == "warn")
        return "every step passed" + (f", {warned} with a warning" if warned else "")

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "kind": self.kind, "passed": self.passed,
                "checks": [c.to_dict() for c in self.checks]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Report:
        checks = data.get("checks")
        kind: Literal["http", "stdio"] = "stdio" if data.get("kind") == "stdio" else "http"
        return cls(str(data.get("target", "")), kind,
                   tuple(Check.from_dict(c) for c in checks if isinstance(c, Mapping)) if isinstance(checks, list)
                   else ())


@dataclass(slots=True)
class Visit:
    """What one run knows: the target as given, and what each step learned for the steps after it."""

    stdio: bool
    timeout_s: float
    url: str | Secret = ""
    headers: Mapping[str, str | Secret] = field(default_factory=dict)
    http: httpx.AsyncClient | None = None
    argv: Sequence[str | Secret] = ()
    cwd: str | None = None
    env: dict[str, str] | None = None
    era: str = "auto"
    events: list[WireEvent] = field(default_factory=list)
    addresses: list[str] = field(default_factory=list)
    discover: Reply | None = None
    discover_alive: bool = True  # the transport that carried the probe lived through it
    initialize: Reply | None = None
    negotiated: Negotiated | None = None
    notified: str | None = None  # what went wrong sending notifications/initialized (None: it went out)
    clients: list[McpClient] = field(default_factory=list)  # closed at the end of the run
    first: McpClient | None = None  # the client of the first request (stdio: its process)

    def record(self, event: WireEvent) -> None:
        self.events.append(event)


Step = Callable[[Visit], Awaitable[Check]]


@dataclass(frozen=True, slots=True)
class Planned:
    name: str
    run: Step
    always: bool = False  # read even after a failed step (see the module docstring)


async def run_steps(visit: Visit, plan: Sequence[Planned]) -> list[Check]:
    """Each step in order; after a failed one, the rest are skipped with the reason (the `always` ones run)."""
    done: list[Check] = []
    failed: Check | None = None
    for step in plan:
        if failed is not None and not step.always:
            done.append(Check(step.name, "skipped", f"not run: {failed.name} failed"))
            continue
        check = await step.run(visit)
        done.append(check)
        if check.status == "fail" and failed is None:
            failed = check
    return done


def cut(text: str, limit: int = MAX_DETAIL) -> str:
    """A server's words in a detail: one line, and bounded."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "…"
