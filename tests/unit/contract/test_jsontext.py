"""agentobs.contract.jsontext writes exactly what json.dumps writes with the same arguments, and fails as it does."""
from __future__ import annotations

import enum
import json
import math

import pytest

from agentobs.contract.jsontext import dumps


class Colour(enum.StrEnum):
    RED = "red"


class Size(enum.IntEnum):
    BIG = 3


VALUES = [
    None, True, 0, -7, 2 ** 70, 1.5, -0.0, 1e300, math.nan, math.inf, -math.inf, "", "plain",
    "é ☃ \U0001F600 \x00 \"\\",
    [], {}, [1, [2, [3, {"a": None}]]], {"b": 1, "a": {"d": [1.25, "x"], "c": False}},
    {1: "int key", 2.5: "float key", False: "bool key", None: "none key"}, {3: "c", 1: "a", 2: "b"},
    {"z": Colour.RED, "y": Size.BIG}, (1, 2, "tuple"), Colour.RED, Size.BIG,
]


@pytest.mark.parametrize("value", VALUES, ids=[repr(v)[:30] for v in VALUES])
@pytest.mark.parametrize("sort_keys", [False, True])
def test_same_text_as_json_dumps(value, sort_keys):
    for default in (None, str):
        assert _outcome(dumps, value, sort_keys, default) == _outcome(json.dumps, value, sort_keys, default)


def _outcome(write, value, sort_keys, default):
    """The text written, or the type of the exception raised (keys of types that do not sort: TypeError)."""
    try:
        return write(value, sort_keys=sort_keys, default=default)
    except (TypeError, ValueError) as exc:
        return type(exc)


def test_default_is_called_for_what_json_cannot_hold():
    value = {"when": object, "raw": b"\x01", "set": {1}}
    assert dumps(value, sort_keys=True, default=str) == json.dumps(value, sort_keys=True, default=str)
    assert dumps(value, default=repr) == json.dumps(value, default=repr)


def test_without_default_a_value_json_cannot_hold_is_a_type_error():
    with pytest.raises(TypeError, match="bytes is not JSON serializable"):
        dumps({"raw": b"\x01"})
    with pytest.raises(TypeError):           # json.dumps fails the same way
        json.dumps({"raw": b"\x01"})


def test_mixed_key_types_fail_to_sort_as_in_json_dumps():
    with pytest.raises(TypeError):
        json.dumps({1: "a", "b": 2}, sort_keys=True)
    with pytest.raises(TypeError):
        dumps({1: "a", "b": 2}, sort_keys=True)


def test_a_cycle_is_a_value_error_every_time():
    loop: list = [1]
    loop.append(loop)
    for _ in range(2):                       # the table of open containers is per call: nothing leaks between calls
        with pytest.raises(ValueError, match="Circular reference"):
            dumps(loop)
    shared = [1]
    assert dumps([shared, shared, {"x": shared}]) == json.dumps([shared, shared, {"x": shared}])
