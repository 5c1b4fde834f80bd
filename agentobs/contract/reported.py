"""What a model, a provider or an instrumented loop reports, taken only when it is a value: one rule for the
kernel, its replays, the framework guards and the instrumentation API.

Nothing types these reports at run time (a provider's JSON, a stand-in model, an agent's own loop), and each is
charged against a budget: a negative count or time would lift it, NaN would switch it off, a count of 400 digits
would overflow the dollar arithmetic. A report that is none is treated as not reported (measured or estimated).
"""
from __future__ import annotations

import math
from typing import Any

MAX_COUNT = 2**53            # beyond it a count is no double, and no provider's


def count(value: Any) -> int | None:
    """A reported token count when it is one: an integer from 0 to 2^53 (a bool is none); otherwise None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < MAX_COUNT else None


def non_negative(value: Any) -> float | None:
    """A reported time or cost when it is one: a finite number, not negative (a bool is none; an integer past a
    double's range, 10^309 and up, is none too: it has no float); otherwise None."""
    if type(value) is float:                                          # (the usual case)
        return value if 0 <= value < math.inf else None               # (NaN compares false)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            number = float(value)
        except OverflowError:
            return None
        return number if 0 <= number < math.inf else None
    return None
