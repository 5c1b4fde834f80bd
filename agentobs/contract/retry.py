"""One retry policy for every backoff: how many tries, and how long to wait after each failed one.

Waits grow geometrically from ``base_s`` by ``factor``, never beyond ``max_wait_s``. Jitter is off by
default, so simulated runs and their traces are deterministic; with ``jitter = j`` each wait is scaled by a
uniform factor in ``[1 - j, 1 + j]`` drawn from the given random generator.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass

from ..errors import ConfigError


@dataclass(kw_only=True, frozen=True, slots=True)
class RetryPolicy:
    attempts: int = 3                 # tries in all, the first one included
    base_s: float = 0.06              # the wait after the first failed try
    factor: float = 2.0               # each further wait is this many times the one before
    max_wait_s: float = math.inf      # no single wait is longer
    jitter: float = 0.0               # 0: exact waits; j in (0, 1]: each wait scaled by uniform(1 - j, 1 + j)

    def __post_init__(self) -> None:
        if not (isinstance(self.attempts, int) and not isinstance(self.attempts, bool) and self.attempts >= 1):
            raise ConfigError(f"RetryPolicy: attempts must be an integer >= 1, got {self.attempts!r}")
        for name, low in (("base_s", 0.0), ("factor", 1.0)):
            value = getattr(self, name)
            if not (_number(value) and math.isfinite(value) and value >= low):
                raise ConfigError(f"RetryPolicy: {name} must be a finite number >= {low:g}, got {value!r}")
        if not (_number(self.max_wait_s) and self.max_wait_s >= 0 and not math.isnan(self.max_wait_s)):
            raise ConfigError(f"RetryPolicy: max_wait_s must be a number of seconds >= 0, got {self.max_wait_s!r}")
        if not (_number(self.jitter) and 0.0 <= self.jitter <= 1.0):
            raise ConfigError(f"RetryPolicy: jitter must be a number from 0 to 1, got {self.jitter!r}")

    def may_retry(self, failed_attempt: int) -> bool:
        """Whether another try is allowed after try number ``failed_attempt`` (1-based) failed."""
        return failed_attempt < self.attempts

    def wait_s(self, failed_attempt: int, rng: random.Random | None = None) -> float:
        """Seconds to wait after try number ``failed_attempt`` (1-based) failed, to the millisecond."""
        wait = min(self.max_wait_s, self.base_s * self.factor ** (failed_attempt - 1))
        if self.jitter:
            low, high = 1.0 - self.jitter, 1.0 + self.jitter
            wait *= rng.uniform(low, high) if rng is not None else random.uniform(low, high)
        return round(wait, 3)


def _number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)
