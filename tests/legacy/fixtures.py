"""The legacy-only test server as a real process: HTTP on 127.0.0.1 (a fixture) or a stdio command line."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest

from tests.hostile.fixtures import ROOT, _env

LEGACY_STDIO = [sys.executable, "-m", "tests.legacy.server", "--stdio"]


def _started(procs: list[subprocess.Popen[str]], *flags: str) -> str:
    """Start the server with `flags` (kept in `procs` to be stopped); its URL once it listens."""
    proc = subprocess.Popen([sys.executable, "-m", "tests.legacy.server", "--port", "0", *flags], cwd=ROOT,
                            env=_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    procs.append(proc)
    assert proc.stdout is not None
    line = proc.stdout.readline()  # the server prints its URL once it listens (or dies, ending stdout)
    if "listening on" not in line:
        raise RuntimeError(f"the legacy test server did not start: {line!r}")
    return line.strip().rsplit(" ", 1)[1]


def _stop(procs: list[subprocess.Popen[str]]) -> None:
    for proc in procs:
        proc.kill()
        proc.wait(timeout=10)


@pytest.fixture
def legacy_url() -> Iterator[str]:
    procs: list[subprocess.Popen[str]] = []
    try:
        yield _started(procs)
    finally:
        _stop(procs)


@pytest.fixture
def legacy_server() -> Iterator[Callable[..., str]]:
    """Start the server with the given flags (`--standalone`, `--sse-2024`); returns its URL. Each is stopped after
    the test."""
    procs: list[subprocess.Popen[str]] = []
    try:
        yield lambda *flags: _started(procs, *flags)
    finally:
        _stop(procs)
