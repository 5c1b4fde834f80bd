"""Runs whose model calls only partly report usage or can be priced, one trace per run: unit/analysis/derive/
test_runs_partial_usage.py checks their tokens and cost are unknown and noted, unit/analysis/report/dask/
test_dask_engine.py that the Dask engine says the same."""
from __future__ import annotations

import json
from pathlib import Path


def _attr(k, v):
    return {"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}}


def write_runs(path: Path, runs: dict[str, list[dict]], root_attrs: dict[str, list] | None = None) -> Path:
    """One trace per run: an invoke_agent root and a chat span per call (``tin``/``tout`` usage when given,
    ``model``, ``failed``: status ERROR)."""
    spans = []
    for t, (_name, calls) in enumerate(runs.items()):
        trace, root = f"{t + 1:032x}", f"{t + 1:015x}0"
        spans.append({"traceId": trace, "spanId": root, "name": "invoke_agent helper", "kind": 1,
                      "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000009000000000",
                      "attributes": [_attr("gen_ai.operation.name", "invoke_agent"),
                                     *(root_attrs or {}).get(_name, [])]})
        for i, call in enumerate(calls):
            attrs = [_attr("gen_ai.operation.name", "chat"), _attr("gen_ai.provider.name", "openai"),
                     _attr("gen_ai.request.model", call.get("model", "gpt-4o"))]
            if "tin" in call:
                attrs += [_attr("gen_ai.usage.input_tokens", call["tin"]),
                          _attr("gen_ai.usage.output_tokens", call["tout"])]
            span = {"traceId": trace, "spanId": f"{t + 1:014x}{i + 1:02x}", "parentSpanId": root,
                    "name": "chat", "kind": 3, "attributes": attrs,
                    "startTimeUnixNano": str(1700000000000000000 + i * 10**9),
                    "endTimeUnixNano": str(1700000000500000000 + i * 10**9)}
            if call.get("failed"):
                span["status"] = {"code": 2, "message": "rate limited"}
            spans.append(span)
    doc = {"resourceSpans": [{"resource": {"attributes": [_attr("service.name", "helper")]},
                              "scopeSpans": [{"scope": {"name": "x"}, "spans": spans}]}]}
    path.write_text(json.dumps(doc) + "\n")
    return path


RUNS = {
    "all reported": [{"tin": 1000, "tout": 100}, {"tin": 2000, "tout": 200}, {"tin": 3000, "tout": 300}],
    "one of three reported": [{"tin": 1000, "tout": 100}, {}, {}],
    "failed call without usage": [{"tin": 1000, "tout": 100}, {"failed": True}, {"tin": 3000, "tout": 300}],
    "a model nobody prices": [{"tin": 1000, "tout": 100}, {"tin": 2000, "tout": 200, "model": "mystery-7b"}],
    "none reported": [{}, {}],
}
