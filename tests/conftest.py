"""Fixtures every test folder may use: the hostile target (tests/hostile), a real PostgreSQL (tests/services_pg)
and a real Redis (tests/services_redis)."""

from tests.hostile.fixtures import hostile_http
from tests.services_pg import pg_database, postgres_server, postgres_url
from tests.services_redis import redis_prefix, redis_server, redis_url

__all__ = ["hostile_http", "pg_database", "postgres_server", "postgres_url", "redis_prefix", "redis_server",
           "redis_url"]
