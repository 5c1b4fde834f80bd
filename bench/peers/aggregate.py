"""The per-run aggregation every contender does on its DataFrame of spans, in pandas (this file runs in the peers'
own interpreters too: it imports nothing of ours).

One row per trace (the peers have no notion of a run inside a trace; the generated traces hold one run, a few of
them two): spans, model calls, tool calls, errors, input and output tokens, first start and last end.
``spans`` is a DataFrame with one row per span and the columns ``trace_id``, ``kind`` (``chat``, ``tool`` or
anything else), ``error`` (bool), ``input_tokens``, ``output_tokens`` (numbers or NaN), ``start``, ``end``.
"""
from __future__ import annotations

import pandas as pd


def per_run(spans: pd.DataFrame) -> pd.DataFrame:
    s = spans.assign(chat=spans["kind"].eq("chat"), tool=spans["kind"].eq("tool"),
                     input_tokens=pd.to_numeric(spans["input_tokens"], errors="coerce"),
                     output_tokens=pd.to_numeric(spans["output_tokens"], errors="coerce"))
    g = s.groupby("trace_id", sort=False)
    return pd.DataFrame({"spans": g.size(), "model_calls": g["chat"].sum(), "tool_calls": g["tool"].sum(),
                         "errors": g["error"].sum(), "input_tokens": g["input_tokens"].sum(min_count=1),
                         "output_tokens": g["output_tokens"].sum(min_count=1), "start": g["start"].min(),
                         "end": g["end"].max()}).reset_index()
