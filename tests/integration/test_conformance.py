"""The official `@modelcontextprotocol/conformance` client scenarios against the console's client.

Every client scenario that needs no OAuth runs at each revision it applies to that the console speaks
(2025-11-25 through the initialize handshake, 2026-07-28 stateless), driven by tests/conformance/client.py
over real HTTP to the runner's own scenario servers (pinned to 127.0.0.1). The README's "Conformance"
section lists the same table.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from tests.conformance.runner import list_client_scenarios, run_scenario, skip_reason

pytestmark = [pytest.mark.slow, pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")]

PASSING = [
    ("initialize", "2025-11-25"),
    ("sse-retry", "2025-11-25"),
    ("tools_call", "2025-11-25"),
    ("tools_call", "2026-07-28"),
    ("elicitation-sep1034-client-defaults", "2025-11-25"),
    ("request-metadata", "2026-07-28"),
    ("sep-2322-client-request-state", "2026-07-28"),
    ("http-standard-headers", "2026-07-28"),
    ("http-custom-headers", "2026-07-28"),
    ("http-invalid-tool-headers", "2026-07-28"),
    ("json-schema-ref-no-deref", "2026-07-28"),
    ("json-schema-2020-12-preservation", "2025-11-25"),
    ("json-schema-2020-12-preservation", "2026-07-28"),
]
# Scenario at revision -> the exact reason the console fails it (xfail, strict): none at the moment.
FAILING: dict[tuple[str, str], str] = {}

# Not run: OAuth (auth/*), and the skills extension (SEP-2640: a host fetching skill files), which the
# console does not implement; the runner reports those as skipped, which would prove nothing.
NOT_RUN_PREFIXES = ("auth/", "sep-2640-")

CASES = [pytest.param(s, v, id=f"{s}@{v}") for s, v in PASSING] + [
    pytest.param(s, v, id=f"{s}@{v}", marks=pytest.mark.xfail(strict=True, reason=why))
    for (s, v), why in FAILING.items()]


@pytest.mark.parametrize(("scenario", "version"), CASES)
def test_the_console_client_passes_the_conformance_scenario(scenario: str, version: str, tmp_path: Path) -> None:
    outcome = run_scenario(scenario, version, tmp_path)
    assert outcome.binds, f"the scenario server never listened:\n{outcome.output[-2000:]}"
    assert set(outcome.binds) == {"127.0.0.1"}, outcome.binds
    assert outcome.checks, f"the runner recorded no checks:\n{outcome.output[-2000:]}"
    assert not outcome.problems, outcome.summary()
    assert any(c.get("status") == "SUCCESS" for c in outcome.checks)
    assert outcome.returncode == 0, outcome.summary()


def test_every_non_oauth_client_scenario_of_the_pinned_package_is_accounted_for() -> None:
    listed = {s for s in list_client_scenarios() if not s.startswith(NOT_RUN_PREFIXES)}
    covered = {s for s, _v in PASSING} | {s for s, _v in FAILING}
    assert listed == covered


def test_mcp_console_check_never_calls_a_tool_whose_x_mcp_header_is_invalid(tmp_path: Path) -> None:
    console = shutil.which("mcp-console") or str(Path(sys.executable).with_name("mcp-console"))
    outcome = run_scenario("http-invalid-tool-headers", "2026-07-28", tmp_path,
                           command=f"{console} check --call-tools all")
    assert outcome.checks, outcome.output[-2000:]
    assert not outcome.problems, outcome.summary()
