"""The PostgreSQL test fixture skips where there is no server to start, except in CI, where that fails."""

from __future__ import annotations

import pytest

from tests.services_pg import REQUIRE_ENV, unavailable


def test_a_missing_postgres_skips_with_its_reason_for_a_developer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(REQUIRE_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="install the Debian package postgresql"):
        unavailable("no PostgreSQL binaries: install the Debian package postgresql")


def test_a_missing_postgres_fails_when_the_services_are_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="must be there"):
        unavailable("no PostgreSQL binaries: install the Debian package postgresql")
