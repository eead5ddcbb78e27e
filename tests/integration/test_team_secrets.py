"""A team deployment keeps a target's secret values in PostgreSQL's owner-only tables only: never in another table,
nor on Redis (the bus and the session streams carry events, which hold masks)."""

from __future__ import annotations

from collections.abc import Callable

import psycopg
import redis

from tests.hostile.fixtures import HostileUrl
from tests.integration.conftest import JSON, Console, eventually

HEADER = "hv-team-4b7e1d-secret"
QUERY = "qv-team-9c2a5f-secret"


def _pg_tables(database: str) -> dict[str, str]:
    with psycopg.connect(database) as conn:
        names = [r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema='public'").fetchall()]
        return {name: repr(conn.execute(f'SELECT * FROM "{name}"').fetchall()) for name in names}


def _redis_text(url: str, prefix: str) -> dict[str, str]:
    client = redis.Redis.from_url(url)
    try:
        found: dict[str, str] = {}
        for key in client.scan_iter(match=f"{prefix}*"):
            kind = client.type(key).decode()
            if kind == "stream":
                value = repr(client.xrange(key))
            elif kind == "hash":
                value = repr(client.hgetall(key))
            elif kind == "string":
                value = repr(client.get(key))
            elif kind == "set":
                value = repr(client.smembers(key))
            elif kind == "zset":
                value = repr(client.zrange(key, 0, -1, withscores=True))
            else:
                value = repr(client.lrange(key, 0, -1)) if kind == "list" else kind
            found[key.decode()] = value
        return found
    finally:
        client.close()


async def test_a_team_stores_and_publishes_a_targets_secret_values_only_in_the_owner_only_tables(
        make_console: Callable[..., Console], pg_database: str, redis_url: str, redis_prefix: str,
        hostile_http: Callable[..., HostileUrl]) -> None:
    console = make_console(redis_url=redis_url, redis_prefix=redis_prefix, database_url=pg_database,
                           advertise_url="http://127.0.0.1:1/a")
    await console.manager.start_services()
    s = await console.connect(kind="http", url=hostile_http("text") + f"?api_key={QUERY}",
                              headers=f"Authorization: Bearer {HEADER}")
    assert s["status"] == "connected", s["status_message"]
    sid = str(s["id"])
    said = await console.http.post(f"/sessions/{sid}/tools/call", headers=JSON,
                                   data={"tool": "echo_escaped", "arg.text": f"{HEADER} and {QUERY}"})
    assert said.status_code == 200, said.text
    console.manager.store.flush()

    async def published() -> bool:  # the bus has the call's end (the sender pipelines its XADDs in the background)
        return any(said.json()["key"] in text for text in _redis_text(redis_url, redis_prefix).values())
    await eventually(published, what="the call's events on Redis")

    tables = _pg_tables(pg_database)
    assert sorted(t for t, rows in tables.items() if HEADER in rows) == ["exact_events", "secrets"]
    assert sorted(t for t, rows in tables.items() if QUERY in rows) == ["exact_events", "secrets"]
    on_redis = _redis_text(redis_url, redis_prefix)
    assert on_redis and not [k for k, text in on_redis.items() if HEADER in text or QUERY in text]
