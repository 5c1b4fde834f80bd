"""Segments: runs without a value are "(none)" and values past the 50 with most runs are pooled as "(other)". A run
whose value is itself spelt "(none)" or "(other)" was merged with those runs without a word; it keeps its value,
and the placeholder takes one more pair of parentheses."""
from __future__ import annotations

import pandas as pd

from agentobs.analysis.assess.limits import SEGMENT_VALUES, segment_percentiles


def _runs(values: list[object]) -> pd.DataFrame:
    return pd.DataFrame({"team": pd.array(values, dtype="string"), "success": [True] * len(values),
                         "steps": list(range(1, len(values) + 1))})


def _n(seg: dict, name: str) -> int:
    return int(seg[name]["steps"]["successful"]["n"])


def test_a_value_spelt_like_the_missing_placeholder_is_its_own_segment():
    seg = segment_percentiles(_runs(["(none)", "(none)", None, "a", "((none))"]), "team", ["steps"])
    assert set(seg) == {"(none)", "((none))", "(((none)))", "a"}
    assert (_n(seg, "(none)"), _n(seg, "((none))"), _n(seg, "(((none)))"), _n(seg, "a")) == (2, 1, 1, 1)


def test_without_such_a_value_the_placeholders_are_as_before():
    values = [f"v{i}" for i in range(SEGMENT_VALUES - 1)] * 2 + ["rare", None, None, None]
    seg = segment_percentiles(_runs(values), "team", ["steps"])
    assert _n(seg, "(none)") == 3 and _n(seg, "(other)") == 1 and len(seg) == SEGMENT_VALUES + 1


def test_a_value_spelt_like_the_pooled_placeholder_is_not_pooled_with_the_rare_ones():
    values = [f"v{i}" for i in range(SEGMENT_VALUES - 1)] * 3 + ["(other)"] * 3 + ["rare1", "rare2"]
    seg = segment_percentiles(_runs(values), "team", ["steps"])
    assert _n(seg, "(other)") == 3 and _n(seg, "((other))") == 2
