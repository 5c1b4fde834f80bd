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
    return sorted(spans, key=lambda s: (s.context.trace_id, s.start_time, depth(s), s.name))


def tree(spans) -> list[dict]:
    spans = ordered(spans)
    index = {s.context.span_id: i for i, s in enumerate(spans)}
    roots = {s.context.trace_id: s.start_time for s in spans if s.parent is None}
    out = []
    for s in spans:
        t0 = roots.get(s.context.trace_id, spans[0].start_time)
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
