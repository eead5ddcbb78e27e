"""A request's deadline: an idle timer that every frame of the request resets, under an overall maximum.

A fixed total deadline punishes healthy slow work (a long job reporting progress every second is
alive); an idle timer alone lets a chatty server hold a request forever. So both: `touch()` on
every frame pushes the idle deadline out, `extend()` is the user's "wait longer", and the maximum
never moves. When either passes, `expired` is set and `message()` says which, as the console's
own decision (not the server's fault).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Literal

Why = Literal["idle", "max"]


# What sets each deadline where the message is read: the console's settings (a script's flags say their own).
CONSOLE_SETTINGS = ("setting request_idle_timeout_s", "setting request_max_s")


class Deadline:
    def __init__(self, idle_s: float, max_s: float, named: tuple[str, str] = CONSOLE_SETTINGS) -> None:
        self.named = named  # what sets the idle and the overall deadline, for the message (a setting, a flag)
        self._loop = asyncio.get_running_loop()
        self.idle_s = idle_s
        self.max_s = max_s
        self.started = self._loop.time()
        self.idle_at = self.started + idle_s
        self.max_at = self.started + max_s
        self.extensions = 0
        self.expired = asyncio.Event()
        self.why: Why | None = None
        # Called once when the deadline passes (the client interrupts the request's task): no task waits on it.
        self.on_expire: Callable[[], None] | None = None
        # Questions from the server under way on this request (legacy elicitation, sampling): the server is
        # silent because it waits for our answer, so the idle timer must not blame it. The maximum still counts.
        self.holds = 0
        # One timer at a time; a frame only moves `idle_at` (a float), and the timer re-arms itself
        # when it wakes early. Progress at thousands of frames a second costs no timer churn.
        self._timer: asyncio.TimerHandle | None = self._loop.call_at(self.due, self._check)

    @property
    def due(self) -> float:
        """Loop time at which the request is given up, as things stand."""
        return min(self.idle_at, self.max_at)

    def touch(self) -> None:
        """A frame of the request arrived: it is alive, restart the idle timer."""
        self.idle_at = max(self.idle_at, self._loop.time() + self.idle_s)

    def extend(self) -> None:
        """Wait longer: one more idle period from the later of now and the current idle deadline."""
        self.idle_at = max(self.idle_at, self._loop.time()) + self.idle_s
        self.extensions += 1

    def hold(self) -> None:
        """The request waits on us (a person answers a server request): the idle timer pauses."""
        self.holds += 1

    def release(self) -> None:
        """Our answer went back: the idle timer runs again, from now."""
        self.holds = max(0, self.holds - 1)
        self.touch()

    def left(self) -> float:
        return self.due - self._loop.time()

    def wall(self, at: float) -> float:
        """A loop time as wall-clock seconds (for pages: they count down from a timestamp)."""
        return time.time() + (at - self._loop.time())

    def _check(self) -> None:
        now = self._loop.time()
        if self.holds and now < self.max_at:  # held: idle time does not count while we are the ones waiting
            self.idle_at = max(self.idle_at, now + self.idle_s)
        if now < self.due:
            self._timer = self._loop.call_at(self.due, self._check)
            return
        self._timer = None
        self.why = "max" if self.max_at <= self.idle_at else "idle"
        self.expired.set()
        if self.on_expire is not None:
            self.on_expire()

    def message(self) -> str:
        if self.why == "max":
            return (f"The console stopped waiting: the request passed the overall maximum of {self.max_s:g} s "
                    f"({self.named[1]})")
        return (f"The console stopped waiting: no frame for {self.idle_s:g} s "
                f"(idle deadline; {self.named[0]})")

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
