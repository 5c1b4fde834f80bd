"""The fast path of the OTLP loader: parsed Arrow tables in, flat span, event and link tables out.

The nested resourceSpans/scopeSpans/spans lists are flattened with Arrow compute and attributes are
scattered into one column per key (typed by the contract where it names the key). Arrow in, Arrow out:
the public loader (``otlp``) unifies the pieces and converts them to pandas once. Every field is checked here,
vectorized: an id that is neither hex nor base64 of the right length, a timestamp or integer out of the 64-bit
range, a time of 0 (unset) or before 1970, a parent id naming the span itself, a span kind or status code outside
its enumeration, text that is not UTF-8. A bad value costs its span (ids, timestamps) or only itself (the rest: a
parent id naming its own span leaves a root), and is counted in the data quality; it never costs the piece.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from dataclasses import field as dc_field
from functools import cache
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..spans.quality import DataQuality
from ..spans.spanset import as_text
from ._sanitize import self_parent_example, unset_time_example
from ._spelling import SPAN_KINDS, STATUS_CODES, Spelling
from .ids import normalize_ids

INT64_MAX = (1 << 63) - 1

CANONICAL = Spelling()          # the protobuf JSON mapping (lowerCamelCase, numbers as written): the default


def field_of(arr: Any, name: str) -> Any:
    """``pc.struct_field(arr, name)``: the field of each struct, null where the struct is. A struct array without
    nulls gives its child as it is (a view: a tenth of the time of the compute function, which a piece of lines in
    several spellings calls hundreds of times)."""
    if isinstance(arr, pa.StructArray) and arr.null_count == 0:
        return arr.field(name)
    return pc.struct_field(arr, name)


@dataclass
class Decoded:
    """One parsed piece, flattened: spans (base columns + one per attribute key), events, links. Decoded with
    ``pivot=False``, the spans and events have no attribute columns yet: ``attrs`` and ``event_attrs`` hold their
    attribute lists (one part per parsed table), each list's owner its row in ``spans`` or ``events`` (-1: the span
    or event was dropped)."""
    spans: pa.Table
    events: pa.Table | None
    links: pa.Table | None
    attrs: list[AttributePart] = dc_field(default_factory=list)
    event_attrs: list[AttributePart] = dc_field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class ParsedTable:
    """A table ``pyarrow.json`` parsed with the schema of ``sp``; ``row_lines``: the line of the file each of its rows
    was read from; ``row_sources``: the source of each row (a batch of several small files, ``batch``)."""
    table: pa.Table
    sp: Spelling = dc_field(default_factory=Spelling)
    row_lines: np.ndarray | None = None
    row_sources: pa.DictionaryArray | None = None


def decode_arrow(table: pa.Table, source: str, q: DataQuality, sp: Spelling = CANONICAL, *,
                 row_sources: pa.DictionaryArray | None = None, mixed: set[str] | None = None,
                 row_lines: np.ndarray | None = None, pivot: bool = True) -> Decoded | None:
    """The spans of one parsed piece, checked; None when it holds none. ``row_sources``: the source of each row
    of ``table`` (a batch of several small files, ``batch``), instead of ``source`` for every span.
    ``mixed``: filled with the attribute keys whose values came in several kinds (``pivot_attributes``).
    ``row_lines``: the line of the file each row of ``table`` was read from; spans, events and links then carry
    their request's line in a ``_line`` column (lines of several spellings parsed apart are put back in file
    order by it: ``_parse``). ``pivot=False``: the attributes of spans and events are left to the caller
    (``Decoded.attrs`` and ``Decoded.event_attrs``, for ``pivot_parts``)."""
    return decode_tables([ParsedTable(table=table, sp=sp, row_lines=row_lines, row_sources=row_sources)], source, q,
                         mixed=mixed, pivot=pivot)


def decode_tables(tables: list[ParsedTable], source: str, q: DataQuality, *, mixed: set[str] | None = None,
                  pivot: bool = True) -> Decoded | None:
    """The spans of several parsed tables (of one spelling each: the spelling groups of a piece) as one, checked
    once: what depends on the spelling (the envelope, field names, the types of times and enums) is read table by
    table, and the rest (ids, times, parents, text, events, links) is checked over all of them at once, so a piece of
    many spellings pays the fixed cost of each Arrow call about once, not once per spelling. The rows come table
    after table (``_line`` puts them in file order). As ``decode_arrow`` otherwise."""
    parts = [_Part(t, got) for t in tables if (got := _spans_of(t.table, t.sp)) is not None]
    if not parts:
        return None
    base = np.cumsum([0, *(len(p.spans) for p in parts)])
    n = int(base[-1])
    cols: dict[str, Any] = {}
    trace_id, bad_trace = normalize_ids(_joined([p.field(p.sp.name_of("traceId")) for p in parts]), 16)
    span_id, bad_span = normalize_ids(_joined([p.field(p.sp.name_of("spanId")) for p in parts]), 8)
    parent, bad_parent = normalize_ids(_joined([p.field(p.sp.name_of("parentSpanId")) for p in parts]), 8,
                                       zero_is_null=True, empty_is_null=True)
    start = _joined([_ints(p.field(p.sp.name_of("startTimeUnixNano")), q, source, "startTimeUnixNano") for p in parts])
    end = _joined([_ints(p.field(p.sp.name_of("endTimeUnixNano")), q, source, "endTimeUnixNano") for p in parts])
    other = bad_trace | bad_span | bad_parent | _null(start) | _null(end)
    unset, why = _unset_times(start, end, span_id, ~other)
    keep = ~(other | unset)
    parent = _not_itself(parent, span_id, keep, q, source)
    cols["trace_id"] = trace_id
    cols["span_id"] = span_id
    cols["parent_span_id"] = parent
    cols["name"] = _text(_joined([p.field("name") for p in parts]), q, source, "span name")
    cols["kind"] = _joined([_enum(p.field("kind"), SPAN_KINDS, q, source, "span kind") for p in parts])
    cols["start_ns"] = start
    cols["end_ns"] = end
    status = [field_of(p.spans, "status") for p in parts]
    cols["status_code"] = _joined([_enum(field_of(s, "code"), STATUS_CODES, q, source, "status code")
                                   for s in status])
    cols["status_message"] = _text(_joined([field_of(s, "message") for s in status]), q, source, "status message")
    cols["service_name"] = _text(_joined([pc.take(p.service, p.span_res) for p in parts]), q, source,
                                 "service.name")
    sources = [p.table.row_sources for p in parts]
    if all(s is None for s in sources):
        cols["source"] = pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array([source]))
    else:
        cols["source"] = _joined([s.take(p.rows()) if s is not None else
                                  pa.DictionaryArray.from_arrays(pa.array(np.zeros(len(p.spans), dtype=np.int32)),
                                                                 pa.array([source]))
                                  for p, s in zip(parts, sources, strict=True)])
    attrs = [AttributePart(attrs=p.field("attributes"), sp=p.sp,
                           owners=None if len(parts) == 1 else np.arange(base[i], base[i + 1]))
             for i, p in enumerate(parts)]
    if pivot:
        for name, col in pivot_parts(attrs, n, source, q, mixed).items():
            cols[f"attr:{name}" if name in cols else name] = col
    events, event_attrs = _events_arrow(parts, base, trace_id, span_id=span_id, source=source, q=q, mixed=mixed,
                                        pivot=pivot)
    links = _links_arrow(parts, base, trace_id, span_id=span_id, q=q, source=source)
    row_lines = [p.table.row_lines for p in parts]
    if all(lines is not None for lines in row_lines):
        line = np.concatenate([lines[p.rows().to_numpy(zero_copy_only=False)]
                               for p, lines in zip(parts, row_lines, strict=True) if lines is not None])
        cols["_line"] = line
        events = _with_line(events, line)
        links = _with_line(links, line)
    out = Decoded(pa.table(cols), events, links)
    if not pivot:
        owners = _rows_kept(keep)
        out.attrs = [replace(a, owners=owners[base[i]:base[i + 1]]) for i, a in enumerate(attrs)]
        if events is not None:
            kept = _rows_kept(keep[events.column("_owner").to_numpy()])         # (an event goes with its span)
            out.event_attrs = [replace(a, owners=kept if a.owners is None else kept[a.owners]) for a in event_attrs]
    if not keep.all():
        _drop(out, keep, q, source=source, parts=parts, base=base, unset=(unset, why))
        if out.spans.num_rows == 0:
            return None
    return out


class _Part:
    """One parsed table's spans, flattened out of its envelope (``_spans_of``)."""
    __slots__ = ("rs", "service", "sp", "span_res", "spans", "table")

    def __init__(self, table: ParsedTable, got: tuple[pa.Array, pa.Array, pa.Array, pa.Array]):
        self.table, self.sp = table, table.sp
        self.spans, self.span_res, self.service, self.rs = got

    def field(self, name: str) -> pa.Array:
        return field_of(self.spans, name)

    def rows(self) -> pa.Array:
        """The row of the parsed table each span came from."""
        return _rows(self.rs, self.span_res)


