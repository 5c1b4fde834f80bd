"""Checks and conversions of the Arrow columns the decode reads: ids aside (``ids``), every value of OTLP is read
here into the type its column takes, vectorized. An integer or time out of the 64-bit range, a double that is NaN or
infinite, an enum value outside its enumeration, text that is not UTF-8: the value becomes null (or unspecified, or
U+FFFD) and is counted as ``bad_value`` in the data quality. With the two array helpers the decode shares (a
struct's field, arrays joined), this is the bottom of the Arrow decode: it imports no other part of it.
"""
from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..spans.quality import DataQuality

INT64_MAX = (1 << 63) - 1


def field_of(arr: Any, name: str) -> Any:
    """``pc.struct_field(arr, name)``: the field of each struct, null where the struct is. A struct array without
    nulls gives its child as it is (a view: a tenth of the time of the compute function, which a piece of lines in
    several spellings calls hundreds of times)."""
    if isinstance(arr, pa.StructArray) and arr.null_count == 0:
        return arr.field(name)
    return pc.struct_field(arr, name)


def _joined(arrays: list[pa.Array]) -> pa.Array:
    return arrays[0] if len(arrays) == 1 else pa.concat_arrays(arrays)


def _ints(arr: pa.Array, q: DataQuality | None, source: str, what: str) -> pa.Array:
    """int64 from digit strings or (unsigned) numbers; a value out of the 64-bit signed range, or not an
    integer, becomes null and is counted as ``bad_value``."""
    if pa.types.is_integer(arr.type):
        if arr.type == pa.int64():
            return arr
        if pa.types.is_unsigned_integer(arr.type):
            big = pc.fill_null(pc.greater(arr, pa.scalar(INT64_MAX, arr.type)), False)
            n_big = pc.sum(big).as_py() or 0
            if n_big:
                _bad(q, source, n_big, f"{what}: a number beyond the 64-bit signed range")
                arr = pc.if_else(big, pa.scalar(None, arr.type), arr)
        return pc.cast(arr, pa.int64())
    if pa.types.is_floating(arr.type):
        ok = pc.and_(pc.equal(pc.floor(arr), arr), pc.less(pc.abs(arr), 2.0 ** 63))
        return pc.cast(pc.if_else(ok, arr, pa.scalar(None, arr.type)), pa.int64())
    try:
        return pc.cast(arr, pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    text = pc.utf8_trim_whitespace(arr) if pa.types.is_string(arr.type) else pc.cast(arr, pa.string())
    digits = pc.match_substring_regex(text, r"^-?[0-9]{1,19}$")
    cand = pc.if_else(digits, text, pa.scalar(None, pa.string()))
    try:
        out = pc.cast(cand, pa.int64())
    except pa.ArrowInvalid:          # 19 digits beyond 2^63 - 1
        vals = [_int_or_none(x) for x in cand.to_pylist()]
        out = pa.array(vals, type=pa.int64())
    n_bad = (len(arr) - arr.null_count) - (len(out) - out.null_count)
    if n_bad:
        bad = pc.and_(arr.is_valid(), out.is_null())
        example = pc.filter(text, bad)[0].as_py()
        _bad(q, source, n_bad, f"{what}: {str(example)[:40]!r} is not a 64-bit integer")
    return out


def _int_or_none(x: str | None) -> int | None:
    if x is None:
        return None
    v = int(x)
    return v if -(1 << 63) <= v <= INT64_MAX else None


def _finite(arr: pa.Array, q: DataQuality | None, source: str) -> pa.Array:
    """Doubles without NaN and infinities (valid in OTLP, unusable as a measure): null and counted."""
    ok = pc.is_finite(arr)
    n_bad = (len(arr) - arr.null_count) - ok.true_count
    if n_bad:
        _bad(q, source, n_bad, "doubleValue: NaN or infinite")
        return pc.if_else(ok, arr, pa.scalar(None, pa.float64()))
    return arr


def _bad(q: DataQuality | None, source: str, n: int, example: str) -> None:
    if q is not None and n:
        q.add("bad_value", source, count=int(n), example=example)


def _enum(arr: pa.Array, names: tuple[str, ...], q: DataQuality, source: str, what: str) -> pa.Array:
    """An OTLP enum as int8, from integers or names; unknown values become 0 (unspecified) and are counted. Checked in
    numpy once the names are looked up: a spelling group of a few lines pays the fixed cost of each Arrow call."""
    k = len(names)
    if pa.types.is_integer(arr.type):
        codes = pc.fill_null(arr, 0).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    else:
        idx = pc.index_in(pc.utf8_upper(pc.utf8_trim_whitespace(arr)), value_set=_enum_values(names))
        found = pc.fill_null(idx, -1).to_numpy(zero_copy_only=False)
        unknown = found < 0
        if arr.null_count:
            unknown &= arr.is_valid().to_numpy(zero_copy_only=False)
        n_unknown = int(unknown.sum())
        if n_unknown:
            _bad(q, source, n_unknown, f"{what}: {arr[int(np.flatnonzero(unknown)[0])].as_py()!r} is not a known value")
        codes = np.where(found >= k, found - k, np.maximum(found, 0))
    ok = (codes >= 0) & (codes < k)
    n_bad = len(ok) - int(ok.sum())
    if n_bad:
        _bad(q, source, n_bad, f"{what}: {int(codes[~ok][0])} is out of range")
    return pa.array(np.where(ok, codes, 0).astype(np.int8))


@cache
def _enum_values(names: tuple[str, ...]) -> pa.Array:
    """An enum's names and then its numbers as text: a name's index is its number, a number's index less the count."""
    return pa.array([*names, *(str(i) for i in range(len(names)))])


def _text(arr: pa.Array, q: DataQuality | None, source: str, what: str) -> pa.Array:
    """The array, with invalid UTF-8 replaced (U+FFFD) and counted."""
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        return arr
    if _ascii(arr):
        return arr
    try:
        arr.validate(full=True)
        return arr
    except pa.ArrowInvalid:
        pass
    raw = arr.cast(pa.binary()) if pa.types.is_string(arr.type) else arr.cast(pa.large_binary())
    values = raw.to_pylist()
    fixed: list[str | None] = [None if v is None else v.decode("utf-8", "replace") for v in values]
    n_bad = sum(1 for v, s in zip(values, fixed, strict=True)
                if v is not None and s is not None and s.encode("utf-8") != v)
    _bad(q, source, n_bad, f"{what}: invalid UTF-8 (replaced)")
    return pa.array(fixed, type=pa.string())


def _ascii(arr: pa.Array) -> bool:
    """True when the bytes of every value of a string array are ASCII (so valid UTF-8): one pass over its data
    buffer, against a validation that costs per value (most of it for millions of short attribute keys)."""
    bufs = arr.buffers()
    if len(arr) == 0 or bufs[1] is None or bufs[2] is None:
        return True
    width = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    offsets = np.frombuffer(bufs[1], dtype=width, count=arr.offset + len(arr) + 1)
    lo, hi = int(offsets[arr.offset]), int(offsets[-1])
    if hi <= lo:
        return True
    if lo < 0 or hi > bufs[2].size:
        return False
    return int(np.frombuffer(bufs[2], dtype=np.uint8, count=hi)[lo:].max()) < 0x80


def _first_field(struct: pa.Array, names: tuple[str, ...]) -> str:
    have = {struct.type.field(i).name for i in range(struct.type.num_fields)}
    return next(n for n in names if n in have)
