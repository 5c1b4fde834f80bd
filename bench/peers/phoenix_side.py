"""Runs in Phoenix's own interpreter: its client's span DataFrame, then the per-run aggregation in pandas.

    python phoenix_side.py BASE_URL OUT_JSON LIMIT

``phoenix.client.Client(base_url=...).spans.get_spans_dataframe(project_identifier="default", limit=LIMIT)``
(the documented way to get spans back as a DataFrame), timed; then the columns the aggregation needs (span
kind: Phoenix's ``span_kind`` LLM / TOOL, or the GenAI operation name; status ERROR; token counts as Phoenix
stores them or in the GenAI names) and ``aggregate.per_run``, timed. Writes the timings and counts as JSON.
"""
from __future__ import annotations

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pandas as pd
from aggregate import per_run


def _first(df: pd.DataFrame, names: list[str]) -> pd.Series:
    out = pd.Series(float("nan"), index=df.index)
    for n in names:
        if n in df.columns:
            out = out.fillna(pd.to_numeric(df[n], errors="coerce"))
    return out


def _text(df: pd.DataFrame, name: str) -> pd.Series:
    return df[name].astype("string") if name in df.columns else pd.Series(pd.NA, index=df.index, dtype="string")


def main(url: str, out: str, limit: int) -> None:
    from phoenix.client import Client
    t0 = time.perf_counter()
    df = Client(base_url=url).spans.get_spans_dataframe(project_identifier="default", limit=limit, timeout=3600)
    t1 = time.perf_counter()
    kind, op = _text(df, "span_kind"), _text(df, "attributes.gen_ai.operation.name")
    spans = pd.DataFrame({
        "trace_id": df["context.trace_id"],
        "kind": pd.Series("other", index=df.index).mask(kind.eq("TOOL").fillna(False) | op.eq("execute_tool")
                                                         .fillna(False), "tool")
                  .mask(kind.eq("LLM").fillna(False) | op.eq("chat").fillna(False), "chat"),
        "error": _text(df, "status_code").eq("ERROR").fillna(False),
        "input_tokens": _first(df, ["attributes.llm.token_count.prompt", "attributes.gen_ai.usage.input_tokens"]),
        "output_tokens": _first(df, ["attributes.llm.token_count.completion",
                                     "attributes.gen_ai.usage.output_tokens"]),
        "start": df["start_time"], "end": df["end_time"]})
    runs = per_run(spans)
    t2 = time.perf_counter()
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"query_s": t1 - t0, "aggregate_s": t2 - t1, "spans": len(df), "runs": len(runs),
                   "model_calls": int(runs["model_calls"].sum()), "tool_calls": int(runs["tool_calls"].sum()),
                   "input_tokens": float(runs["input_tokens"].sum()), "columns": int(df.shape[1])}, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