def _joined(arrays: list[pa.Array]) -> pa.Array:
    return arrays[0] if len(arrays) == 1 else pa.concat_arrays(arrays)


def _rows_kept(keep: np.ndarray) -> np.ndarray:
    """Each row's place among the rows to ``keep``, -1 for the others."""
    rows = np.full(len(keep), -1, dtype=np.int64)
    rows[keep] = np.arange(int(keep.sum()))
    return rows


def _rows(rs: pa.Array, span_res: pa.Array) -> pa.Array:
    """The row of the parsed table each span came from (``rs``: the rows' resourceSpans lists)."""
    return pc.take(pc.list_parent_indices(rs), span_res)


def _with_line(t: pa.Table | None, line: np.ndarray) -> pa.Table | None:
    """``t`` (events or links, ``_owner`` the index of their span) with their span's line."""
    if t is None:
        return None
    return t.append_column("_line", pa.array(line[t.column("_owner").to_numpy()]))


def _spans_of(table: pa.Table, sp: Spelling) -> tuple[pa.Array, pa.Array, pa.Array, pa.Array] | None:
    """(spans, index of each span's resource, service.name per resource, the rows' resourceSpans lists), or None
    when there are no spans."""
    if sp.wrapped:
        col = table.column("result")
        rs = field_of(_one_chunk(col), sp.name_of("resourceSpans")) if col.num_chunks else None
    else:
        col = table.column(sp.name_of("resourceSpans"))
        rs = _one_chunk(col) if col.num_chunks else None
    if rs is None:
        return None
    rs_flat = pc.list_flatten(rs)
    service = _resource_service(field_of(rs_flat, "resource"))
    spans_parts, res_parts = [], []
    for field, _scope in (("scopeSpans", "scope"), ("instrumentationLibrarySpans", "instrumentationLibrary")):
        ss = field_of(rs_flat, sp.name_of(field))
        if ss.null_count == len(ss):
            continue
        ss_parent = pc.list_parent_indices(ss)
        sp_lists = field_of(pc.list_flatten(ss), "spans")
        spans_parts.append(pc.list_flatten(sp_lists))
        res_parts.append(pc.take(ss_parent, pc.list_parent_indices(sp_lists)))
    if not spans_parts or sum(len(p) for p in spans_parts) == 0:
        return None
    if len(spans_parts) == 1:
        return spans_parts[0], res_parts[0], service, rs
    return pa.concat_arrays(spans_parts), pa.concat_arrays(res_parts), service, rs


