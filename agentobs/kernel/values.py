"""What a model's reply or a tool's result may hold: JSON values only, nested to a bounded depth.

The kernel keeps replies and results in the task state (audit, last result, facts, held calls), digests them and
renders them for the model; each of those is JSON. A value JSON cannot hold (bytes, a set, an object, a key that is
not text, a cycle) or one nested past ``MAX_DEPTH`` levels (which Python's recursion limit would end in a
checkpoint) is refused where it enters, as a malformed reply or result the model sees, so the state always saves.
"""
from __future__ import annotations

from typing import Any

MAX_DEPTH = 100          # levels of objects and arrays; a cycle is refused as nested too deeply
_SCALAR = frozenset({str, int, float, bool, type(None)})      # (exact types: the fast path of every reply)


def json_problem(value: Any, max_depth: int = MAX_DEPTH) -> str | None:
    """What keeps ``value`` from being a JSON value nested at most ``max_depth`` levels (None: nothing)."""
    if type(value) in _SCALAR:
        return None
    return _inside(value, max_depth, max_depth)


def _inside(v: Any, left: int, max_depth: int) -> str | None:
    """``json_problem`` of a value with ``left`` levels of nesting left (recursive: at most ``max_depth`` deep)."""
    if isinstance(v, dict):
        if left <= 0:
            return f"nested deeper than {max_depth} levels"
        for k, item in v.items():
            if not isinstance(k, str):
                return f"has a key that is not text ({type(k).__name__})"
            if type(item) not in _SCALAR and (problem := _inside(item, left - 1, max_depth)) is not None:
                return problem
        return None
    if isinstance(v, (list, tuple)):
        if left <= 0:
            return f"nested deeper than {max_depth} levels"
        for item in v:
            if type(item) not in _SCALAR and (problem := _inside(item, left - 1, max_depth)) is not None:
                return problem
        return None
    if v is None or isinstance(v, (str, int, float)):        # (subclasses: a StrEnum, an IntEnum)
        return None
    return f"holds a {type(v).__name__} value, which JSON cannot hold"
