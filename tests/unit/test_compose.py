"""docker-compose.yml is one console on SQLite and the demo server; deploy/team.compose.yml, added on top, makes a
team of two consoles on PostgreSQL and Redis behind nginx, every secret required and the services on a network of
their own. No Docker engine runs in CI, so the files are checked as data."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]


def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return data


def team() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(TEAM_FILE.read_text())
    return data


TEAM_FILE = ROOT / "deploy" / "team.compose.yml"
REQUIRED = re.compile(r"\$\{(MCP_CONSOLE_[A-Z_]+):\?[^}]+\}")


def test_every_published_port_is_bound_to_loopback_only() -> None:
    for name, service in {**compose()["services"], **team()["services"]}.items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), (name, port)


def test_the_main_file_is_the_one_process_console_on_sqlite_and_the_demo() -> None:
    assert set(compose()["services"]) == {"console", "demo"}
    env = compose()["services"]["console"]["environment"]
    assert "MCP_CONSOLE_DATABASE_URL" not in env and "MCP_CONSOLE_REDIS_URL" not in env
    assert "${MCP_CONSOLE_REDIS" not in (ROOT / "docker-compose.yml").read_text(), \
        "a team secret required in the main file would stop its plain `docker compose up`"


def test_the_team_file_runs_two_consoles_on_postgres_and_redis_behind_one_proxy() -> None:
    services = team()["services"]
    assert set(services) == {"postgres", "redis", "console-a", "console-b", "proxy"}
    advertised = set()
    for name in ("console-a", "console-b"):
        env = services[name]["environment"]
        assert env["MCP_CONSOLE_DATABASE_URL"].startswith("postgresql://console:${MCP_CONSOLE_PG_PASSWORD:?")
        assert env["MCP_CONSOLE_REDIS_URL"].startswith("redis://:${MCP_CONSOLE_REDIS_PASSWORD:?")
        advertised.add(env["MCP_CONSOLE_ADVERTISE_URL"])
        assert "ports" not in services[name], "only the proxy is published"
    assert advertised == {"http://console-a:8780", "http://console-b:8780"}
    assert services["proxy"]["ports"] == ["127.0.0.1:8780:8780"]


def test_every_team_secret_and_the_host_name_are_required_with_no_default() -> None:
    text = TEAM_FILE.read_text()
    required = set(REQUIRED.findall(text))
    assert required == {"MCP_CONSOLE_TOKEN", "MCP_CONSOLE_TEAM_SECRET", "MCP_CONSOLE_REDIS_PASSWORD",
                        "MCP_CONSOLE_PG_PASSWORD", "MCP_CONSOLE_PUBLIC_HOST"}
    assert ":-" not in text and "mcp-team.localhost" not in text, "no default for any of them"
    env = team()["services"]["console-a"]["environment"]
    assert env["MCP_CONSOLE_PUBLIC_HOST"].startswith("${MCP_CONSOLE_PUBLIC_HOST:?")
    assert env["MCP_CONSOLE_TEAM_SECRET"].startswith("${MCP_CONSOLE_TEAM_SECRET:?")
    assert team()["services"]["postgres"]["environment"]["POSTGRES_PASSWORD"].startswith(
        "${MCP_CONSOLE_PG_PASSWORD:?")


def test_redis_requires_its_password_given_on_no_command_line() -> None:
    redis = team()["services"]["redis"]
    assert redis["environment"]["REDISCLI_AUTH"].startswith("${MCP_CONSOLE_REDIS_PASSWORD:?")
    command = " ".join(redis["command"])
    assert "requirepass" in command and "redis-server -" in command, "the password goes to redis-server on stdin"
    assert "--requirepass" not in command


def test_postgres_and_redis_sit_on_an_internal_network_only_the_consoles_join() -> None:
    data = team()
    assert data["networks"]["team-internal"]["internal"] is True
    joined = {name for name, service in data["services"].items() if "team-internal" in service.get("networks", [])}
    assert joined == {"postgres", "redis", "console-a", "console-b"}
    for name in ("postgres", "redis"):
        assert data["services"][name]["networks"] == ["team-internal"]
    assert "networks" not in compose()["services"]["demo"], "the demo server stays on the default network"
    assert data["services"]["proxy"]["networks"] == ["default"]


def test_the_image_runs_the_console_as_a_user_that_is_not_root() -> None:
    lines = [line.strip() for line in (ROOT / "Dockerfile").read_text().splitlines()]
    users = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert users and users[-1] not in ("root", "0")


def test_the_proxy_upgrades_websockets_and_passes_the_host_through_to_both_consoles() -> None:
    conf = (ROOT / "deploy" / "nginx-team.conf").read_text()
    assert "server console-a:8780" in conf and "server console-b:8780" in conf
    assert "proxy_set_header Upgrade $http_upgrade;" in conf
    assert "proxy_set_header Connection $connection_upgrade;" in conf
    assert "proxy_set_header Host $http_host;" in conf
    assert "listen 8780;" in conf
