"""Fixtures every test folder may use: the hostile target (tests/hostile), a real PostgreSQL (tests/services_pg)
and a real Redis (tests/services_redis); and the `services` mark on every test that needs one of those two, so
the fast tier (`bash scripts/test.sh --fast`: `-m "not browser and not slow and not services"`) leaves them out."""

from pathlib import Path

import pytest

from tests.hostile.fixtures import hostile_http
from tests.services_pg import pg_database, postgres_server, postgres_url
from tests.services_redis import redis_prefix, redis_server, redis_url

__all__ = ["hostile_http", "pg_database", "postgres_server", "postgres_url", "redis_prefix", "redis_server",
           "redis_url"]

SERVICE_FIXTURES = frozenset({"pg_database", "postgres_server", "postgres_url", "redis_server", "redis_url"})


BROWSER_TESTS = Path(__file__).resolve().parent / "browser"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if SERVICE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.services)
        if BROWSER_TESTS in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.browser)  # every test under tests/browser drives Chromium
