"""Span-tree snapshots: names, kinds, parents, attribute keys and value types, status, events, times."""
from __future__ import annotations

import json
from pathlib import Path


def _type(v) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "double"
    if isinstance(v, str):
        return "string"
    if isinstance(v, (tuple, list)):
        return "string[]" if all(isinstance(x, str) for x in v) else "array"
    return type(v).__name__


def ordered(spans):
    by_id = {s.context.span_id: s for s in spans}

    def depth(s):
        d = 0
        while s.parent is not None and s.parent.span_id in by_id:
            s, d = by_id[s.parent.span_id], d + 1
        return d
    first: dict[int, int] = {}
    size: dict[int, int] = {}
    rooted = {s.context.trace_id for s in spans if s.parent is None}
    for s in spans:
        t = s.context.trace_id
        first[t] = min(first.get(t, s.start_time), s.start_time)
        size[t] = size.get(t, 0) + 1

    def trace_key(t):   # traces in time order; ties (same simulated epoch) by rootedness and size, never by id
        return (first[t], t in rooted, size[t])
    return sorted(spans, key=lambda s: (trace_key(s.context.trace_id), s.start_time, depth(s), s.name))


def tree(spans) -> list[dict]:
    spans = ordered(spans)
    index = {s.context.span_id: i for i, s in enumerate(spans)}
    t0s: dict[int, int] = {}
    for s in spans:
        t0s[s.context.trace_id] = min(t0s.get(s.context.trace_id, s.start_time), s.start_time)
    out = []
    for s in spans:
        t0 = t0s[s.context.trace_id]
        out.append({
            "name": s.name, "kind": s.kind.name,
            "parent": index.get(s.parent.span_id) if s.parent is not None else None,
            "start_s": round((s.start_time - t0) / 1e9, 3), "end_s": round((s.end_time - t0) / 1e9, 3),
            "attributes": {k: _type(v) for k, v in sorted(s.attributes.items())},
            "status": s.status.status_code.name,
            "events": [{"name": e.name, "attributes": {k: _type(v) for k, v in sorted(e.attributes.items())}}
                       for e in s.events],
            "links": len(s.links),
        })
    return out


def check_snapshot(name: str, spans, update: bool) -> None:
    path = Path(__file__).parent / "snapshots" / f"{name}.json"
    got = tree(spans)
    if update:
        path.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    assert path.exists(), f"no snapshot {path.name}: run the tests once with UPDATE_SNAPSHOTS=1 and review it"
    want = json.loads(path.read_text())
    assert got == want, f"span tree of {name} changed; rerun with UPDATE_SNAPSHOTS=1 if intended"
