"""A real PostgreSQL server for tests: initdb into a temporary directory, one per test run.

It listens on 127.0.0.1 only, on a free port, with its unix socket inside the temporary directory. Over TCP it
asks for a password (scram-sha-256, a random one per run, in every URL the fixtures hand out), as a team's
PostgreSQL must; the unix socket, inside the temporary directory, trusts. Postgres refuses
to run as root, so as root the cluster belongs to the `postgres` user and every server command runs
through `runuser`. Without the binaries (Debian: the `postgresql` package) the tests that need it
skip with a reason, unless MCP_CONSOLE_REQUIRE_SERVICES=1 (CI sets it) makes that a failure: CI can
never skip them silently.

Fixtures (registered in tests/conftest.py): `postgres_url`, the server's admin URL for the whole run;
`pg_database`, the URL of a database made fresh for one test.
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REQUIRE_ENV = "MCP_CONSOLE_REQUIRE_SERVICES"
START_TIMEOUT_S = 60
_HBA = "local all all trust\nhost all all 127.0.0.1/32 scram-sha-256\n"


def services_required() -> bool:
    return os.environ.get(REQUIRE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def unavailable(reason: str) -> None:
    """Skip the test that needs a service, or fail it when CI requires the services."""
    if services_required():
        pytest.fail(f"{reason} ({REQUIRE_ENV}=1: the services must be there)", pytrace=False)
    pytest.skip(reason)


def postgres_bin_dir() -> Path | None:
    """Where initdb and pg_ctl are: on PATH (resolved), else the newest /usr/lib/postgresql/*/bin."""
    found = shutil.which("pg_ctl")
    if found:
        return Path(os.path.realpath(found)).parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name)
                        if Path(p).parent.name.isdigit() else 0)
    for candidate in reversed(candidates):
        if (Path(candidate) / "pg_ctl").exists() and (Path(candidate) / "initdb").exists():
            return Path(candidate)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class PostgresServer:
    bin_dir: Path
    root: Path
    port: int
    run_as: str | None  # the unprivileged user when the tests run as root
    password: str = field(default_factory=lambda: secrets.token_hex(16))

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def url(self) -> str:
        return f"postgresql://postgres:{self.password}@127.0.0.1:{self.port}/postgres"

    def _run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        command = [str(self.bin_dir / argv[0]), *argv[1:]]
        if self.run_as is not None:
            command = ["runuser", "-u", self.run_as, "--", *command]
        return subprocess.run(command, capture_output=True, text=True, timeout=START_TIMEOUT_S, check=False,
                              stdin=subprocess.DEVNULL)

    def start(self) -> None:
        pwfile = self.root / "pwfile"
        pwfile.write_text(self.password + "\n")
        if self.run_as is not None:
            owner = pwd.getpwnam(self.run_as)
            os.chown(pwfile, owner.pw_uid, owner.pw_gid)
        made = self._run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust", "-E", "UTF8",
                         "--no-sync", "--no-instructions", f"--pwfile={pwfile}")
        pwfile.unlink()
        if made.returncode != 0:
            raise RuntimeError(f"initdb failed: {made.stderr}")
        (self.data / "pg_hba.conf").write_text(_HBA)
        # Durability is not under test: a throwaway cluster may lose its last commits on a crash.
        options = (f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories={self.root} "
                   "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
        started = self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-o", options,
                            "-w", "-t", str(START_TIMEOUT_S), "start")
        if started.returncode != 0:
            log = (self.root / "server.log").read_text(errors="replace") if (self.root / "server.log").exists() \
                else ""
            raise RuntimeError(f"pg_ctl start failed: {started.stderr}{started.stdout}\n{log}")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def create_database(self) -> str:
        """A new empty database; its URL."""
        import psycopg  # only the tests that use PostgreSQL need the driver loaded

        name = f"t_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql://postgres:{self.password}@127.0.0.1:{self.port}/{name}"


def start_postgres() -> PostgresServer:
    """Start a throwaway server, or skip/fail (see the module docstring) when none can run here."""
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        unavailable("no PostgreSQL binaries (initdb, pg_ctl): install the Debian package postgresql")
        raise AssertionError("unreachable")
    run_as: str | None = None
    if os.getuid() == 0:
        run_as = "postgres"
        try:
            owner = pwd.getpwnam(run_as)
        except KeyError:
            unavailable("running as root and there is no postgres user to run PostgreSQL as")
            raise AssertionError("unreachable") from None
        if shutil.which("runuser") is None:
            unavailable("running as root and there is no runuser to run PostgreSQL as the postgres user")
    root = Path(tempfile.mkdtemp(prefix="mcp-console-pg-"))
    if run_as is not None:
        os.chown(root, owner.pw_uid, owner.pw_gid)
    server = PostgresServer(bin_dir=bin_dir, root=root, port=_free_port(), run_as=run_as)
    try:
        server.start()
    except Exception:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return server


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    server = start_postgres()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_url(postgres_server: PostgresServer) -> str:
    """The admin URL of the run's PostgreSQL server (database `postgres`): make databases with it."""
    return postgres_server.url


@pytest.fixture
def pg_database(postgres_server: PostgresServer) -> str:
    """The URL of a database made for this test alone, so tests never see each other's rows."""
    return postgres_server.create_database()
