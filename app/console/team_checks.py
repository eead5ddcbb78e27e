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


def serving_problems(settings: Settings) -> list[str]:
    """What `mcp-console serve` also asks of a team process: what every process of the team must share. (The app
    itself runs without them: the tests start teams whose processes each keep their own SQLite.)"""
    if not settings.redis_url:
        return []
    problems = []
    if not settings.token:
        problems.append("A team needs MCP_CONSOLE_TOKEN, the same on every process (without it each process makes "
                        "a random token of its own, and a browser logged in on one is a stranger to the others).")
    if not settings.database_url:
        problems.append("A team needs database_url (PostgreSQL), the same on every process: without it each "
                        "process keeps its own SQLite and the team shares no session.")
    return problems


def service_problems(settings: Settings, timeout_s: float = 5.0) -> list[str]:
    """What the services say when asked once, before anything starts: a password Redis or PostgreSQL refuses, a
    team Redis that takes clients without one, a database that does not answer. A Redis that does not answer is
    no reason to refuse (the team keeps working on its own tabs and catches up once it is back: see the README);
    a wrong password would never heal, and the process would go on logging it twice a second."""
    problems: list[str] = []
    if settings.redis_url:
        problems += _redis_problems(settings.redis_url, timeout_s)
    if settings.database_url:
        problems += _postgres_problems(settings.database_url, timeout_s)
    return problems


def _redis_problems(url: str, timeout_s: float) -> list[str]:
    import redis  # only a team needs Redis's client loaded

    try:
        redis.Redis.from_url(url, socket_connect_timeout=timeout_s, socket_timeout=timeout_s).ping()
    except redis.AuthenticationError as exc:
        if "without any password configured" in str(exc):
            return ["Redis at redis_url has no password set, so anything that reaches it can read and write the "
                    "team's state: give it one (requirepass, or an ACL user) and put it in redis_url."]
        return [f"Redis refused the password in redis_url ({exc})."]
    except (redis.RedisError, OSError):
        return []  # not reachable now: the hub and the directory retry, and say so
    parts = urlsplit(url)
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    bare = parts._replace(netloc=host + (f":{parts.port}" if parts.port else ""), query="").geturl()
    try:
        redis.Redis.from_url(bare, socket_connect_timeout=timeout_s, socket_timeout=timeout_s).ping()
    except redis.AuthenticationError:
        return []  # NOAUTH without the password: as a team's Redis must be
    except (redis.RedisError, OSError):
        return []
    return ["Redis at redis_url answers clients that give no password (the one in redis_url is not required): set "
            "requirepass, or turn the default user off, so that only the team's processes can use it."]


def _postgres_problems(url: str, timeout_s: float) -> list[str]:
    import psycopg  # only a console on PostgreSQL needs the driver loaded

    try:
        with psycopg.connect(url, connect_timeout=max(1, int(timeout_s))) as conn:
            conn.execute("SELECT 1")
    except psycopg.OperationalError as exc:
        first = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        return [f"PostgreSQL at database_url did not let this process in: {first}"]
    return []
