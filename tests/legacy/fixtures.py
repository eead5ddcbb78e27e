"""The legacy-only test server as a real process: HTTP on 127.0.0.1 (a fixture) or a stdio command line."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.hostile.fixtures import ROOT, _env

LEGACY_STDIO = [sys.executable, "-m", "tests.legacy.server", "--stdio"]


@pytest.fixture
def legacy_url() -> Iterator[str]:
    proc = subprocess.Popen([sys.executable, "-m", "tests.legacy.server", "--port", "0"], cwd=ROOT, env=_env(),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # the server prints its URL once it listens (or dies, ending stdout)
        if "listening on" not in line:
            raise RuntimeError(f"the legacy test server did not start: {line!r}")
        yield line.strip().rsplit(" ", 1)[1]
    finally:
        proc.kill()
        proc.wait(timeout=10)
