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

# The OAuth scenarios, run against the command line itself (`mcp-console check --oauth follow`, through
# tests/conformance/cli_client.py), at each revision whose requirement set lists them; the two 2025-03-26
# back-compat ones at 2025-11-25. The README's "Conformance" section lists the same table.
BOTH_AUTH = ["metadata-default", "metadata-var1", "metadata-var2", "metadata-var3", "basic-cimd",
             "scope-from-www-authenticate", "scope-from-scopes-supported", "scope-omitted-when-undefined",
             "scope-step-up", "scope-retry-limit", "token-endpoint-auth-basic", "token-endpoint-auth-post",
             "token-endpoint-auth-none", "pre-registration"]
MODERN_AUTH = ["resource-mismatch", "offline-access-scope", "offline-access-not-supported",
               "authorization-server-migration", "iss-supported", "iss-not-advertised", "iss-supported-missing",
               "iss-wrong-issuer", "iss-unexpected", "iss-normalized", "metadata-issuer-mismatch"]
BACK_COMPAT_AUTH = ["2025-03-26-oauth-metadata-backcompat", "2025-03-26-oauth-endpoint-fallback"]
AUTH_PASSING = ([(f"auth/{s}", "2026-07-28") for s in BOTH_AUTH + MODERN_AUTH]
                + [(f"auth/{s}", "2025-11-25") for s in BOTH_AUTH]
                # applicable at 2025-03-26 only: the console speaks it through the same initialize handshake
                + [(f"auth/{s}", "2025-03-26") for s in BACK_COMPAT_AUTH])
# Extension scenarios (scored by neither requirement set) the console does not implement: client_credentials
# grants, enterprise-managed authorization, DPoP and workload identity federation.
AUTH_NOT_RUN = {"auth/client-credentials-jwt", "auth/client-credentials-basic",
                "auth/enterprise-managed-authorization", "auth/dpop", "auth/dpop-nonce", "auth/wif-jwt-bearer"}
CLI_CLIENT = Path(__file__).resolve().parents[1] / "conformance" / "cli_client.py"

# Not run: the skills extension (SEP-2640: a host fetching skill files), which the console does not implement;
# the runner reports those as skipped, which would prove nothing.
NOT_RUN_PREFIXES = ("sep-2640-",)

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


@pytest.mark.parametrize(("scenario", "version"),
                         [pytest.param(s, v, id=f"{s}@{v}") for s, v in AUTH_PASSING])
def test_the_command_line_passes_the_oauth_conformance_scenario(scenario: str, version: str, tmp_path: Path) -> None:
    outcome = run_scenario(scenario, version, tmp_path, command=f"{sys.executable} {CLI_CLIENT}")
    assert set(outcome.binds) == {"127.0.0.1"}, outcome.binds
    assert outcome.checks, f"the runner recorded no checks:\n{outcome.output[-2000:]}"
    assert not outcome.problems, outcome.summary()
    assert any(c.get("status") == "SUCCESS" for c in outcome.checks)
    assert outcome.returncode == 0, outcome.summary()


def test_every_client_scenario_of_the_pinned_package_is_accounted_for() -> None:
    listed = {s for s in list_client_scenarios() if not s.startswith(NOT_RUN_PREFIXES)}
    covered = {s for s, _v in PASSING} | {s for s, _v in FAILING} | {s for s, _v in AUTH_PASSING} | AUTH_NOT_RUN
    assert listed == covered


def test_mcp_console_check_never_calls_a_tool_whose_x_mcp_header_is_invalid(tmp_path: Path) -> None:
    console = shutil.which("mcp-console") or str(Path(sys.executable).with_name("mcp-console"))
    outcome = run_scenario("http-invalid-tool-headers", "2026-07-28", tmp_path,
                           command=f"{console} check --call-tools all")
    assert outcome.checks, outcome.output[-2000:]
    assert not outcome.problems, outcome.summary()