def _one_chunk(col: pa.ChunkedArray) -> pa.Array:
    return col.combine_chunks() if col.num_chunks > 1 else col.chunk(0)


def _null(arr: pa.Array) -> np.ndarray:
    return arr.is_null().to_numpy(zero_copy_only=False)


def _drop(out: Decoded, keep: np.ndarray, q: DataQuality, *, source: str, parts: list[_Part], base: np.ndarray,
          unset: tuple[np.ndarray, str] | None = None) -> None:
    """Drops the spans not to ``keep``, counted as ``bad_span``: first those of ``unset`` (a mask and its
    example), then the others with the first one as the example (``parts``: the spans as parsed, ``base``: the
    first row of each part)."""
    bad = np.nonzero(~keep)[0]
    if unset is not None and unset[0].any():
        q.add("bad_span", source, count=int(unset[0].sum()), example=unset[1])
        bad = np.nonzero(~keep & ~unset[0])[0]
    if len(bad):
        first = int(bad[0])
        k = int(np.searchsorted(base, first, side="right")) - 1
        example = json.dumps(parts[k].spans[first - int(base[k])].as_py(), default=str)[:80]
        q.add("bad_span", source, count=len(bad), example=example)
    mask = pa.array(keep)
    out.spans = out.spans.filter(mask)
    # events and links of a dropped span go with it (their rows carry the span's index)
    for name in ("events", "links"):
        t = getattr(out, name)
        if t is not None:
            owner = t.column("_owner").to_numpy()
            t = t.filter(pa.array(keep[owner]))
            setattr(out, name, t if t.num_rows else None)


def _not_itself(parent: pa.Array, span_id: pa.Array, kept: np.ndarray, q: DataQuality, source: str) -> pa.Array:
    """The parent ids, but one that names its own span: that reference is unusable (``bad_value`` when its span is
    ``kept``), the span is a root."""
    itself = pc.fill_null(pc.equal(parent, span_id), False)
    if not pc.any(itself).as_py():
        return parent
    itself = pc.and_(itself, pa.array(kept))
    n = pc.sum(itself).as_py() or 0
    if not n:
        return parent
    _bad(q, source, n, self_parent_example(pc.filter(span_id, itself)[0].as_py()))
    return pc.if_else(itself, pa.scalar(None, pa.string()), parent)


def _unset_times(start: pa.Array, end: pa.Array, span_id: pa.Array, usable: np.ndarray) -> tuple[np.ndarray, str]:
    """The ``usable`` spans whose start or end time is 0 (OTLP: unset) or negative (before 1970), and the example
    that says so: like a missing time, it costs the span (``bad_span``)."""
    low = np.zeros(len(start), dtype=bool)
    for arr in (start, end):
        low |= pc.fill_null(pc.less_equal(arr, 0), False).to_numpy(zero_copy_only=False)
    low &= usable
    if not low.any():
        return low, ""
    i = int(np.flatnonzero(low)[0])
    return low, unset_time_example(span_id[i].as_py(), start[i].as_py(), end[i].as_py())


# -- values ------------------------------------------------------------------------------------------

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


def _resource_service(resource: pa.Array) -> pa.Array:
    attrs = field_of(resource, "attributes")
    n = len(resource)
    parent = pc.list_parent_indices(attrs).to_numpy()
    flat = pc.list_flatten(attrs)
    keys = field_of(flat, "key")
    mask = pc.fill_null(pc.equal(keys, "service.name"), False).to_numpy(zero_copy_only=False)
    value = field_of(flat, "value")
    vals = field_of(value, _first_field(value, ("stringValue", "string_value")))
    pos = np.full(n, -1, dtype=np.int64)
    idx = np.nonzero(mask)[0]
    pos[parent[idx]] = idx
    return pc.take(vals, pa.array(pos, mask=pos < 0))


