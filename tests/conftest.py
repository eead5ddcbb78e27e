"""Fixtures every test folder may use: the hostile target (tests/hostile), a real PostgreSQL (tests/services_pg),
a real Redis (tests/services_redis) and a real OpenID provider with the demo server it protects
(tests/oauth_services); and the `services` mark on every test that needs one of those, so
the fast tier (`bash scripts/test.sh --fast`: `-m "not browser and not slow and not services and not processes"`)
leaves them out; the `processes` mark on the suites that run the console as a process of its own."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hostile.fixtures import hostile_http
from tests.oauth_services import oauth_token_ttl, oidc_provider, protected_demo, protected_demo_port
from tests.services_pg import pg_database, postgres_server, postgres_url
from tests.services_redis import redis_prefix, redis_server, redis_url
from tests.team_processes import Team, TeamSpec

__all__ = ["hostile_http", "oauth_token_ttl", "oidc_provider", "pg_database", "postgres_server", "postgres_url",
           "protected_demo", "protected_demo_port", "redis_prefix", "redis_server", "redis_url"]

SERVICE_FIXTURES = frozenset({"pg_database", "postgres_server", "postgres_url", "redis_server", "redis_url",
                              "oidc_provider", "protected_demo"})
# The OpenID provider is third-party Node code as well as a service: `slow` too (tests/oauth_services.py).
NODE_FIXTURES = frozenset({"oidc_provider", "protected_demo"})


BROWSER_TESTS = Path(__file__).resolve().parent / "browser"
# Suites whose tests run the console itself as another process (`mcp-console call/check`, `serve` killed with -9):
# each pays a Python start and the app's imports. The `processes` mark leaves them out of the fast tier.
PROCESS_SUITES = frozenset({"test_cli_notes.py", "test_cli_commands.py", "test_hostile_lint.py", "test_console_cli.py",
                            "test_console_crash.py", "test_cli_refusals.py", "test_cli_configs.py",
                            "test_cli_word_order.py", "test_doctor_cli.py", "test_tasks_cli.py"})
PROCESS_FIXTURES = frozenset({"served_console", "team"})  # a `serve` process; the team's processes


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if SERVICE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.services)
        if NODE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
        if Path(str(item.fspath)).name in PROCESS_SUITES or PROCESS_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.processes)
        if BROWSER_TESTS in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.browser)  # every test under tests/browser drives Chromium


@pytest.fixture
def team(tmp_path: Path, pg_database: str, redis_url: str, redis_prefix: str) -> Iterator[Team]:
    """The team deployment as it runs: `python -m app serve` processes on one PostgreSQL and one Redis (see
    tests/team_processes.py). A suite that needs another shape names its fixture for that shape."""
    made = Team(TeamSpec(pg_database, redis_url, redis_prefix), tmp_path)
    yield made
    made.stop()
