"""The events and links of the decoded spans: each span's lists flattened into an event table (name, time, attribute
columns) and a link table (the linked trace and span ids), each row carrying its span's index (``_owner``).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..spans.quality import DataQuality
from ._arrow_attributes import AttributePart, pivot_parts
from ._arrow_envelope import _Part
from ._arrow_values import _bad, _ints, _joined, _text, field_of
from .ids import normalize_ids


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
