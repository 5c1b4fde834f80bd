"""Precision shown, not assumed (issue 42): each signature's share among failed and successful runs, the ratio with
its interval, and its role (cause or trait)."""
from __future__ import annotations

import math

import pandas as pd
import pytest
from locations import TAU2

from agentobs.analysis import analyze
from agentobs.analysis.assess.signatures import precision, summarize


def test_the_ratio_and_its_interval_against_katz_by_hand():
    # 30 of 60 failed runs and 10 of 100 successful ones show it: ratio 5, log-SE sqrt(1/30-1/60+1/10-1/100)
    ratio, (lo, hi) = precision(30, 60, 10, 100)
    se = math.sqrt(1 / 30 - 1 / 60 + 1 / 10 - 1 / 100)
    assert ratio == pytest.approx(5.0)
    assert lo == pytest.approx(5 * math.exp(-1.959963984540054 * se))
    assert hi == pytest.approx(5 * math.exp(1.959963984540054 * se))
    assert precision(3, 0, 1, 10) is None and precision(1, 10, 0, 0) is None


def test_an_empty_cell_takes_half_a_run():
    ratio, (lo, _hi) = precision(5, 5, 0, 50)          # in every failed run and no successful one
    assert ratio == pytest.approx((5.5 / 6) / (0.5 / 51)) and lo > 1


def _runs(flags_failed: list[bool], flags_ok: list[bool]) -> pd.DataFrame:
    rows = [{"run_id": f"f{i}", "success": False, "signatures": ["x"] if f else [], "signature": "x" if f else None}
            for i, f in enumerate(flags_failed)]
    rows += [{"run_id": f"s{i}", "success": True, "signatures": ["x"] if f else [], "signature": "x" if f else None}
             for i, f in enumerate(flags_ok)]
    return pd.DataFrame(rows).astype({"success": "boolean"})


def test_a_signature_as_common_in_successful_runs_is_a_trait(monkeypatch):
    from agentobs.analysis.assess import signatures as sig
    monkeypatch.setattr(sig, "CATALOG", [sig.Signature(name="x", reference="t", looks_like="", cause="", control="",
                                                       rule=lambda d: d["success"].notna())])
    trait = summarize(_runs([True] * 30 + [False] * 70, [True] * 300 + [False] * 700))[0]
    assert trait.role == "trait" and trait.ratio == pytest.approx(1.0) and trait.ratio_ci[0] < 1 < trait.ratio_ci[1]
    cause = summarize(_runs([True] * 40 + [False] * 10, [True] * 20 + [False] * 180))[0]
    assert cause.role == "cause" and cause.ratio_ci[0] > 1
    assert cause.failed_share == pytest.approx(0.8) and cause.successful_share == pytest.approx(0.1)
    alone = summarize(_runs([True] * 3, []))[0]
    assert alone.role == "unmeasured" and alone.ratio is None


@pytest.mark.skipif(not TAU2.exists(), reason="shared tau2 data not present")
def test_on_the_published_runs_no_cause_has_an_interval_that_includes_one():
    report = analyze(sorted(str(p) for p in TAU2.glob("*.json")))
    rows = {s.name: s for s in report.signatures if s.runs}
    assert rows, "no signature fired on the published runs"
    for s in rows.values():
        if s.role == "cause":
            assert s.ratio_ci is not None and s.ratio_ci[0] > 1, s
        assert s.failed + s.successful <= s.runs
    # failed runs that match nothing are listed, each with what ended it when the spans say
    n, listed = report.overview["without_signature_failed"], report.unexplained
    assert len(listed) == min(n, 20)
    assert report.to_dict()["unexplained"] == [{"run_id": u.run_id, "last_error": u.last_error} for u in listed]
