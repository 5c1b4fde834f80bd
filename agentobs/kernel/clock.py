"""Clocks. The loop measures active time through a clock so runs can be simulated.

``SimClock`` advances only when told how long something took (a stand-in's declared
latency); ``RealClock`` measures. Both give wall-clock nanoseconds for span timestamps:
the simulated one is anchored at a real epoch so traces look like real runs.

A kernel asks its clock for the clock of each run (``for_run``). A ``RealClock`` serves every run. A
``SimClock`` is one simulated time, so it serves one run at a time (a second run advancing it meanwhile raises
``ConcurrentUseError``); ``SimClock(per_run=True)`` gives every run a simulated time of its own, starting at the
epoch (or, without one, at the wall time the run starts): the clock for a kernel shared by concurrent runs.
Under a simulated clock time is what the stand-ins declare: the async kernel then puts no real timeout on what it
awaits. Under a real clock it does (the time left before the deadline).
"""
from __future__ import annotations

import time

from .runs import OneRunAtATime


class SimClock:
    """Simulated time, so that runs are deterministic and fast."""

    simulated = True

    def __init__(self, epoch_ns: int | None = None, *, per_run: bool = False):
        self.t = 0.0
        self.per_run = per_run
        self._epoch = epoch_ns
        self.epoch_ns = time.time_ns() if epoch_ns is None else epoch_ns     # fixed once made
        self._wall_t = 0.0                     # the time of the last wall_ns, and its value (events ask it often)
        self._wall = self.epoch_ns
        self._one = OneRunAtATime("a SimClock", "give each concurrent run its own clock, or share "
                                  "SimClock(epoch_ns, per_run=True), which gives every run a simulated time of its own")

    def for_run(self) -> SimClock:
        """The clock a run uses: this one, or with ``per_run`` a new one at the epoch."""
        return SimClock(self._epoch) if self.per_run else self

    def now(self) -> float:
        return self.t

    def wall_ns(self) -> int:
        t = self.t
        if t != self._wall_t:
            self._wall_t, self._wall = t, self.epoch_ns + round(t * 1e9)
        return self._wall

    def spend(self, started: float, declared: float | None) -> float:
        """Advance by the declared duration of an operation that started at ``started``."""
        self._one.claim()
        secs = declared or 0.0
        self.t = round(self.t + secs, 3)
        return secs

    def sleep(self, seconds: float) -> None:
        self._one.claim()
        self.t = round(self.t + seconds, 3)

    async def asleep(self, seconds: float) -> None:
        self.sleep(seconds)


class RealClock:
    simulated = False

    def __init__(self) -> None:
        self._t0 = time.monotonic()

    def for_run(self) -> RealClock:
        return self

    def now(self) -> float:
        return time.monotonic() - self._t0

    def wall_ns(self) -> int:
        return time.time_ns()

    def spend(self, started: float, declared: float | None) -> float:
        return max(0.0, self.now() - started)

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    async def asleep(self, seconds: float) -> None:
        import asyncio
        await asyncio.sleep(seconds)
