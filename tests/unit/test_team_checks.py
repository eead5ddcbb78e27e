"""A team console process refuses to start without what makes it trustworthy: Redis and PostgreSQL credentials,
a team secret of its own (not the owner token), and a public host name of this deployment's own. Checked as the
command line runs it, before anything binds or connects."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.console.team_checks import team_problems
from app.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "team-checks-owner-token-0123456789"
SECRET = "team-checks-secret-0123456789abcdef0123456789"
GOOD = {"MCP_CONSOLE_TOKEN": TOKEN, "MCP_CONSOLE_TEAM_SECRET": SECRET,
        "MCP_CONSOLE_REDIS_URL": "redis://:redis-pw@127.0.0.1:9/0",
        "MCP_CONSOLE_DATABASE_URL": "postgresql://console:pg-pw@127.0.0.1:9/console",
        "MCP_CONSOLE_PUBLIC_HOST": "mcp-abcdefghijklmnop.localhost"}


def serve(tmp_path: Path, **changes: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_CONSOLE_")}
    env.update(GOOD)
    for name, value in changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return subprocess.run([sys.executable, "-m", "app", "serve", "--port", "0", "--data-dir", str(tmp_path)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("changes, said", [
    ({"MCP_CONSOLE_REDIS_URL": "redis://127.0.0.1:9/0"}, "redis_url names no password"),
    ({"MCP_CONSOLE_DATABASE_URL": "postgresql://console@127.0.0.1:9/console"}, "database_url names no password"),
    ({"MCP_CONSOLE_TEAM_SECRET": None}, "team_secret"),
    ({"MCP_CONSOLE_TEAM_SECRET": "short"}, "at least 32"),
    ({"MCP_CONSOLE_TEAM_SECRET": TOKEN + "-and-more-to-pass-the-length", "MCP_CONSOLE_TOKEN":
      TOKEN + "-and-more-to-pass-the-length"}, "must not be the owner token"),
    ({"MCP_CONSOLE_PUBLIC_HOST": None}, "A team needs public_host"),
    ({"MCP_CONSOLE_PUBLIC_HOST": "mcp-team.localhost"}, "old default"),
])
def test_a_team_process_refuses_to_start_without_what_makes_it_trustworthy(
        tmp_path: Path, changes: dict[str, str | None], said: str) -> None:
    done = serve(tmp_path, **changes)
    assert done.returncode != 0
    assert said in done.stderr, done.stderr
    assert "redis-pw" not in done.stderr and "pg-pw" not in done.stderr and SECRET not in done.stderr


def test_a_team_with_every_credential_passes_the_checks_and_a_single_process_needs_none() -> None:
    settings = Settings(token=TOKEN, team_secret=SECRET, redis_url=GOOD["MCP_CONSOLE_REDIS_URL"],
                        database_url=GOOD["MCP_CONSOLE_DATABASE_URL"], public_host=GOOD["MCP_CONSOLE_PUBLIC_HOST"])
    assert team_problems(settings) == []
    assert team_problems(Settings(redis_url="rediss://user:pw@redis:6380/0?ssl_cert_reqs=required",
                                  database_url="postgresql://u@db/c?sslmode=verify-full&sslcert=/c.pem",
                                  team_secret=SECRET, public_host="console.example.com")) == []
    assert team_problems(Settings()) == []
    assert team_problems(Settings(database_url="postgresql://console@127.0.0.1/console")) == []
