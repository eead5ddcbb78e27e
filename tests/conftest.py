"""Fixtures every test folder may use: the hostile target (tests/hostile), a real Redis (tests/services_redis)."""

from tests.hostile.fixtures import hostile_http
from tests.services_redis import redis_prefix, redis_url

__all__ = ["hostile_http", "redis_prefix", "redis_url"]
