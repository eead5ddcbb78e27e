"""What a team deployment swaps in: the hub and the process directory, chosen from the settings.

An empty `redis_url` keeps one process exactly as it was: the in-process `Hub` and a `MemoryCluster` in
which this process is the only one (it owns every session it claims). What a team refuses to start without is
in `app/console/team_checks.py`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from app.console.cluster import Cluster, MemoryCluster
from app.console.cluster_redis import RedisCluster
from app.console.hub import Hub, Renderer
from app.console.hub_redis import OnRemote, RedisHub
from app.console.team_key import TeamKey
from app.settings import Settings


def team_key(settings: Settings) -> TeamKey | None:
    return TeamKey(settings.team_secret) if settings.team_secret else None


def make_hub(settings: Settings, render: Renderer, process_id: str | None = None,
             on_remote: OnRemote | None = None, before_publish: Callable[[], None] | None = None,
             on_forget: Callable[[str], None] | None = None,
             on_gap: Callable[[str], Awaitable[int | None]] | None = None,
             before_remote: Callable[[str], Awaitable[None]] | None = None,
             known_seq: Callable[[str], int | None] | None = None) -> Hub:
    if not settings.redis_url:
        return Hub(render, queue_size=settings.ws_queue_size, ring_size=settings.ws_queue_size)
    return RedisHub(render, queue_size=settings.ws_queue_size, ring_size=settings.ws_queue_size,
                    url=settings.redis_url, key=_required_key(settings), prefix=settings.redis_prefix,
                    process_id=process_id, on_remote=on_remote, before_publish=before_publish,
                    on_forget=on_forget, on_gap=on_gap, before_remote=before_remote, known_seq=known_seq)


def make_cluster(settings: Settings, process_id: str) -> Cluster:
    if not settings.redis_url:
        return MemoryCluster(process_id, settings.advertised_url, ttl_s=settings.lease_ttl_s,
                             heartbeat_s=settings.heartbeat_s)
    return RedisCluster(process_id, settings.advertised_url, settings.redis_url, key=_required_key(settings),
                        prefix=settings.redis_prefix, ttl_s=settings.lease_ttl_s, heartbeat_s=settings.heartbeat_s)


def _required_key(settings: Settings) -> TeamKey:
    key = team_key(settings)
    if key is None:
        raise ValueError("a team (redis_url set) needs team_secret")
    return key
