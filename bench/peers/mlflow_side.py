"""Runs in MLflow's own interpreter: ``mlflow.search_traces`` to a DataFrame, then the per-run aggregation.

    python mlflow_side.py TRACKING_URI EXPERIMENT_ID OUT_JSON

``mlflow.search_traces(locations=[EXPERIMENT_ID], return_type="pandas")`` (the documented way to get traces
back as a DataFrame: one row per trace, its spans as a list of dicts), timed; then the spans flattened to one
row each, the attributes the aggregation needs decoded (MLflow keeps attribute values JSON-encoded), and
``aggregate.per_run``, timed. Writes the timings and counts as JSON.
"""
from __future__ import annotations

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pandas as pd
from aggregate import per_run


def _decoded(attrs: pd.DataFrame, name: str) -> pd.Series:
    if name not in attrs.columns:
        return pd.Series(None, index=attrs.index, dtype=object)
    return attrs[name].map(lambda v: json.loads(v) if isinstance(v, str) else v)


def main(uri: str, experiment: str, out: str) -> None:
    import mlflow
    mlflow.set_tracking_uri(uri)
    t0 = time.perf_counter()
    df = mlflow.search_traces(locations=[experiment], return_type="pandas")
    t1 = time.perf_counter()
    rows = [s for spans in df["spans"] for s in spans]
    spans = pd.DataFrame.from_records(rows, columns=["trace_id", "span_id", "name", "start_time_unix_nano",
                                                     "end_time_unix_nano", "status", "attributes"])
    attrs = pd.DataFrame.from_records(spans["attributes"].tolist(), index=spans.index)
    op, kind = _decoded(attrs, "gen_ai.operation.name"), _decoded(attrs, "mlflow.spanType")
    table = pd.DataFrame({
        "trace_id": spans["trace_id"],
        "kind": pd.Series("other", index=spans.index).mask(op.eq("execute_tool") | kind.eq("TOOL"), "tool")
                  .mask(op.eq("chat") | kind.isin(["LLM", "CHAT_MODEL"]), "chat"),
        "error": spans["status"].map(lambda s: (s or {}).get("code") == "STATUS_CODE_ERROR"),
        "input_tokens": pd.to_numeric(_decoded(attrs, "gen_ai.usage.input_tokens"), errors="coerce"),
        "output_tokens": pd.to_numeric(_decoded(attrs, "gen_ai.usage.output_tokens"), errors="coerce"),
        "start": spans["start_time_unix_nano"], "end": spans["end_time_unix_nano"]})
    runs = per_run(table)
    t2 = time.perf_counter()
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"query_s": t1 - t0, "aggregate_s": t2 - t1, "spans": len(spans), "traces": len(df),
                   "runs": len(runs), "model_calls": int(runs["model_calls"].sum()),
                   "tool_calls": int(runs["tool_calls"].sum()), "input_tokens": float(runs["input_tokens"].sum())},
                  f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
