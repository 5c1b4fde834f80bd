"""Attribute values of the rare kinds (bytesValue, kvlistValue) on the fast path.

The loader first parses a piece without those two fields (pyarrow fills every field of every value the input leaves
out, so the parse is about a tenth cheaper), and parses it again with them when a value holds none of the others.
These tests load the same files with every parse made with all the fields, and compare: the answer may not
depend on the shortcut, wherever a rare value sits (a span's, an event's or a resource's attribute, an element of
an array value) and in whichever piece of the file it first appears.
"""
import base64
import json
import random

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentobs.analysis.input import read as _otlp_read
from agentobs.analysis.input.limits import InputLimits
from agentobs.analysis.otlp import _ahead as _otlp_ahead
from agentobs.analysis.otlp import _parse as _otlp_parse
from agentobs.analysis.otlp.load import load_file
from agentobs.analysis.spans.checks import check


def _value(rng: random.Random, rare: bool) -> dict:
    kinds = ["string", "int", "double", "bool", "array"] + (["bytes", "kvlist", "bytes in array", "empty"] if rare
                                                            else [])
    kind = rng.choice(kinds)
    if kind == "string":
        return {"stringValue": f"s{rng.randrange(100)}"}
    if kind == "int":
        return {"intValue": str(rng.randrange(1 << 40))}
    if kind == "double":
        return {"doubleValue": rng.random()}
    if kind == "bool":
        return {"boolValue": rng.random() < 0.5}
    if kind == "array":
        return {"arrayValue": {"values": [{"stringValue": f"a{i}"} for i in range(rng.randrange(3))]}}
    if kind == "bytes":
        return {"bytesValue": base64.b64encode(rng.randbytes(6)).decode()}
    if kind == "kvlist":
        return {"kvlistValue": {"values": [{"key": "inner", "value": {"stringValue": f"v{rng.randrange(9)}"}}]}}
    if kind == "bytes in array":
        return {"arrayValue": {"values": [{"bytesValue": base64.b64encode(rng.randbytes(3)).decode()}]}}
    return {}


def _line(i: int, rng: random.Random, rare: bool, where: str) -> bytes:
    def attrs(place: str) -> list[dict]:
        # one key per kind of place, so that each column holds one kind; the rare ones under their own keys
        return [{"key": f"{place}.key{k}", "value": _value(rng, rare and where == place)} for k in range(4)]

    span = {"traceId": f"{i // 4 + 1:032x}", "spanId": f"{i + 1:016x}", "name": f"op{i % 5}", "kind": 1,
            "startTimeUnixNano": str(1_700_000_000_000_000_000 + i),
            "endTimeUnixNano": str(1_700_000_000_000_001_000 + i),
            "attributes": attrs("span"),
            "events": [{"timeUnixNano": str(1_700_000_000_000_000_500 + i), "name": "e", "attributes": attrs("event")}]}
    req = {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "svc"}},
                                                          *attrs("resource")]},
                              "scopeSpans": [{"scope": {"name": "t"}, "spans": [span]}]}]}
    return json.dumps(req).encode() + b"\n"


def _file(tmp_path, n: int, rare_from: int, where: str, seed: int):
    rng = random.Random(seed)
    path = tmp_path / f"rare-{where}-{rare_from}.jsonl"
    path.write_bytes(b"".join(_line(i, rng, i >= rare_from, where) for i in range(n)))
    return path


def _load_all_fields(path, limits, monkeypatch):
    """The reference: every parse made with the rare fields from the start."""
    real = _otlp_parse.parse
    with monkeypatch.context() as m:
        m.setattr(_otlp_parse, "parse", lambda *a, **k: real(*a, **{**k, "rare": True}))
        m.setattr(_otlp_ahead, "parse", lambda *a, **k: real(*a, **{**k, "rare": True}))
        return check(load_file(path, limits=limits))


def _equal(got, want):
    for name in ("spans", "events", "links"):
        a, b = getattr(got, name), getattr(want, name)
        pd.testing.assert_frame_equal(a, b, check_dtype=True, obj=name)
    assert [i.to_dict() for i in got.quality.issues] == [i.to_dict() for i in want.quality.issues]


@pytest.fixture(autouse=True)
def lean_small_pieces(monkeypatch):
    """The small pieces of these files are parsed without the rare fields first too, as large ones are."""
    monkeypatch.setattr(_otlp_parse, "_LEAN_FROM", 0)


