"""What a model's reply or a tool's result may hold: JSON values only, nested to a bounded depth.

The kernel keeps replies and results in the task state (audit, last result, facts, held calls), digests them and
renders them for the model; each of those is JSON. A value JSON cannot hold (bytes, a set, an object, a key that is
not text, a cycle) or one nested past ``MAX_DEPTH`` levels (which Python's recursion limit would end in a
checkpoint) is refused where it enters, as a malformed reply or result the model sees, so the state always saves.
"""
from __future__ import annotations

from typing import Any

MAX_DEPTH = 100          # levels of objects and arrays; a cycle is refused as nested too deeply


def json_problem(value: Any, max_depth: int = MAX_DEPTH) -> str | None:
    """What keeps ``value`` from being a JSON value nested at most ``max_depth`` levels (None: nothing)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if v is None or isinstance(v, (str, bool, int, float)):
            continue
        if depth >= max_depth:
            return f"nested deeper than {max_depth} levels"
        if isinstance(v, dict):
            for k, item in v.items():
                if not isinstance(k, str):
                    return f"has a key that is not text ({type(k).__name__})"
                stack.append((item, depth + 1))
        elif isinstance(v, (list, tuple)):
            stack.extend((item, depth + 1) for item in v)
        else:
            return f"holds a {type(v).__name__} value, which JSON cannot hold"
    return None
