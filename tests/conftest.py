"""Fixtures every test folder may use: the hostile target (tests/hostile)."""

from tests.hostile.fixtures import hostile_http

__all__ = ["hostile_http"]
