"""The one comparison of two loads of the same spans, whatever format each was read from: the same spans, attribute
for attribute, the same events and links, and the same runs (unit/analysis/formats/test_collector_formats.py;
stack/test_collector_file_formats.py on the real collector's files)."""
import pandas as pd

from agentobs.analysis.derive.runs import derive_runs

RUN_COLUMNS = ["trace_id", "stop_reason", "status", "steps", "model_calls", "tool_calls", "input_tokens",
               "output_tokens", "tokens", "cost_usd", "signature"]
SPAN_COLUMNS = ["trace_id", "span_id", "parent_span_id", "name", "kind", "status_code", "status_message",
                "service_name", "start_ns", "end_ns"]


def _frame(df: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    return df[columns].sort_values(columns[:2]).reset_index(drop=True)


def same_spans(got, want) -> None:
    """The same spans, attribute for attribute, the same events and links, and the same runs."""
    attrs = sorted(c for c in want.spans.columns if "." in c)
    assert len(got.spans) == len(want.spans) > 0
    assert set(attrs) <= set(got.spans.columns)
    pd.testing.assert_frame_equal(_frame(got.spans, SPAN_COLUMNS + attrs), _frame(want.spans, SPAN_COLUMNS + attrs),
                                  check_dtype=False, check_categorical=False)
    assert len(got.events) == len(want.events) and len(got.links) == len(want.links)
    g, w = derive_runs(got)[0], derive_runs(want)[0]
    assert len(g) == len(w) > 0
    pd.testing.assert_frame_equal(_frame(g, RUN_COLUMNS), _frame(w, RUN_COLUMNS), check_dtype=False)
