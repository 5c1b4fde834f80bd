"""What a model's reply or a tool's result may hold: JSON values that Python can write and read back, nested to a
bounded depth.

The kernel keeps replies and results in the task state (audit, last result, facts, held calls), digests them and
renders them for the model; each of those is JSON text, written and read by Python's ``json``. So a value is refused
where it enters, as a malformed reply or result the model sees, when JSON cannot hold it (bytes, a set, an object, a
key that is not text, a cycle, a number that is not finite: ``nan`` and ``inf`` have no JSON spelling), when it is
nested past ``MAX_DEPTH`` levels (which Python's recursion limit would end in a checkpoint), or when it is an integer
of more digits than Python converts to text (``sys.get_int_max_str_digits()``, 4,300 by default: writing it raises
``ValueError``, and so would reading it back), or when reading it raises (a dict or list subclass whose ``items``
or iteration raises: JSON's writer would raise the same). The state then always saves, loads and renders.

There is no size rule for text: a long string is charged by the token budget (the next request's input estimate,
or the provider's report) like any other content.
"""
from __future__ import annotations

import math
import sys
from typing import Any

MAX_DEPTH = 100          # levels of objects and arrays; a cycle is refused as nested too deeply
_PLAIN = frozenset({str, bool, type(None)})           # (exact types: the fast path of every reply)
_SCALAR = _PLAIN | {int, float}
_SMALL = 2**62                                        # an int inside (-_SMALL, _SMALL) has at most 19 digits


def json_problem(value: Any, max_depth: int = MAX_DEPTH) -> str | None:
    """What keeps ``value`` from being a JSON value nested at most ``max_depth`` levels (None: nothing)."""
    t = type(value)
    if t in _PLAIN or (t is int and -_SMALL < value < _SMALL) or (t is float and value - value == 0.0):
        return None
    try:
        return _inside(value, max_depth, max_depth)
    except Exception as exc:        # a mapping or list of the caller's own class whose items raise when read
        return f"cannot be read ({type(exc).__name__} from its {type(value).__name__} value)"


def number_problem(value: int | float) -> str | None:
    """What keeps a number from being written as JSON and read back by Python (None: nothing)."""
    if isinstance(value, float):
        return None if math.isfinite(value) else f"holds a number that is not finite ({value!r}), which JSON " \
            "cannot hold"
    limit = sys.get_int_max_str_digits()
    if limit and value.bit_length() > 3 * limit and abs(value) >= _power_of_ten(limit):   # 2^(3n) < 10^n
        return f"holds an integer of more than {limit} digits, which Python does not convert to text"
    return None


_POWERS: dict[int, int] = {}


def _power_of_ten(n: int) -> int:
    if n not in _POWERS:
        _POWERS.clear()          # (one limit at a time, in practice)
        _POWERS[n] = 10**n
    return _POWERS[n]


def _inside(v: Any, left: int, max_depth: int) -> str | None:
    """``json_problem`` of a value with ``left`` levels of nesting left (recursive: at most ``max_depth`` deep).
    Plain items are passed over in place (the common case: no call per item)."""
    if isinstance(v, dict):
        if left <= 0:
            return f"nested deeper than {max_depth} levels"
        for k, item in v.items():
            if type(k) is not str and not isinstance(k, str):
                return f"has a key that is not text ({type(k).__name__})"
            t = type(item)
            if t in _SCALAR and (t is not int or -_SMALL < item < _SMALL) and (t is not float or item - item == 0.0):
                continue
            if (problem := _inside(item, left - 1, max_depth)) is not None:
                return problem
        return None
    if isinstance(v, (list, tuple)):
        if left <= 0:
            return f"nested deeper than {max_depth} levels"
        for item in v:
            t = type(item)
            if t in _SCALAR and (t is not int or -_SMALL < item < _SMALL) and (t is not float or item - item == 0.0):
                continue
            if (problem := _inside(item, left - 1, max_depth)) is not None:
                return problem
        return None
    if isinstance(v, bool) or v is None or isinstance(v, str):     # (subclasses: a StrEnum)
        return None
    if isinstance(v, (int, float)):                                  # (an IntEnum; an int or float out of range)
        return number_problem(v)
    return f"holds a {type(v).__name__} value, which JSON cannot hold"
