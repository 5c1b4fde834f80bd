"""What the analysis benchmarks time: our loader, the straightforward loop, pyarrow's parse alone, the report.

Each takes the file's path and returns a count, so nothing is optimized away.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd


def ours(path: Path) -> int:
    """``agentobs.analysis.load_file``: the fast path, dialect-agnostic (dialects are read by the runs table)."""
    from agentobs.analysis.otlp.load import load_file
    return len(load_file(path).spans)


def straightforward(path: Path) -> int:
    """What one writes first: json.loads per line, a dict per span, then a DataFrame."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            req = json.loads(line)
            for rs in req.get("resourceSpans", []):
                service = next((a["value"].get("stringValue") for a in rs.get("resource", {}).get("attributes", [])
                                if a.get("key") == "service.name"), None)
                for ss in rs.get("scopeSpans", []):
                    for s in ss.get("spans", []):
                        row = {"trace_id": s.get("traceId"), "span_id": s.get("spanId"),
                               "parent_span_id": s.get("parentSpanId"), "name": s.get("name"), "kind": s.get("kind"),
                               "start_ns": int(s.get("startTimeUnixNano", 0)),
                               "end_ns": int(s.get("endTimeUnixNano", 0)),
                               "status_code": (s.get("status") or {}).get("code", 0), "service_name": service}
                        for a in s.get("attributes", []):
                            v = a.get("value", {})
                            if "intValue" in v:
                                row[a["key"]] = int(v["intValue"])
                            elif "arrayValue" in v:
                                row[a["key"]] = [x.get("stringValue") for x in v["arrayValue"].get("values", [])]
                            else:
                                row[a["key"]] = next(iter(v.values()), None)
                        rows.append(row)
    return len(pd.DataFrame(rows))


def parse_alone(path: Path) -> int:
    import pyarrow.json as pj
    return pj.read_json(path, read_options=pj.ReadOptions(block_size=1 << 24)).num_rows


def full_report(path: Path) -> int:
    """``analyze`` and the JSON of its report, in this process."""
    from agentobs.analysis.report.engine import analyze
    r = analyze([str(path)])
    json.dumps(r.to_dict(), default=str)
    return len(r.runs)
