"""Fixtures every test folder may use: the hostile target (tests/hostile), a real PostgreSQL (tests/services_pg)
and a real Redis (tests/services_redis); and the `services` mark on every test that needs one of those two, so
the fast tier (`bash scripts/test.sh --fast`: `-m "not browser and not slow and not services and not processes"`)
leaves them out; the `processes` mark on the suites that run the console as a process of its own."""

from pathlib import Path

import pytest

from tests.hostile.fixtures import hostile_http
from tests.services_pg import pg_database, postgres_server, postgres_url
from tests.services_redis import redis_prefix, redis_server, redis_url

__all__ = ["hostile_http", "pg_database", "postgres_server", "postgres_url", "redis_prefix", "redis_server",
           "redis_url"]

SERVICE_FIXTURES = frozenset({"pg_database", "postgres_server", "postgres_url", "redis_server", "redis_url"})


BROWSER_TESTS = Path(__file__).resolve().parent / "browser"
# Suites whose tests run the console itself as another process (`mcp-console call/check`, `serve` killed with -9):
# each pays a Python start and the app's imports. The `processes` mark leaves them out of the fast tier.
PROCESS_SUITES = frozenset({"test_cli_notes.py", "test_cli_eras.py", "test_hostile_lint.py", "test_attack_headless.py",
                            "test_attack_cli.py", "test_console_cli.py", "test_console_crash.py",
                            "test_attack_feed_process.py"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if SERVICE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.services)
        if Path(str(item.fspath)).name in PROCESS_SUITES:
            item.add_marker(pytest.mark.processes)
        if BROWSER_TESTS in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.browser)  # every test under tests/browser drives Chromium
