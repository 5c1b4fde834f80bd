"""Traces whose request span (the root) may never have arrived, over an agent span or straight over two model calls:
scenarios/dialects/test_rootless_runs.py checks such runs are left unlabelled and noted, unit/analysis/report/dask/
test_dask_engine.py that the Dask engine says the same."""
from __future__ import annotations

import json
from pathlib import Path


def _attr(k, v):
    return {"key": k, "value": {"stringValue": v}}


def _span(trace: str, span: str, parent: str | None, name: str, op: str | None, at: int, *, error: bool = False):
    out = {"traceId": trace, "spanId": span, "name": name, "kind": 2 if op is None else 1,
           "startTimeUnixNano": str(1700000000000000000 + at * 10**9),
           "endTimeUnixNano": str(1700000000500000000 + at * 10**9),
           "attributes": [] if op is None else [_attr("gen_ai.operation.name", op), _attr("gen_ai.request.model",
                                                                                         "gpt-4o")]}
    if parent:
        out["parentSpanId"] = parent
    if error:
        out["status"] = {"code": 2, "message": "boom"}
    return out


def _trace(t: int, *, root: bool, agent: bool, failed_root: bool = False) -> list[dict]:
    """A request span (``root``: arrived) over an agent span (``agent``) or straight over two model calls."""
    trace, req, ag = f"{t:032x}", f"{t:014x}01", f"{t:014x}02"
    spans = [_span(trace, req, None, "POST /chat", None, 0, error=failed_root)] if root else []
    top = req
    if agent:
        spans.append(_span(trace, ag, req, "invoke_agent helper", "invoke_agent", 0))
        top = ag
    spans += [_span(trace, f"{t:014x}{i + 3:02x}", top, "chat gpt-4o", "chat", i) for i in range(2)]
    return spans


def _write(path: Path, traces: list[list[dict]]) -> Path:
    doc = {"resourceSpans": [{"resource": {"attributes": [_attr("service.name", "app")]},
                              "scopeSpans": [{"scope": {"name": "x"}, "spans": [s for t in traces for s in t]}]}]}
    path.write_text(json.dumps(doc) + "\n")
    return path