def _first_field(struct: pa.Array, names: tuple[str, ...]) -> str:
    have = {struct.type.field(i).name for i in range(struct.type.num_fields)}
    return next(n for n in names if n in have)


# -- attributes --------------------------------------------------------------------------------------

_FIELDS = ("stringValue", "intValue", "doubleValue", "boolValue", "bytesValue")
_KIND_OF = {"stringValue": "string", "intValue": "int", "doubleValue": "double", "boolValue": "bool",
            "bytesValue": "string", "arrayValue": "string[]", "kvlistValue": "string"}


def pivot_attributes(attrs: pa.Array, n: int, source: str, *, q: DataQuality,
                     sp: Spelling = CANONICAL, mixed: set[str] | None = None) -> dict[str, pa.Array]:
    """One Arrow column per attribute key, aligned with the n owners of ``attrs``.

    Each value field is extracted (and intValue parsed) once for all entries; per key, one scatter
    of entry indices and one ``take`` build the column. A key whose values come in several kinds,
    or in another kind than the contract says, goes through ``_typed`` and is counted as wrong_type; a key of
    several kinds joins ``mixed``.
    """
    return pivot_parts([AttributePart(attrs=attrs, sp=sp)], n, source, q, mixed)


@dataclass(frozen=True, kw_only=True)
class AttributePart:
    """The attribute lists of some owners, in one spelling; ``owners``: the output row of each list (-1: the
    owner was dropped, its entries join no column), None for the rows in order (the usual case)."""
    attrs: pa.Array
    sp: Spelling
    owners: np.ndarray | None = None


def pivot_parts(parts: list[AttributePart], n: int, source: str, q: DataQuality,
                mixed: set[str] | None = None) -> dict[str, pa.Array]:
    """``pivot_attributes`` over the attribute lists of several parts at once (the spelling groups of a piece,
    whose spans are put in file order by ``owners``): one column per key over all of them, so a piece of lines
    in several spellings pays the per-key work once, not once per spelling."""
    from ...contract.semconv import ATTRIBUTE_TYPES

    got = [g for p in parts if (g := _entries(p, q, source)) is not None]
    if not got:
        return {}
    if len(got) == 1:
        parent, keys_text = got[0].parent, got[0].keys
    else:
        parent = np.concatenate([g.parent for g in got])
        keys_text = pa.concat_arrays([g.keys for g in got])
    keys = pc.dictionary_encode(keys_text)
    names = keys.dictionary.to_pylist()
    # an entry without a key (malformed input) gets -1: sorted before every key, it joins no column; so does an
    # entry of a dropped owner
    codes = pc.fill_null(keys.indices, -1).to_numpy(zero_copy_only=False)
    if len(names) < 32768:
        codes = codes.astype(np.int16)      # numpy sorts 16-bit keys with a radix sort
    if len(got) == 1 and got[0].in_order:
        order = np.argsort(codes, kind="stable")        # entries come in owner order already
    else:
        codes = np.where(parent < 0, -1, codes).astype(codes.dtype)
        order = np.lexsort((parent, codes))             # by key, then owner (stable: a key twice on one owner
                                                        # keeps its entries' order)
    bounds = np.searchsorted(codes[order], np.arange(len(names) + 1))
    fields_of = [g.fields for g in got]
    # which entries hold each value field (a field no part holds is left out)
    valid = {f: np.concatenate([fs[f].is_valid().to_numpy(zero_copy_only=False) if f in fs else
                                np.zeros(len(g.keys), dtype=np.bool_) for fs, g in zip(fields_of, got, strict=True)])
             for f in (*_FIELDS, "arrayValue", "kvlistValue") if any(f in fs for fs in fields_of)}
    # per key, how many of its entries hold each value field (a count per code: -1, no key, counts for none)
    shifted = codes.astype(np.int32) + 1
    held = {f: np.bincount(shifted[m], minlength=len(names) + 1)[1:] for f, m in valid.items()}
    converted: dict[str, pa.Array] = {}
    null_at = len(parent)           # the converted fields end with one null: an index without a value points there

    def field(f: str) -> pa.Array:
        if f not in converted:
            pieces = [_convert_field(f, fs[f], q, source) if f in fs else None for fs in fields_of]
            typ = next(x.type for x in pieces if x is not None)
            whole = [x if x is not None else pa.nulls(len(g.keys), typ) for x, g in zip(pieces, got, strict=True)]
            converted[f] = pa.concat_arrays([*whole, pa.nulls(1, typ)])
        return converted[f]

    out: dict[str, pa.Array | None] = {}
    plain: dict[str, list[int]] = {}        # value field -> the keys whose entries all hold it, as the contract says
    for k, name in enumerate(names):
        sel = order[bounds[k]:bounds[k + 1]]
        if len(sel) == 0 or name is None or _is_content(name):
            continue
        present = [f for f, count in held.items() if count[k]]
        expected = ATTRIBUTE_TYPES.get(name)
        kinds = {_KIND_OF[f] for f in present}
        if len(present) == 1 and (expected is None or kinds == {expected}):
            plain.setdefault(present[0], []).append(k)
            out[name] = None                # filled below: the columns keep the keys' order
        elif not present:
            out[name] = pa.nulls(n, pa.string())
        else:
            if mixed is not None and len(present) > 1:
                mixed.add(name)
            local = np.full(n, -1, dtype=np.int64)
            local[parent[sel]] = np.arange(len(sel))
            col = _typed({f: pc.take(field(f), pa.array(sel)) for f in present}, name, expected, source, q)
            out[name] = pc.take(col, pa.array(local, mask=local < 0))
    for f, ks in plain.items():
        for name, col in _columns(field(f), ks, names, order=order, bounds=bounds, parent=parent, n=n, null_at=null_at):
            out[name] = col
    return {name: col for name, col in out.items() if col is not None}


