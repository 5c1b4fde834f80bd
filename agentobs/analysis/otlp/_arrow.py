"""The fast path of the OTLP loader: parsed Arrow tables in, flat span, event and link tables out.

The nested resourceSpans/scopeSpans/spans lists are flattened with Arrow compute and attributes are
scattered into one column per key (typed by the contract where it names the key). Arrow in, Arrow out:
the public loader (``otlp``) unifies the pieces and converts them to pandas once. Every field is checked on the way,
vectorized: an id that is neither hex nor base64 of the right length, a timestamp or integer out of the 64-bit
range, a time of 0 (unset) or before 1970, a parent id naming the span itself, a span kind or status code outside
its enumeration, text that is not UTF-8. A bad value costs its span (ids, timestamps) or only itself (the rest: a
parent id naming its own span leaves a root), and is counted in the data quality; it never costs the piece.

This module decodes the span table (ids, times, parents, names, kinds, status, service, source) and drops the spans
it cannot use; the rest is done below it, in one direction: ``_arrow_envelope`` flattens the envelope,
``_arrow_events`` gives the events and links, ``_arrow_attributes`` pivots attributes (their values typed by
``_arrow_attribute_values``), and ``_arrow_values`` checks and converts the values of every column. ``load``
joins the decoded pieces with ``_arrow_unify``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from dataclasses import field as dc_field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..spans.quality import DataQuality
from ._arrow_attributes import AttributePart, pivot_parts
from ._arrow_envelope import ParsedTable, _Part, _spans_of
from ._arrow_events import _events_arrow, _links_arrow
from ._arrow_values import _bad, _enum, _ints, _joined, _text, field_of
from ._sanitize import self_parent_example, unset_time_example
from ._spelling import CANONICAL, SPAN_KINDS, STATUS_CODES, Spelling
from .ids import normalize_ids


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


def _rows_kept(keep: np.ndarray) -> np.ndarray:
    """Each row's place among the rows to ``keep``, -1 for the others."""
    rows = np.full(len(keep), -1, dtype=np.int64)
    rows[keep] = np.arange(int(keep.sum()))
    return rows


def _with_line(t: pa.Table | None, line: np.ndarray) -> pa.Table | None:
    """``t`` (events or links, ``_owner`` the index of their span) with their span's line."""
    if t is None:
        return None
    return t.append_column("_line", pa.array(line[t.column("_owner").to_numpy()]))


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
