"""The process directory in Redis: registrations, ownership records, and the atomic decisions on them.

The rule is the one `app/console/cluster.py` draws (a registration with a TTL renewed by a heartbeat; an
ownership record that counts only while its process is alive; an atomic claim).

In Redis a registration is signed with the team key (`app/console/team_key.py`): actions are forwarded to the
URL it names, so one written by anything else (a client of the same Redis) must never count. A registration
whose signature fails is no process: it is logged, never listed or forwarded to, and never claimed over (the
process it names may be alive: a live process writes its signed registration back within a heartbeat). An
ownership record rewritten by anything else (naming a process that is none) is written back by its real owner
at its next heartbeat; meanwhile an action on that session is answered 503. So a client of Redis without the team
secret can deny service, never redirect an action.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from typing import Any

import redis.asyncio as aioredis

from app.console.cluster import FAILURES, Heartbeat, ProcessInfo
from app.console.team_key import TeamKey

log = logging.getLogger("mcp_console.cluster")
# How far apart the clocks of a team's processes may be: a registration older than a lease and this is no longer
# believed, whatever its key's TTL says (anything that reaches Redis can set a TTL).
REGISTRATION_SKEW_S = 10.0


# An ownership record is `<process id>|<time>|<signature>`, signed for its session: the scripts compare the process id
# before the first `|` (they cannot check a signature; Python does, before it acts on what it read).
# KEYS[1] owner key; ARGV[1] me, ARGV[2] process key prefix, ARGV[3] my signed record, ARGV[4] a record this process
# read there and may claim over ("" for none): one not signed for the session, standing longer than any live owner
# would take to write its own back. Returns 1 when the session is now mine.
_CLAIM = """
if redis.call('EXISTS', ARGV[2] .. ARGV[1]) == 0 then return 0 end
local current = redis.call('GET', KEYS[1])
if current and not (ARGV[4] ~= '' and current == ARGV[4]) then
  local owner = string.match(current, '^([^|]*)')
  if owner ~= ARGV[1] and redis.call('EXISTS', ARGV[2] .. owner) == 1 then return 0 end
end
redis.call('SET', KEYS[1], ARGV[3])
return 1
"""
# KEYS[1] owner key; ARGV[1] me, ARGV[2] process key prefix, ARGV[3] the record naming the dead owner exactly as read
# and checked, ARGV[4] my signed record: mine only while it is still that record, and while I am registered.
_SEIZE = """
if redis.call('EXISTS', ARGV[2] .. ARGV[1]) == 0 then return 0 end
if redis.call('GET', KEYS[1]) ~= ARGV[3] then return 0 end
redis.call('SET', KEYS[1], ARGV[4])
return 1
"""
# KEYS[1] owner key; ARGV[1] my signed record, ARGV[2] the value this process read there: written only if unchanged.
_REPAIR = """
if redis.call('GET', KEYS[1]) == ARGV[2] then redis.call('SET', KEYS[1], ARGV[1]) return 1 end
return 0
"""
# KEYS[1] owner key; ARGV[1] me: only the owner releases.
_RELEASE = """
local current = redis.call('GET', KEYS[1])
if current and string.match(current, '^([^|]*)') == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
# What of a registration or an ownership record is read (GETRANGE): a console writes a few hundred bytes, and a
# value of megabytes that anything else wrote there must not be read, decoded and parsed on the loop at each look.
MAX_REGISTRATION_BYTES = 4096
MAX_RECORD_BYTES = 512