@dataclass
class _Entries:
    """One part's attribute entries: each one's owner, key, and value fields (those some entry holds)."""
    parent: np.ndarray
    keys: pa.Array
    fields: dict[str, pa.Array]
    in_order: bool                  # the owners are the lists' rows: entries come sorted by owner


def _entries(part: AttributePart, q: DataQuality, source: str) -> _Entries | None:
    parent = pc.list_parent_indices(part.attrs).to_numpy()
    if part.owners is not None:
        parent = part.owners[parent]
    flat = pc.list_flatten(part.attrs)
    if len(flat) == 0:
        return None
    keys = _text(field_of(flat, "key"), q, source, "attribute key")
    values = _canonical_values(field_of(flat, "value"), part.sp)
    held = {values.type.field(i).name for i in range(values.type.num_fields)}    # (a parse may leave the rare ones out)
    raw = {f: field_of(values, f) for f in _FIELDS if f in held}
    for f in ("arrayValue", "kvlistValue"):
        if f in held:
            raw[f] = field_of(field_of(values, f), "values")
    fields = {f: a for f, a in raw.items() if a.null_count < len(a)}
    return _Entries(parent=parent, keys=keys, fields=fields, in_order=part.owners is None)


def _convert_field(f: str, a: pa.Array, q: DataQuality, source: str) -> pa.Array:
    """A value field as its column takes it: intValue parsed, arrays and kvlists as text lists and JSON text, text
    checked as UTF-8, doubles finite."""
    return (_ints(a, q, source, "intValue") if f == "intValue" else
            _string_lists(a, q, source) if f == "arrayValue" else
            _kvlist_text(a) if f == "kvlistValue" else
            _text(a, q, source, "attribute value") if f in ("stringValue", "bytesValue") else
            _finite(a, q, source) if f == "doubleValue" else a)


_TAKE_CELLS = 1 << 22       # cells (keys x owners) per take: the index array costs 8 bytes a cell
# keys are taken together only for pieces of fewer owners; with more, each key's column is built from its own
# values (``_spread``): a take of n owners per key cost about 7 ns a cell even where most of them are null
_BATCH_BELOW = 8192


