"""What a team of console processes refuses to start without (`mcp-console serve` and `create_app` ask).

A team trusts only what it has authenticated. Redis and PostgreSQL are reached with credentials (an attack
found a team on a password-less Redis owned by anything that could reach it, the stdio servers the consoles
start included), the processes prove themselves to each other with the team secret (`app/console/team_key.py`),
and the public host name is the deployment's own (a name every deployment shared let a hostile server on
another port of it receive the owner's cookie).

Apart from `app/console/team.py` so that the command line checks its settings without loading Redis's client.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from app.console.team_key import secret_problem
from app.settings import Settings

# The public host the compose file once defaulted to: every deployment that kept it shared one cookie scope.
SHARED_DEFAULT_HOST = "mcp-team.localhost"


def team_problems(settings: Settings) -> list[str]:
    """Why this team process must not start (empty when it may, or when it is no team: redis_url empty)."""
    if not settings.redis_url:
        return []
    problems: list[str] = []
    if not _redis_has_credentials(settings.redis_url):
        problems.append("redis_url names no password (redis://:PASSWORD@host:6379/0, or a user and password for a "
                        "Redis ACL user): a team's Redis must require one, or anything that can reach it (a stdio "
                        "server a console started included) can read and write the team's state.")
    if settings.database_url and not _postgres_has_credentials(settings.database_url):
        problems.append("database_url names no password (postgresql://user:PASSWORD@host:5432/db, or sslcert= for a "
                        "client certificate): a team's PostgreSQL must require one.")
    secret = secret_problem(settings.team_secret, settings.token)
    if secret is not None:
        problems.append(secret)
    host = settings.public_host.strip().lower()
    if not host:
        problems.append("A team needs public_host (MCP_CONSOLE_PUBLIC_HOST), the same on every process: a name of "
                        "this deployment's own, e.g. mcp-<16 random a-z2-7>.localhost. The owner's cookie is bound "
                        "to it; a name another deployment or service shares would receive that cookie.")
    elif host == SHARED_DEFAULT_HOST:
        problems.append(f"public_host {SHARED_DEFAULT_HOST!r} was the compose file's old default: every deployment "
                        "that kept it shares one cookie scope, so a server on another port of that name receives "
                        "the owner's cookie. Pick a random name of your own.")
    return problems


def _redis_has_credentials(url: str) -> bool:
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    return bool(parts.password or query.get("password"))


def _postgres_has_credentials(url: str) -> bool:
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    return bool(parts.password or query.get("password") or query.get("sslcert"))
