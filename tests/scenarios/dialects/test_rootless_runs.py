"""A run rooted at the top span of a trace whose root never arrived (a process that crashed or was still running, or a
lost span) is not labelled by the status of that span: the outcome was the root's, and the run's figures may be cut
short, so a successful label would feed them to the caps. Such runs are left unlabelled and counted in a note, on both
engines; a labels file still labels them. A run whose own agent span arrived keeps its label when only the request
span above it is missing."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from locations import TESTS
from rootless_traces import _trace, _write

from agentobs.analysis import derive_runs, load_sources
from agentobs.analysis.derive.runs import ROOTLESS_NOTE
from agentobs.analysis.report.engine import analyze
from agentobs.analysis.report.summary import Options

FIXTURES = TESTS / "dialects" / "fixtures"


def _runs(path: Path) -> pd.DataFrame:
    runs, _, der = derive_runs(load_sources([str(path)]))
    return runs.set_index("run_id"), der.sentences()


def test_a_run_whose_trace_root_never_arrived_is_left_unlabelled_and_noted(tmp_path):
    path = _write(tmp_path / "t.jsonl", [
        _trace(1, root=True, agent=False),                      # whole: labelled by its root
        _trace(2, root=False, agent=False),                     # the request span never arrived
        _trace(3, root=False, agent=False),
        _trace(4, root=True, agent=False, failed_root=True),    # whole, failed
        _trace(5, root=False, agent=True),                      # the agent span arrived: labelled by it
    ])
    runs, notes = _runs(path)
    assert len(runs) == 5
    by_trace = {int(r, 16): row for r, row in runs.iterrows()}
    # labelled from their spans: the last call answered; the request failed after it
    assert by_trace[1]["success"] is True and by_trace[1]["label_source"] == "final_answer"
    assert by_trace[4]["success"] is False and by_trace[4]["label_source"] == "exception"
    assert by_trace[5]["success"] is True and by_trace[5]["run_root"] == "agent"
    for t in (2, 3):
        assert pd.isna(by_trace[t]["success"]) and pd.isna(by_trace[t]["label_source"])
        assert by_trace[t]["run_root"] == "trace" and by_trace[t]["model_calls"] == 2
    assert f"2 {ROOTLESS_NOTE}" in notes, notes

    r = analyze([str(path)])
    assert r.to_dict()["overview"]["unlabelled"] == 2
    assert any(n.startswith("2 runs lack their trace's root span") for n in r.derivation.sentences())


def test_a_labels_file_still_labels_a_rootless_run(tmp_path):
    path = _write(tmp_path / "t.jsonl", [_trace(1, root=True, agent=False), _trace(2, root=False, agent=False)])
    labels = tmp_path / "labels.csv"
    labels.write_text(f"run_id,success\n{2:032x},false\n")
    runs = analyze([str(path)], Options(labels=str(labels))).runs.set_index("run_id")
    assert pd.notna(runs.loc[f"{2:032x}", "success"]) and not bool(runs.loc[f"{2:032x}", "success"])
    assert runs.loc[f"{2:032x}", "label_source"] == "labels_file"


def test_traceloop_old_model_error_run_is_no_longer_a_success():
    """traceloop-sdk 0.33 never exports the span of a decorated function that raised: in its model_error run (a
    500 from the model server ended it) the agent span and the failed chat span are missing, and the run was
    labelled successful from its first, answered, chat span. It is never a success: failed where what is left
    shows a failure (the model's request for tools never answered), else unlabelled and noted."""
    runs, notes = _runs(FIXTURES / "traceloop_old.jsonl")
    truth = json.loads((FIXTURES / "traceloop_old.truth.json").read_text())
    raised = [r["trace_id"] for t in truth["traces"] for r in t["runs"] if r.get("raised")]
    assert raised, "the fixture's truth names the run that raised"
    unlabelled = 0
    for trace in raised:
        got = runs.loc[trace, "success"]
        assert pd.isna(got) or not bool(got), runs.loc[trace, ["success", "label_source"]]
        unlabelled += int(pd.isna(got))
    if unlabelled:
        assert f"{unlabelled} {ROOTLESS_NOTE}" in notes
    others = runs.drop(index=raised)
    assert others["success"].notna().all()