class RedisCluster(Heartbeat):
    """Keys: `{prefix}proc:{process_id}` = JSON {url, at, sig} with a TTL; `{prefix}owner:{session_id}` =
    `process id|time|signature`, signed for that session (see the module docstring).

    The scripts name process keys they build themselves (not in KEYS): fine on one Redis, not on Redis Cluster.
    """

    def __init__(self, process_id: str, url: str, redis_url: str, *, key: TeamKey, prefix: str = "mcp-console:",
                 ttl_s: float = 5.0, heartbeat_s: float = 1.0, timeout_s: float = 5.0,
                 skew_s: float = REGISTRATION_SKEW_S) -> None:
        super().__init__(heartbeat_s)
        self.process_id, self.url, self.ttl_s = process_id, url, ttl_s
        self._key = key
        self._skew_s = skew_s
        self.forged_seen = 0  # registrations and records read whose signature failed (logged once per name)
        self._forged_logged: set[str] = set()
        # Records not signed for their session, by (session, value): when this process first saw each. One that
        # stands past a lease and the skew has no live owner behind it (a live one writes its own back at its
        # next heartbeat), so it may be claimed over; until then the session is nobody's to take (503).
        self._unsigned_since: dict[tuple[str, str], float] = {}
        self._proc_prefix = f"{prefix}proc:"
        self._owner_prefix = f"{prefix}owner:"
        # surrogateescape: a value anything else wrote may hold any bytes; decoded strictly, one made this process's
        # heartbeat fail for good. This way it is a string that fails its signature, and writes it back unchanged.
        self._redis: aioredis.Redis = aioredis.Redis.from_url(
            redis_url, decode_responses=True, encoding_errors="surrogateescape", socket_connect_timeout=timeout_s,
            socket_timeout=timeout_s)
        self._claim: Any = self._redis.register_script(_CLAIM)
        self._release: Any = self._redis.register_script(_RELEASE)
        self._repair_script: Any = self._redis.register_script(_REPAIR)
        self._seize: Any = self._redis.register_script(_SEIZE)

    # -- what is written ------------------------------------------------------------------------------

    def registration(self) -> str:
        """This process's registration: its URL and when it was written, signed. The time is what makes a copy
        of an old one worthless: replayed after the process left, it would send actions to whoever now answers
        at that address."""
        at = f"{time.time():.3f}"
        return json.dumps({"url": self.url, "at": at, "sig": self._key.sign("proc", self.process_id, self.url, at)})

    def record(self, session_id: str) -> str:
        """This process's ownership record of a session: signed for that session, so a record written by anything
        else (or copied from another session) names nobody."""
        at = f"{time.time():.3f}"
        return f"{self.process_id}|{at}|{self._key.sign('proc', 'owner', session_id, self.process_id, at)}"

    def _owner_named(self, session_id: str, raw: str | None) -> str | None:
        """The process a record names, when it is one of this team's records for this session; None otherwise."""
        if not raw:
            return None
        fields = raw.split("|")
        if len(fields) == 3 and self._key.verify("proc", fields[2], "owner", session_id, fields[0], fields[1]):
            return fields[0]
        self._forged("record:" + session_id, "ownership record of session %.64r", session_id)
        return None

    # -- heartbeat --------------------------------------------------------------------------------------

    async def register(self) -> None:
        await self._redis.set(self._proc_prefix + self.process_id, self.registration(), px=int(self.ttl_s * 1000))
        if self.mine:
            await self._repair()

    async def _repair(self) -> None:
        """Write back the ownership records of the sessions I hold that name no live process of this team: gone
        (Redis lost its keys, or my lease lapsed and nobody claimed them meanwhile), or rewritten by something else
        (not signed for the session). Until then, actions on them are refused (503), never forwarded; without it, a
        Redis restarted empty let the next process with an action claim a session this one still runs: two owners
        writing one timeline. A record of this team naming another live process is that process's: it claimed the
        session while my lease was gone (or seized it, my address refusing), and I let it go."""
        held = sorted(self.mine)
        raws = await self._records(held)
        for session_id, raw in zip(held, raws, strict=True):
            owner = self._owner_named(session_id, raw)
            if owner == self.process_id:
                continue
            if owner is not None and await self._info(owner) is not None:
                self.mine.discard(session_id)
                log.warning("cluster: session %s is held by %s now (it took it while this process's lease was "
                            "gone)", session_id, owner)
            elif raw is None:
                await self._redis.set(self._owner_prefix + session_id, self.record(session_id), nx=True)
            else:
                await self._repair_script(keys=[self._owner_prefix + session_id], args=[self.record(session_id), raw])

    # -- reading ------------------------------------------------------------------------------------------

    async def _records(self, session_ids: list[str]) -> list[str | None]:
        async with self._redis.pipeline(transaction=False) as pipe:
            for session_id in session_ids:
                pipe.getrange(self._owner_prefix + session_id, 0, MAX_RECORD_BYTES)
            found = await pipe.execute()
        return [value or None for value in found]

    def _parsed(self, process_id: str, raw: str) -> ProcessInfo | None:
        """The registration's process, when the team key signed it and it was written within a lease (plus the
        clock skew allowed between processes); None (logged once) for anything else."""
        try:
            if len(raw) > MAX_REGISTRATION_BYTES:
                raise ValueError("too long")
            data = json.loads(raw)
            url, at, sig = data["url"], data["at"], data["sig"]
            valid = (isinstance(url, str) and isinstance(at, str) and self._key.verify("proc", sig, process_id, url, at)
                     and -self._skew_s <= time.time() - float(at) <= self.ttl_s + self._skew_s)
        except Exception:  # whatever it holds (deep nesting raised RecursionError): no registration
            valid = False
        if not valid:
            self._forged("proc:" + process_id, "registration of process %.64r", process_id)
            return None
        return ProcessInfo(process_id, url)

    def _forged(self, name: str, what: str, subject: str) -> None:
        self.forged_seen += 1
        if name in self._forged_logged or len(self._forged_logged) >= 100:
            return  # said once per name: every lookup reads it again
        self._forged_logged.add(name)
        log.warning("cluster: ignored the " + what + ": it is not signed with this process's team secret, or is "
                    "older than a lease. Does MCP_CONSOLE_TEAM_SECRET match on every console process, and do their "
                    "clocks agree? (If so, something else writes to this Redis.)", subject)

    async def deregister(self) -> None:
        await self._redis.delete(self._proc_prefix + self.process_id)

    async def stop(self) -> None:
        await super().stop()
        with contextlib.suppress(*FAILURES):
            await self._redis.aclose()

    async def _info(self, process_id: str) -> ProcessInfo | None:
        raw = await self._redis.getrange(self._proc_prefix + process_id, 0, MAX_REGISTRATION_BYTES)
        return self._parsed(process_id, raw) if raw else None

    async def processes(self) -> list[ProcessInfo]:
        found = []
        async for key in self._redis.scan_iter(match=self._proc_prefix + "*", count=200):
            info = await self._info(key[len(self._proc_prefix):])
            if info is not None:
                found.append(info)
        return sorted(found, key=lambda info: info.process_id)

    async def owner_of(self, session_id: str) -> ProcessInfo | None:
        [raw] = await self._records([session_id])
        owner = self._owner_named(session_id, raw)
        return await self._info(owner) if owner else None

    # -- claiming -------------------------------------------------------------------------------------------

    async def claim(self, session_id: str) -> bool:
        [raw] = await self._records([session_id])
        over = ""
        named = self._owner_named(session_id, raw)
        if raw is not None and named is None:
            # A record not signed for this session: its owner, if alive, writes its own back within a lease.
            if not self._stood(session_id, raw):
                return False
            over = raw  # nobody wrote a record of its own over it in a lease: no live owner is behind it
        elif named is not None and named != self.process_id:
            registration = await self._redis.getrange(self._proc_prefix + named, 0, MAX_REGISTRATION_BYTES)
            if registration and self._parsed(named, registration) is None:
                # The owner's registration is not its own (forged, or an old one replayed): a live owner writes its
                # own over it at every heartbeat, so one that stands a lease has no live process behind it.
                if not self._stood(named, registration):
                    return False
                over = raw or ""
        won = bool(await self._claim(keys=[self._owner_prefix + session_id],
                                     args=[self.process_id, self._proc_prefix, self.record(session_id), over]))
        if won:
            self.mine.add(session_id)
        return won

    def _stood(self, name: str, value: str) -> bool:
        """Whether this process has seen `value` under `name` for longer than a lease and the skew."""
        first = self._unsigned_since.setdefault((name, value), time.monotonic())
        if len(self._unsigned_since) > 10_000:
            self._unsigned_since.clear()
        return time.monotonic() - first > self.ttl_s + self._skew_s

    async def seize(self, session_id: str, dead_process_id: str) -> bool:
        [raw] = await self._records([session_id])
        if raw is None or self._owner_named(session_id, raw) != dead_process_id:
            return False  # the record names someone else now, or is no record of this team's
        won = bool(await self._seize(keys=[self._owner_prefix + session_id],
                                     args=[self.process_id, self._proc_prefix, raw, self.record(session_id)]))
        if won:
            self.mine.add(session_id)
        return won

    async def release(self, session_id: str) -> None:
        self.mine.discard(session_id)
        await self._release(keys=[self._owner_prefix + session_id], args=[self.process_id])
