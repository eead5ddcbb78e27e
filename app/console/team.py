"""What a team deployment swaps in: the hub and the process directory, chosen from the settings.

An empty `redis_url` keeps one process exactly as it was: the in-process `Hub` and a `MemoryCluster` in
which this process is the only one (it owns every session it claims).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from app.console.cluster import Cluster, MemoryCluster, RedisCluster
from app.console.hub import Hub, Renderer
from app.console.hub_redis import OnRemote, RedisHub
from app.settings import Settings


def make_hub(settings: Settings, render: Renderer, process_id: str | None = None,
             on_remote: OnRemote | None = None, before_publish: Callable[[], None] | None = None,
             on_forget: Callable[[str], None] | None = None, on_gap: Callable[[str], Awaitable[None]] | None = None,
             before_remote: Callable[[str], Awaitable[None]] | None = None) -> Hub:
    if not settings.redis_url:
        return Hub(render, queue_size=settings.ws_queue_size, ring_size=settings.ws_queue_size)
    return RedisHub(render, queue_size=settings.ws_queue_size, ring_size=settings.ws_queue_size,
                    url=settings.redis_url, prefix=settings.redis_prefix, process_id=process_id,
                    on_remote=on_remote, before_publish=before_publish, on_forget=on_forget,
                    on_gap=on_gap, before_remote=before_remote)


def make_cluster(settings: Settings, process_id: str) -> Cluster:
    if not settings.redis_url:
        return MemoryCluster(process_id, settings.advertised_url, ttl_s=settings.lease_ttl_s,
                             heartbeat_s=settings.heartbeat_s)
    return RedisCluster(process_id, settings.advertised_url, settings.redis_url, prefix=settings.redis_prefix,
                        ttl_s=settings.lease_ttl_s, heartbeat_s=settings.heartbeat_s)
