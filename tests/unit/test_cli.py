"""The command line refuses every spelling of a wildcard bind unless told otherwise."""

from __future__ import annotations

import pytest

from app.cli import binds_everywhere


@pytest.mark.parametrize("host", ["0.0.0.0", "0", "::", "::0", "[::]", "0:0::0", "*", ""])
def test_every_spelling_of_a_wildcard_address_counts_as_binding_everywhere(host: str) -> None:
    assert binds_everywhere(host)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"])
def test_loopback_addresses_do_not_count_as_binding_everywhere(host: str) -> None:
    assert not binds_everywhere(host)
