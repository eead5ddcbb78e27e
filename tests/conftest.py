"""Fixtures every test folder may use: the hostile target (tests/hostile), a real PostgreSQL (tests/services_pg)."""

from tests.hostile.fixtures import hostile_http
from tests.services_pg import pg_database, postgres_server, postgres_url

__all__ = ["hostile_http", "pg_database", "postgres_server", "postgres_url"]
