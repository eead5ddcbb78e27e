"""docker-compose.yml: the default profile is one console on SQLite; the `team` profile adds two consoles on
PostgreSQL and Redis behind nginx. No Docker engine runs in CI, so the file is checked as data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]


def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return data


def test_every_published_port_is_bound_to_loopback_only() -> None:
    for name, service in compose()["services"].items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), (name, port)


def test_the_default_profile_is_the_one_process_console_on_sqlite_and_the_demo() -> None:
    default = {n for n, s in compose()["services"].items() if not s.get("profiles")}
    assert default == {"console", "demo"}
    env = compose()["services"]["console"]["environment"]
    assert "MCP_CONSOLE_DATABASE_URL" not in env and "MCP_CONSOLE_REDIS_URL" not in env


def test_the_team_profile_runs_two_consoles_on_postgres_and_redis_behind_one_proxy() -> None:
    services = compose()["services"]
    team = {n for n, s in services.items() if s.get("profiles") == ["team"]}
    assert team == {"postgres", "redis", "console-a", "console-b", "proxy"}
    advertised = set()
    for name in ("console-a", "console-b"):
        env = services[name]["environment"]
        assert env["MCP_CONSOLE_DATABASE_URL"].startswith("postgresql://")
        assert env["MCP_CONSOLE_REDIS_URL"].startswith("redis://")
        assert env["MCP_CONSOLE_PUBLIC_HOST"]
        advertised.add(env["MCP_CONSOLE_ADVERTISE_URL"])
        assert "ports" not in services[name], "only the proxy is published"
    assert advertised == {"http://console-a:8780", "http://console-b:8780"}
    assert services["proxy"]["ports"] == ["127.0.0.1:8780:8780"]


def test_the_proxy_upgrades_websockets_and_passes_the_host_through_to_both_consoles() -> None:
    conf = (ROOT / "deploy" / "nginx-team.conf").read_text()
    assert "server console-a:8780" in conf and "server console-b:8780" in conf
    assert "proxy_set_header Upgrade $http_upgrade;" in conf
    assert "proxy_set_header Connection $connection_upgrade;" in conf
    assert "proxy_set_header Host $http_host;" in conf
    assert "listen 8780;" in conf
