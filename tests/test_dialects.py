"""The analysis reads the traces real instrumentations emit (issue 11): committed fixtures against their truth.

Each ``tests/dialects/fixtures/<name>.jsonl`` was written by a real framework and instrumentation driven against
a scripted model server (``tests/dialects/generate.py``); ``<name>.truth.json`` holds what the server served and
which tools ran, per run. Nothing here needs the frameworks installed.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from agentobs.analysis import analyze

FIXTURES = Path(__file__).resolve().parent / "dialects" / "fixtures"
NAMES = sorted(p.name[:-len(".truth.json")] for p in FIXTURES.glob("*.truth.json"))
FIGURES = ("model_calls", "tool_calls", "input_tokens", "output_tokens", "max_identical_calls",
           "max_consecutive_identical")


def _truth(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.truth.json").read_text())


def _num(v: object) -> int | None:
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return None
    return int(v)


def test_there_are_fixtures():
    assert NAMES, f"no truth files in {FIXTURES}"
    for name in NAMES:
        assert (FIXTURES / f"{name}.jsonl").exists(), f"{name}.truth.json has no {name}.jsonl"


@pytest.mark.parametrize("name", NAMES)
def test_truth_names_spans_that_are_in_the_fixture(name):
    """The harness itself: every run of the truth has its trace and top span in the fixture, versions recorded."""
    truth = _truth(name)
    assert truth["dialect"] == name
    assert truth["packages"] and all(v != "not installed" for v in truth["packages"].values())
    ids: dict[str, set[str]] = {}
    for line in (FIXTURES / f"{name}.jsonl").read_text().splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    ids.setdefault(s["traceId"], set()).add(s["spanId"])
    for t in truth["traces"]:
        assert t["trace_id"] in ids, f"trace {t['trace_id']} of the truth is not in {name}.jsonl"
        assert t["n_runs"] == len(t["runs"]) >= 1
        for r in t["runs"]:
            assert r["root_span_id"] in ids[t["trace_id"]]
            assert r["model_calls"] >= 1


@pytest.mark.parametrize("name", NAMES)
def test_analysis_finds_the_served_runs(name):
    truth = _truth(name)
    report = analyze([str(FIXTURES / f"{name}.jsonl")])
    runs = report.runs
    # signatures and caps ran on these runs without error
    assert isinstance(report.signatures, list) and isinstance(report.caps, list)
    spans = report.spans
    failed = spans[(spans["status_code"] == 2) & spans["_kind"].isin(["chat", "tool"])]
    failed_per_run = failed.groupby(failed["run_id"].astype(str)).size()
    problems: list[str] = []
    for t in truth["traces"]:
        mine = runs[runs["trace_id"] == t["trace_id"]].sort_values("start", kind="stable")
        keys = [r["run_key"] for r in t["runs"]]
        if len(mine) != t["n_runs"]:
            problems.append(f"trace {t['trace_id'][:8]} ({t['shape']}: {', '.join(keys)}): {len(mine)} runs found, "
                            f"{t['n_runs']} expected")
            continue
        for r, (_, got) in zip(t["runs"], mine.iterrows()):
            for f in FIGURES:
                want = r[f]
                if want is None:
                    continue
                have = _num(got[f])
                if have != want:
                    problems.append(f"run {r['run_key']}: {f} {have}, expected {want}")
            n_failed = int(failed_per_run.get(str(got["run_id"]), 0))
            if n_failed != r["errors"]:
                problems.append(f"run {r['run_key']}: {n_failed} failed model/tool spans, expected {r['errors']}"
                                f" (first_error {got['first_error'] if pd.notna(got['first_error']) else None})")
    assert not problems, f"{name}: {len(problems)} mismatches\n" + "\n".join(problems)