def _columns(values: pa.Array, keys: list[int], names: list[str | None], *, order: np.ndarray, bounds: np.ndarray,
             parent: np.ndarray, n: int, null_at: int) -> Iterator[tuple[str, pa.Array]]:
    """The columns of ``keys`` (codes of attribute keys whose entries all hold ``values``' field; ``order`` the
    entries sorted by key, ``bounds`` each key's range in it), n owners each.

    When the owners are few, a few keys at a time: one ``take`` for all of them, cut into columns (slices, no
    copy); a take per key made the fixed cost of a call most of the pivot when a piece holds many keys and few
    owners (a piece of lines in several spellings is decoded a group at a time). Otherwise one column per key,
    taking only the key's own entries and spreading them over the n owners (``_spread``): most keys of a piece
    of several dialects are on a few of its spans."""
    if n >= _BATCH_BELOW:
        for k in keys:
            sel = order[bounds[k]:bounds[k + 1]]
            owners = parent[sel]
            if len(owners) > 1:
                last = np.empty(len(owners), dtype=bool)        # a key twice on one owner: its last entry
                np.not_equal(owners[1:], owners[:-1], out=last[:-1])
                last[-1] = True
                if not last.all():
                    sel, owners = sel[last], owners[last]
            taken = pc.take(values, pa.array(sel))
            col = _spread(taken, owners, n)
            if col is None:
                pos = np.full(n, null_at, dtype=np.int64)
                pos[owners] = sel
                col = pc.take(values, pa.array(pos))
            yield str(names[k]), col
        return
    per = max(1, _TAKE_CELLS // max(n, 1))
    for start in range(0, len(keys), per):
        chunk = keys[start:start + per]
        sels = [order[bounds[k]:bounds[k + 1]] for k in chunk]
        entries = np.concatenate(sels)
        at = np.repeat(np.arange(len(chunk), dtype=np.int64), [len(x) for x in sels])
        pos = np.full(len(chunk) * n, null_at, dtype=np.int64)
        pos[at * n + parent[entries]] = entries         # a key twice on one owner: its last entry, as before
        taken = pc.take(values, pa.array(pos))
        if pa.types.is_string(taken.type):
            taken = taken.cast(pa.large_string())       # as ``_spread`` gives text
        for i, k in enumerate(chunk):
            yield str(names[k]), taken.slice(i * n, n)


_FIXED = {pa.int64(): np.int64, pa.float64(): np.float64}


def _spread(taken: pa.Array, owners: np.ndarray, n: int) -> pa.Array | None:
    """An array of n values: ``taken[i]`` at ``owners[i]`` (distinct, ascending), null elsewhere; built from
    ``taken``'s buffers (the values of strings and lists are shared, not copied). None for a type it does not
    build (the caller takes)."""
    typ = taken.type
    m = len(taken)
    if taken.offset:
        return None
    valid = np.zeros(n, dtype=bool)
    if taken.null_count:
        valid[owners] = taken.is_valid().to_numpy(zero_copy_only=False)
    else:
        valid[owners] = True
    nulls = n - (m - taken.null_count)
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    bufs = taken.buffers()
    dtype = _FIXED.get(typ)
    if dtype is not None:
        out = np.zeros(n, dtype=dtype)
        out[owners] = np.frombuffer(bufs[1], dtype=dtype, count=m)
        return pa.Array.from_buffers(typ, n, [bitmap, pa.py_buffer(out)], nulls)
    if pa.types.is_boolean(typ):
        bits = np.zeros(n, dtype=bool)
        bits[owners] = np.unpackbits(np.frombuffer(bufs[1], dtype=np.uint8), count=m, bitorder="little")
        return pa.Array.from_buffers(typ, n, [bitmap, pa.py_buffer(np.packbits(bits, bitorder="little"))], nulls)
    string, listed = pa.types.is_string(typ), pa.types.is_list(typ)
    if not (string or listed or pa.types.is_large_string(typ)):
        return None
    width = np.int32 if string or listed else np.int64
    # owner i's value starts at the offset of the first taken value whose owner is i or after: each taken offset
    # repeated over the owners up to its own (one pass over the n owners, not a scatter and a running sum)
    offsets = np.frombuffer(bufs[1], dtype=width, count=m + 1)
    counts = np.diff(owners, prepend=-1, append=n)
    if listed:
        spread = pa.py_buffer(np.repeat(offsets, counts))
        return pa.Array.from_buffers(typ, n, [bitmap, spread], nulls, children=[taken.values])
    # text as large_string, the type pandas keeps its strings in: widened here, on the m taken offsets, instead of
    # the cast of the n spread ones that converting to pandas makes (a fresh 8 bytes an owner, per key)
    spread = pa.py_buffer(np.repeat(offsets.astype(np.int64), counts))
    return pa.Array.from_buffers(pa.large_string(), n, [bitmap, spread, bufs[2]], nulls)


_INDEXED = re.compile(r"\.\d+(\.|$)")
# indexed keys that stay: the first tool offered to a model call, and the first tool call in its answer (whether it
# was offered any, whether it asked for one: the analysis tells a framework's turn limit from them)
_KEPT_INDEXED = frozenset({"llm.tools.0.tool.json_schema", "llm.request.functions.0.name",
                           "llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
                           "gen_ai.completion.0.tool_calls.0.name"})


def _is_content(key: str) -> bool:
    """Message content spread over indexed keys (``llm.input_messages.3.message.content``): one column per
    index would be thousands of columns the analysis never reads. The first completion's finish reason stays, and
    the first tool offered to a model call."""
    return _INDEXED.search(key) is not None and not key.endswith("finish_reason") and key not in _KEPT_INDEXED


def _canonical_values(values: pa.Array, sp: Spelling) -> pa.Array:
    """The AnyValue struct with lowerCamelCase field names (snake_case input renamed, buffers shared)."""
    if not sp.snake:
        return values
    names = [values.type.field(i).name for i in range(values.type.num_fields)]
    back = {sp.name_of(c): c for c in (*_FIELDS, "arrayValue", "kvlistValue")}
    children = [values.field(i) for i in range(len(names))]
    return pa.StructArray.from_arrays(children, names=[back.get(n, n) for n in names],
                                      mask=values.is_null() if values.null_count else None)


def _typed(fields: dict[str, pa.Array], name: str, expected: str | None, source: str, q: DataQuality) -> pa.Array:
    """One column from values of several kinds: the contract's type when it names one, else the widest."""
    if expected == "string[]" and "stringValue" in fields:
        fields = _arrays_from_json_text(fields)
    kinds = {_KIND_OF[f] for f in fields}
    n = len(next(iter(fields.values())))
    if expected and kinds != {expected} and not (expected == "double" and kinds <= {"int", "double"}):
        target_field = {"string": "stringValue", "int": "intValue", "double": "doubleValue", "bool": "boolValue",
                        "string[]": "arrayValue"}[expected]
        good = fields[target_field].is_valid().true_count if target_field in fields else 0
        q.add("wrong_type", source, count=n - good,
              example=f"{name}: expected {expected}, got {'/'.join(sorted(kinds))}")
    target = expected or (next(iter(kinds)) if len(kinds) == 1 else
                          "double" if kinds <= {"int", "double"} else "string")
    get = fields.get
    if target == "string[]":
        return get("arrayValue", pa.nulls(n, pa.list_(pa.string())))
    if target == "int":
        ints = get("intValue", pa.nulls(n, pa.int64()))
        if "doubleValue" in fields:
            d = fields["doubleValue"]
            whole = pc.and_(pc.is_finite(d), pc.less(pc.abs(d), 2.0 ** 63))
            ints = pc.coalesce(ints, pc.cast(pc.round(pc.if_else(whole, d, pa.scalar(None, pa.float64()))),
                                             pa.int64(), safe=False))
        if "stringValue" in fields:
            ints = pc.coalesce(ints, _ints(fields["stringValue"], None, source, name))
        return ints
    if target == "double":
        d = get("doubleValue", pa.nulls(n, pa.float64()))
        if "intValue" in fields:
            d = pc.coalesce(d, pc.cast(fields["intValue"], pa.float64(), safe=False))     # (> 2^53: the nearest)
        if "stringValue" in fields:
            d = pc.coalesce(d, pc.cast(_ints(fields["stringValue"], None, source, name), pa.float64(), safe=False))
        return d
    if target == "bool":
        b = get("boolValue", pa.nulls(n, pa.bool_()))
        if "stringValue" in fields:
            b = pc.coalesce(b, pc.equal(pc.utf8_lower(fields["stringValue"]), "true"))
        return b
    # string: everything as text
    parts = [as_text(fields[f]) for f in ("stringValue", "intValue", "doubleValue", "boolValue", "bytesValue",
                                          "kvlistValue", "arrayValue") if f in fields]
    return pc.coalesce(*parts) if len(parts) > 1 else parts[0]


def _arrays_from_json_text(fields: dict[str, pa.Array]) -> dict[str, pa.Array]:
    """A string array given as its JSON text (``["stop"]``) read as the array: Jaeger's storages of the v1 span
    model (Badger, Elasticsearch, OpenSearch, Cassandra) keep array attributes that way. Text that is no JSON array
    is the array's one value (Mastra writes ``gen_ai.response.finish_reasons`` as ``"tool-calls"``)."""
    arrays, rest = [], []
    for t in fields["stringValue"].to_pylist():
        v = None
        if t is not None and t[:1] == "[":
            try:
                v = json.loads(t)
            except (ValueError, RecursionError):
                v = None
            if not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
                v = None
        elif t is not None:
            v = [t]
        arrays.append(v)
        rest.append(t if v is None else None)
    parsed = pa.array(arrays, pa.list_(pa.string()))
    if parsed.null_count == len(parsed):
        return fields
    out = dict(fields)
    out["arrayValue"] = pc.coalesce(fields["arrayValue"], parsed) if "arrayValue" in fields else parsed
    if all(t is None for t in rest):
        del out["stringValue"]
    else:
        out["stringValue"] = pa.array(rest, pa.string())
    return out


def _string_lists(arr: pa.Array, q: DataQuality, source: str) -> pa.Array:
    inner = pc.list_flatten(arr)
    sf = _first_field(inner, ("stringValue", "string_value"))
    names = {inner.type.field(i).name for i in range(inner.type.num_fields)}

    def get(*cands: str) -> pa.Array:
        return field_of(inner, next(c for c in cands if c in names))
    text = pc.coalesce(_text(get(sf), q, source, "attribute value"),
                       pc.cast(_ints(get("intValue", "int_value"), q, source, "intValue"), pa.string()),
                       pc.cast(get("doubleValue", "double_value"), pa.string()),
                       pc.cast(get("boolValue", "bool_value"), pa.string()))
    return pa.ListArray.from_arrays(arr.offsets, text, mask=arr.is_null())


def _kvlist_text(arr: pa.Array) -> pa.Array:
    """A kvlistValue as a JSON object text (its scalar values; nested lists are not kept)."""
    out: list[str | None] = []
    for entries in arr.to_pylist():
        if entries is None:
            out.append(None)
            continue
        obj: dict[str, Any] = {}
        for e in entries:
            if not e or e.get("key") is None:
                continue
            v = e.get("value") or {}
            obj[e["key"]] = next((v[k] for k in v if v[k] is not None), None)
        out.append(json.dumps(obj, sort_keys=True, default=str))
    return pa.array(out, type=pa.string())


# -- many tables, one ---------------------------------------------------------------------------------

_ROWS_PER_CHUNK = 8192


def unify(tables: list[pa.Table]) -> pa.Table | None:
    """The tables concatenated, a column of several types cast to one (numbers to float64, else text; a list
    joined with commas)."""
    if not tables:
        return None
    if len(tables) == 1:
        return tables[0]
    types: dict[str, set[pa.DataType]] = {}
    for t in tables:
        for fld in t.schema:
            types.setdefault(fld.name, set()).add(fld.type)
    target: dict[str, pa.DataType] = {}
    for name, ts in types.items():
        if len(ts) == 1:
            continue
        if all(pa.types.is_integer(t) or pa.types.is_floating(t) for t in ts):
            target[name] = pa.float64()
        elif not any(pa.types.is_dictionary(t) for t in ts):
            target[name] = pa.large_string()
    fixed = []
    for t in tables:
        for name, typ in target.items():
            if name in t.column_names and t.schema.field(name).type != typ:
                col = t.column(name)
                t = t.set_column(t.column_names.index(name), name, _as_large_text(col) if
                                 pa.types.is_large_string(typ) else col.cast(typ))
        fixed.append(t)
    out = pa.concat_tables(fixed, promote_options="default")
    if len(fixed) > out.num_rows // _ROWS_PER_CHUNK + 1:
        out = out.combine_chunks()     # many small pieces (a file of mixed spellings): one layout, whatever the path
    return out


def _as_large_text(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """A column as large_string text: strings widened (their data shared), other kinds as ``as_text`` gives them."""
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        col = as_text(col)
    return col.cast(pa.large_string())



# -- events and links --------------------------------------------------------------------------------

def _flattened(parts: list[_Part], base: np.ndarray, name: str) -> list[tuple[_Part, pa.Array, pa.Array]]:
    """The list field ``name`` of each part's spans flattened: (the part, its elements, the span of each element in
    the whole, ``base`` being the first span of each part), for the parts that hold any."""
    found = []
    for i, p in enumerate(parts):
        lists = p.field(name)
        flat = pc.list_flatten(lists)
        if len(flat):
            owner = pc.list_parent_indices(lists)
            found.append((p, flat, owner if len(parts) == 1 else pc.add(owner, int(base[i]))))
    return found


def _events_arrow(parts: list[_Part], base: np.ndarray, trace_id: pa.Array, *, span_id: pa.Array, source: str,
                  q: DataQuality, mixed: set[str] | None = None, pivot: bool = True) -> tuple[pa.Table | None,
                                                                                              list[AttributePart]]:
    """The events of the parts' spans (None: there are none; ``base``: the first span of each part), and, when not
    to ``pivot``, their attribute lists (a part each, its owners the events' rows in the table) instead of their
    attribute columns."""
    found = _flattened(parts, base, "events")
    if not found:
        return None, []
    parent = _joined([owner for _, _, owner in found])
    cols = {"trace_id": pc.take(trace_id, parent), "span_id": pc.take(span_id, parent),
            "name": pc.fill_null(_text(_joined([field_of(flat, "name") for _, flat, _ in found]), q, source,
                                       "event name"), ""),   # (as unnamed)
            "time_ns": _joined([_event_times(field_of(flat, p.sp.name_of("timeUnixNano")), q, source)
                                for p, flat, _ in found]),
            "_owner": parent}
    at = np.cumsum([0, *(len(flat) for _, flat, _ in found)])
    attrs = [AttributePart(attrs=field_of(flat, "attributes"), sp=p.sp,
                           owners=None if len(found) == 1 else np.arange(at[i], at[i + 1]))
             for i, (p, flat, _) in enumerate(found)]
    if not pivot:
        return pa.table(cols), attrs
    for name, col in pivot_parts(attrs, len(parent), source, q, mixed).items():
        cols[f"attr:{name}" if name in cols else name] = col
    return pa.table(cols), []


def _event_times(arr: pa.Array, q: DataQuality, source: str) -> pa.Array:
    """An event's time: as ``_ints`` reads it, and a time before 1970 is none (null, counted); a missing time is
    null, not counted (the event is kept either way)."""
    times = _ints(arr, q, source, "span event timeUnixNano")
    before = pc.fill_null(pc.less(times, 0), False)
    n = pc.sum(before).as_py() or 0
    if n:
        _bad(q, source, n, "span event timeUnixNano: a time before 1970 is not usable")
        times = pc.if_else(before, pa.scalar(None, pa.int64()), times)
    return times


def _links_arrow(parts: list[_Part], base: np.ndarray, trace_id: pa.Array, *, span_id: pa.Array, q: DataQuality,
                 source: str) -> pa.Table | None:
    found = _flattened(parts, base, "links")
    if not found:
        return None
    parent = _joined([owner for _, _, owner in found])
    linked_trace, bad_t = normalize_ids(_joined([field_of(flat, p.sp.name_of("traceId")) for p, flat, _ in found]), 16)
    linked_span, bad_s = normalize_ids(_joined([field_of(flat, p.sp.name_of("spanId")) for p, flat, _ in found]), 8)
    t = pa.table({"trace_id": pc.take(trace_id, parent), "span_id": pc.take(span_id, parent),
                  "linked_trace_id": linked_trace, "linked_span_id": linked_span, "_owner": parent})
    ok = ~(bad_t | bad_s)
    if not ok.all():                  # a link to an unusable id links nothing
        _bad(q, source, int((~ok).sum()), "a span link's trace or span id is not usable")
        t = t.filter(pa.array(ok))
    return t if t.num_rows else None
