"""Findings are values: data-quality findings keyed by a closed enumeration add up like numbers, the runs' notes are
typed and worded only when shown, the records a user receives are keyword-only and frozen, a parse that fails says
so by its type."""
import dataclasses

import pytest
from locations import ROOT

from agentobs.analysis.derive.runs import Derivation, Overflow, Unusable
from agentobs.analysis.spans.quality import DataQuality, Finding, Kind, Note, NoteKind, total


def _q(*adds, files=0, lines=0):
    q = DataQuality(files=files, lines=lines)
    for kind, source, count, example in adds:
        q.add(kind, source, count, example)
    return q


def test_two_data_qualities_add_per_kind_and_source_in_the_order_first_made():
    a = _q(("invalid_json", "a.jsonl", 2, "line 1: x"), ("bad_span", "a.jsonl", 1, None), files=1, lines=10)
    b = _q(("bad_value", "b.jsonl", 1, "v"), ("invalid_json", "a.jsonl", 3, "line 9:   y\n z"), files=2, lines=5)
    got = a + b
    assert [(f.kind, f.source, f.count) for f in got.issues] == [
        (Kind.INVALID_JSON, "a.jsonl", 5), (Kind.BAD_SPAN, "a.jsonl", 1), (Kind.BAD_VALUE, "b.jsonl", 1)]
    assert got.issues[0].examples == ["line 1: x", "line 9: y z"]          # one line each
    assert (got.files, got.lines) == (3, 15)
    # the operands are unchanged, and sum() starts from nothing
    assert a.count("invalid_json") == 2 and b.count(Kind.INVALID_JSON) == 3
    assert sum([a, b]).to_dict() == got.to_dict() == sum([a, b], DataQuality()).to_dict()
    # the same as adding them one by one into one DataQuality, the way the loaders do
    one = _q(("invalid_json", "a.jsonl", 2, "line 1: x"), ("bad_span", "a.jsonl", 1, None),
             ("bad_value", "b.jsonl", 1, "v"), ("invalid_json", "a.jsonl", 3, "line 9:   y\n z"), files=3, lines=15)
    assert one.to_dict() == got.to_dict()


def test_a_finding_keeps_three_examples_and_adds_only_to_its_own_kind_and_source():
    q = sum(_q(("bad_line", "f", 1, f"line {n}")) for n in range(5))
    assert q.issues == [Finding(kind=Kind.BAD_LINE, source="f", count=5, examples=["line 0", "line 1", "line 2"])]
    with pytest.raises(ValueError):
        q.issues[0] + Finding(kind=Kind.BAD_LINE, source="g", count=1)
    with pytest.raises(ValueError):                      # a closed enumeration
        q.add("no_such_kind", "f")
    q.add("bad_line", "f", 0, "nothing")                 # a count of none is no finding
    assert q.count("bad_line") == 5


def test_every_kind_is_documented_with_what_it_means():
    text = (ROOT / "docs" / "analysis.md").read_text()
    for kind in Kind:
        assert f"| `{kind.value}` | {kind.what} |" in text, kind


def test_notes_are_worded_only_when_shown_and_add_up_per_kind_in_the_order_shown():
    notes = [Note(kind=NoteKind.ROOTLESS, runs=2), Note(kind=NoteKind.NO_SUCCESS_ATTRIBUTE, runs=1, attribute="ok"),
             Note(kind=NoteKind.TOOLS_UNRECORDED, runs=3), Note(kind=NoteKind.ROOTLESS, runs=5),
             Note(kind=NoteKind.NO_SUCCESS_ATTRIBUTE, runs=4, attribute="ok")]
    assert [str(n) for n in total(notes)] == [
        "3 runs asked for tools (a model call's finish reason) but record no tool spans: their tool calls and repeats "
        "could not be counted",
        "7 runs lack their trace's root span (a process that crashed or was still running, or a lost span): their "
        "figures may be cut short, and the status of their top span leaves them unlabelled",
        "5 runs have no ok attribute on their root span (--success-attr labels them failed)"]
    with pytest.raises(ValueError):
        Note(kind=NoteKind.ROOTLESS, runs=1) + Note(kind=NoteKind.NOT_PRICED, runs=1)


