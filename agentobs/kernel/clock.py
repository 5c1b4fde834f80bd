"""Clocks. The loop measures active time through a clock so runs can be simulated.

``SimClock`` advances only when told how long something took (a stand-in's declared
latency); ``RealClock`` measures. Both give wall-clock nanoseconds for span timestamps:
the simulated one is anchored at a real epoch so traces look like real runs.
"""
from __future__ import annotations

import time


class SimClock:
    """Simulated time, so that runs are deterministic and fast."""

    def __init__(self, epoch_ns: int | None = None):
        self.t = 0.0
        self.epoch_ns = time.time_ns() if epoch_ns is None else epoch_ns

    def now(self) -> float:
        return self.t

    def wall_ns(self) -> int:
        return self.epoch_ns + round(self.t * 1e9)

    def spend(self, started: float, declared: float | None) -> float:
        """Advance by the declared duration of an operation that started at ``started``."""
        secs = declared or 0.0
        self.t = round(self.t + secs, 3)
        return secs

    def sleep(self, seconds: float) -> None:
        self.t = round(self.t + seconds, 3)


class RealClock:
    def __init__(self) -> None:
        self._t0 = time.monotonic()

    def now(self) -> float:
        return time.monotonic() - self._t0

    def wall_ns(self) -> int:
        return time.time_ns()

    def spend(self, started: float, declared: float | None) -> float:
        return max(0.0, self.now() - started)

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)
