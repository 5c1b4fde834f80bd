"""A run whose model calls only partly report usage or only partly can be priced has unknown tokens or cost, said in
a note: a sum over the calls that did report is a lower bound that read as the total (a third of the truth when two
calls of three report nothing). A call that failed is not expected to report usage; a total the run's root records
still counts."""
from __future__ import annotations

import pandas as pd
from partial_usage_runs import RUNS, _attr, write_runs

from agentobs.analysis.report.engine import analyze


def _by_run(report) -> pd.DataFrame:
    runs = report.runs.sort_values("trace_id" if "trace_id" in report.runs.columns else "run_id")
    return runs.reset_index(drop=True)


def test_partly_reported_usage_is_unknown_not_a_partial_sum(tmp_path):
    r = analyze([str(write_runs(tmp_path / "t.jsonl", RUNS))])
    runs = _by_run(r)
    assert len(runs) == len(RUNS)
    full, partial, failed, unpriced, none = (runs.iloc[i] for i in range(5))
    assert (full["input_tokens"], full["output_tokens"], full["tokens"]) == (6000, 600, 6600)
    assert full["cost_usd"] > 0
    for row in (partial, none):
        assert pd.isna(row["input_tokens"]) and pd.isna(row["output_tokens"]) and pd.isna(row["tokens"])
        assert pd.isna(row["cost_usd"])
    # a failed call is not expected to report usage: the answered calls' sum is the run's
    assert (failed["input_tokens"], failed["tokens"]) == (4000, 4400) and failed["cost_usd"] > 0
    # tokens all reported, but one call has no price: tokens known, cost unknown
    assert unpriced["tokens"] == 3300 and pd.isna(unpriced["cost_usd"])
    notes = r.derivation.sentences()
    assert any(n.startswith("2 runs have answered model calls that reported no token usage") for n in notes), notes
    assert any(n.startswith("1 runs have model calls that could not be priced") for n in notes), notes


def test_a_total_the_root_records_still_counts(tmp_path):
    """A dialect that records the run's total on its root (as agentobs and the transcripts do) keeps it."""
    runs = {"one of three reported": [{"tin": 1000, "tout": 100}, {}, {}]}
    root = {"one of three reported": [_attr("agentobs.tokens", 9999), {"key": "agentobs.cost_usd",
                                                                       "value": {"doubleValue": 0.5}}]}
    r = analyze([str(write_runs(tmp_path / "t.jsonl", runs, root))])
    row = r.runs.iloc[0]
    assert row["tokens"] == 9999 and row["cost_usd"] == 0.5
    assert not any("reported no token usage" in n for n in r.derivation.sentences())