def test_derivations_add_up():
    a = Derivation(missing={"cost_usd": 2, "outcome": 1}, notes=[Note(kind=NoteKind.NOT_PRICED, runs=2)],
                   dialects={"genai": 3}, unplaced=1,
                   overflow=[Overflow(run_id="r2", column="tokens", source="s", example="e2")])
    b = Derivation(missing={"outcome": 4}, notes=[Note(kind=NoteKind.NO_TOKEN_USAGE, runs=1),
                                                  Note(kind=NoteKind.NOT_PRICED, runs=1)],
                   dialects={"genai": 1}, unplaced=2,
                   overflow=[Overflow(run_id="r1", column="tokens", source="s", example="e1")],
                   unusable=[Unusable(field="input_tokens", what="negative", source="s", count=1, first=0,
                                      example="x")])
    got = a + b
    assert got.missing == {"outcome": 5, "cost_usd": 2}                  # in NOT_ALWAYS_DERIVABLE's order
    assert list(got.missing) == ["outcome", "cost_usd"]
    assert got.sentences()[0].startswith("1 runs have answered model calls") and got.sentences()[1].startswith("3 ")
    assert got.dialects == {"genai": 4} and got.unplaced == 3
    assert [o.run_id for o in got.overflow] == ["r1", "r2"] and len(got.unusable) == 1
    assert got.overflow[0].finding() == Finding(kind=Kind.BAD_VALUE, source="s", count=1, examples=["e1"])


@pytest.mark.parametrize("record", ["Report", "Example", "CapRecommendation", "Percentiles", "Finding", "Note",
                                    "Overflow", "Unusable", "SignatureRow", "Signature"])
def test_the_records_a_user_receives_are_keyword_only_and_frozen(record):
    from agentobs.analysis.assess import limits, signatures
    from agentobs.analysis.derive import runs
    from agentobs.analysis.report import summary as report
    from agentobs.analysis.spans import quality
    cls = next(getattr(m, record) for m in (report, limits, quality, runs, signatures) if hasattr(m, record))
    params = cls.__dataclass_params__
    assert all(f.kw_only for f in dataclasses.fields(cls)), record
    assert params.frozen or record == "Report", record          # (a Report is built whole, but callers may set a
                                                                 # field aside: tests set ``read``)


def test_a_recommendation_is_built_whole():
    import pandas as pd

    from agentobs.analysis.assess.limits import DIMENSIONS, recommend
    runs = pd.DataFrame({"success": [True] * 30 + [False] * 3, "steps": [*range(30), 50, 60, 70]})
    rec = recommend(runs, next(d for d in DIMENSIONS if d.column == "steps"), target=0.1)
    assert rec.recommended is not None and rec.cutoff and rec.warnings
    with pytest.raises(dataclasses.FrozenInstanceError):
        rec.recommended = 1                                              # type: ignore[misc]
    empty = recommend(runs.iloc[:0], next(d for d in DIMENSIONS if d.column == "steps"))
    assert empty.recommended is None and empty.warnings == ["no successful run has steps: no cap can be recommended"]


def test_a_piece_that_cannot_be_parsed_is_a_parse_failure_with_its_reason():
    from agentobs.analysis.otlp._parse import ParseFailure, parse
    from agentobs.analysis.otlp._spelling import Spelling
    got = parse(b'{"resourceSpans": [}\n', 1 << 20, Spelling())
    assert isinstance(got, ParseFailure) and got.reason
    assert parse(b'{"other": 1}\n', 1 << 20, Spelling()) == ParseFailure(reason="no resourceSpans")
    ok = parse(b'{"resourceSpans": []}\n', 1 << 20, Spelling())
    assert isinstance(ok, tuple) and ok[0].num_rows == 1


def test_check_reports_the_spans_it_flags_as_its_counts(tmp_path):
    """The Dask partitions read check's bad_value findings from what it flags: the rows agree with its counts."""
    from bot_runs import _bot_file, _bot_run

    from agentobs.analysis.otlp.load import load_file
    from agentobs.analysis.spans.checks import Flagged, check
    runs = [_bot_run("1" * 32, root_parent="a" * 16), _bot_run("2" * 32, root_parent="b" * 16),
            _bot_run("3" * 32, tokens=-5)]
    ss = load_file(_bot_file(tmp_path, *runs))
    before = ss.quality.count("bad_value")
    flagged = Flagged()
    check(ss, flagged)
    assert len(flagged.cut) + sum(len(n.rows) for n in flagged.negatives) == ss.quality.count("bad_value") - before
    assert flagged.cut and flagged.negatives
    for n in flagged.negatives:
        assert ss.spans[n.column].iloc[n.rows].isna().all() and n.example.endswith("-5 is negative")
    for c in flagged.cut:
        assert pd_isna(ss.spans["parent_span_id"].iloc[c.row]) and "taken as a root" in c.example


def pd_isna(v):
    import pandas as pd
    return pd.isna(v)