@pytest.mark.parametrize("where", ["span", "event", "resource"])
@pytest.mark.parametrize("rare_from", [0, 1500])
def test_rare_values_read_as_a_parse_with_every_field_reads_them(tmp_path, monkeypatch, where, rare_from):
    path = _file(tmp_path, 2000, rare_from, where, seed=len(where) + rare_from)
    limits = InputLimits(chunk_bytes=1 << 16)          # dozens of pieces, parsed ahead two at a time
    got = check(load_file(path, limits=limits))
    want = _load_all_fields(path, limits, monkeypatch)
    _equal(got, want)
    assert got.quality.count("careful_path") == 0
    if where == "span":                                 # the rare values are there, not just equally missing
        text = got.spans.filter(like="span.").astype(str).to_string()
        assert '"inner"' in text                        # a kvlist value as JSON text
        assert got.spans.filter(like="span.").notna().sum().sum() > 0


def test_a_piece_that_needed_the_rare_fields_teaches_the_next(tmp_path, monkeypatch):
    """Once a piece of the file held a rare value, the pieces after it are parsed with the rare fields from the
    start, not twice each (but for the one already being parsed beside it)."""
    path = _file(tmp_path, 3000, 1000, "span", seed=3)
    calls = []
    real = _otlp_parse._read
    monkeypatch.setattr(_otlp_parse, "_read", lambda *a, **k: calls.append(k["rare"]) or real(*a, **k))
    check(load_file(path, limits=InputLimits(chunk_bytes=1 << 16)))
    first = calls.index(True)
    assert calls.count(True) > 10
    assert calls[first + 1:].count(False) <= _otlp_ahead._PARSERS, calls


def test_a_file_without_rare_values_is_parsed_once_per_piece_without_them(tmp_path, monkeypatch):
    path = _file(tmp_path, 2000, 10**9, "span", seed=4)
    calls = []
    real = _otlp_parse._read
    monkeypatch.setattr(_otlp_parse, "_read", lambda *a, **k: calls.append(k["rare"]) or real(*a, **k))
    check(load_file(path, limits=InputLimits(chunk_bytes=1 << 16)))
    assert calls and not any(calls)


def test_a_piece_under_the_lean_size_is_parsed_with_the_rare_fields_at_once_and_teaches_nothing(tmp_path,
                                                                                              monkeypatch):
    """The check that a parse without the rare fields missed nothing has a fixed cost, more than a small piece
    saves: such a piece is parsed once, with them, and the large pieces after it still start without them."""
    monkeypatch.setattr(_otlp_parse, "_LEAN_FROM", 1 << 16)
    # pieces of 16, 32, 64, 128, 256, 256... KiB
    monkeypatch.setattr(_otlp_read, "_blocks", lambda stream, limits: (1 << 14, limits.chunk_bytes))
    path = _file(tmp_path, 4000, 10**9, "span", seed=5)
    calls = []
    real = _otlp_parse._read
    monkeypatch.setattr(_otlp_parse, "_read", lambda *a, **k: calls.append((len(a[0]), k["rare"])) or real(*a, **k))
    check(load_file(path, limits=InputLimits(chunk_bytes=1 << 18)))
    assert [rare for size, rare in calls] == [size < 1 << 16 for size, _ in calls], calls
    assert any(rare for _, rare in calls) and not all(rare for _, rare in calls)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.one_of(st.none(), st.text(max_size=2)),
                          st.one_of(st.none(), st.integers(-2 ** 63, 2 ** 63 - 1)),
                          st.one_of(st.none(), st.booleans())),
                max_size=40),
       st.integers(0, 9), st.integers(0, 9))
def test_the_check_on_validity_bitmaps_says_what_arrow_says(rows, start, cut):
    """Whether every value that is not null holds a field, read on the bitmaps of the fields, is what Arrow's
    compute functions say, whatever the length (bits of a last partial byte), the nulls and a slice's offset."""
    from agentobs.analysis.otlp._parse import _all_held
    typ = pa.struct([("s", pa.string()), ("i", pa.int64()), ("b", pa.bool_())])
    arr = pa.array([None if null else {"s": s, "i": i, "b": b} for null, s, i, b in rows], type=typ)
    for a in (arr, arr.slice(min(start, len(arr)), max(0, len(arr) - start - cut))):
        held = a.is_null()
        for name in ("s", "i", "b"):
            held = pc.or_(held, pc.struct_field(a, name).is_valid())
        assert _all_held(a) == bool(pc.all(held, min_count=0).as_py()), (rows, start, cut)
