"""Labels files, caps targets and output files a user may get wrong (found by fuzzing the CLI's options).

Each case is run through the CLI as a user would: a clear one-line error with exit code 2 for a file that cannot
be used, counted problems for rows that cannot, and no file written over an input or readable as a page.
"""
from __future__ import annotations

import json

import pandas as pd
import pytest
from attr_runs import _attr_runs
from click.testing import CliRunner

from agentobs.analysis.assess.labels import read_labels
from agentobs.analysis.report.engine import analyze
from agentobs.analysis.report.summary import Options
from agentobs.cli.main import cli
from agentobs.errors import InputError

MSGS = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}]


@pytest.fixture()
def runs_file(tmp_path):
    src = tmp_path / "runs.json"
    src.write_text(json.dumps([{"id": f"r{i}", "agent": "<script>alert(1)</script>", "messages": MSGS}
                               for i in range(4)]))
    return src


def _cli(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def _one_line_error(res):
    lines = res.stderr.strip().splitlines()
    assert res.exit_code == 2 and len(lines) == 1 and lines[0].startswith("agentobs: error: "), res.output
    return lines[0]


def test_a_csv_field_past_the_csv_modules_limit_is_a_one_line_error(runs_file, tmp_path):
    """It ended in 'internal error' (csv.Error: field larger than field limit)."""
    labels = tmp_path / "big.csv"
    labels.write_text("run_id,success\nr0,true\n" + "x" * 140_000 + ",true\n")
    for cmd in ("report", "caps", "runs"):
        extra = ["--out", tmp_path / "o.csv"] if cmd == "runs" else []
        err = _one_line_error(_cli(cmd, runs_file, "--labels", labels, *extra))
        assert "line 3" in err and "field larger than field limit" in err


def test_an_integer_json_cannot_hold_is_a_one_line_error(runs_file, tmp_path):
    labels = tmp_path / "huge.json"
    labels.write_text('[{"run_id": "r0", "success": ' + "1" * 5000 + "}]")
    assert "not usable JSON" in _one_line_error(_cli("report", runs_file, "--labels", labels))


def test_one_labels_object_is_not_read_as_a_map_of_ids(tmp_path):
    """{"run_id": "r0", "success": true} labelled a run named "success"."""
    labels = tmp_path / "one.json"
    labels.write_text('{"run_id": "r0", "success": true}')
    with pytest.raises(InputError, match="one run_id/success object; give a list of"):
        read_labels(labels)


def test_json_ids_are_trimmed_as_csv_ids_are(tmp_path):
    labels = tmp_path / "l.json"
    labels.write_text('{" r0 ": true, "r1": false}')
    assert read_labels(labels)[0] == {"r0": True, "r1": False}


def test_a_quoted_line_break_stays_in_its_field_and_other_breaks_do_not_split_a_row(tmp_path):
    """The file was split into lines before the CSV reader saw it: "r\\n2",false labelled r2, and a form feed
    inside a row made two rows of it."""
    labels = tmp_path / "l.csv"
    labels.write_bytes(b'run_id,success\n"r\n2",false\nr3,"tr\nue"\nr0,true\x0cr1,false\nr1,true\n')
    got, problems, _ = read_labels(labels)
    assert got == {"r\n2": False, "r1": True}
    assert problems == ["line 5: success='tr\\nue'", "line 6: success='true\\x0cr1'"]


def test_separators_other_than_commas_are_named(tmp_path):
    labels = tmp_path / "l.csv"
    labels.write_text("run_id;success\nr0;true\n")
    with pytest.raises(InputError, match="separated by semicolons: use commas"):
        read_labels(labels)


def test_a_run_labelled_under_two_of_its_ids(runs_file, tmp_path):
    """A label by trace id and another by the run's conversation id: the second was called unmatched ('matches
    no run'), and when they disagreed the first silently won. Agreeing labels are fine; disagreeing ones are a
    conflict that leaves the run unlabelled."""
    trace = analyze([str(runs_file)]).runs.set_index("conversation_id")["trace_id"].astype(str)
    labels = tmp_path / "l.csv"
    labels.write_text(f"run_id,success\n{trace['r0']},false\nr0,true\n{trace['r1']},true\nr1,true\nr2,maybe\n")
    r = analyze([str(runs_file)], Options(labels=str(labels)))
    runs = r.runs.set_index("conversation_id")
    assert pd.isna(runs.loc["r0", "success"]) and runs.loc["r1", "success"] == True  # noqa: E712
    q = r.quality
    assert q.count("unmatched_label") == 0 and q.count("conflicting_label") == 1
    (conflict,) = [i for i in q.issues if i.kind == "conflicting_label"]
    assert "labelled both true and false under" in conflict.examples[0] and "r0" in conflict.examples[0]
    (bad,) = [i for i in q.issues if i.kind == "bad_label"]            # not "a transcript run could not be imported"
    assert bad.examples == ["line 6: success='maybe'"]
    # a run the labels file leaves unlabelled has no label source (it said stop_reason beside an empty success)
    assert runs["label_source"].isna().sum() == 3 and runs.loc["r1", "label_source"] == "labels_file"


def test_runs_and_caps_say_what_the_labels_file_did_not_label(runs_file, tmp_path):
    """Only report showed label problems; runs and caps wrote their output as if every label had applied."""
    labels = tmp_path / "l.csv"
    labels.write_text("run_id,success\nfoo,true\nbar,false\n")
    res = _cli("runs", runs_file, "--labels", labels, "--out", tmp_path / "o.csv")
    assert res.exit_code == 0
    warn = [x for x in res.stderr.splitlines() if x.startswith("agentobs: warning: labels:")]
    assert len(warn) == 1 and "unmatched_label" in warn[0] and "unlabelled_run" in warn[0]
    res = _cli("caps", runs_file, "--labels", labels, "--format", "json")
    assert res.exit_code == 0 and "agentobs: warning: labels:" in res.stderr
    json.loads(res.stdout)                                                  # stdout stays the JSON alone


def test_a_tiny_target_gives_caps_with_a_warning_not_an_internal_error(runs_file):
    """--target 1e-310: 1/target is infinite, and math.ceil of it raised OverflowError (exit 3)."""
    for target in ("1e-310", "5e-324", "1e-300"):
        res = _cli("caps", runs_file, "--target", target)
        assert res.exit_code == 0, res.output
        assert "collect far more" in res.output


def test_json_written_to_an_html_file_is_no_page(runs_file, tmp_path):
    """`--format json --out x.html` wrote the agent name <script>...</script> as is: a browser opening the file
    ran it. JSON output now writes <, > and & as \\u escapes: the same values, never markup."""
    for fmt, name in (("json", "x.html"), ("table", "y.htm")):
        res = _cli("report", runs_file, "--format", fmt, "--out", tmp_path / name)
        assert res.exit_code == 0, res.output
        text = (tmp_path / name).read_text()
        assert "<" not in text and ">" not in text and "\\u003cscript\\u003e" in text
        agents = json.loads(text)["segments"]["agent"]
        assert "<script>alert(1)</script>" in agents


def test_out_naming_an_input_is_refused(runs_file, tmp_path):
    """`runs X --out X` replaced the traces with the CSV, exit 0."""
    before = runs_file.read_bytes()
    for cmd in (["runs", runs_file, "--out", runs_file], ["report", runs_file, "--format", "json", "--out",
                                                          runs_file]):
        err = _one_line_error(_cli(*cmd))
        assert "is one of the inputs" in err
    assert runs_file.read_bytes() == before


@pytest.mark.parametrize("attr,successes", [("eval.passed=true", 2), ("eval.passed=1", 2), ("eval.passed=no", 1),
                                            ("eval.score=1", 2), ("eval.score=1.0", 2), ("eval.f=1", 2),
                                            ("eval.f=0.5", 1), ("service.name=svc", 2), ("eval.score=x", 0)])
def test_success_attr_compares_in_the_attributes_type(tmp_path, attr, successes):
    """Values were compared as text: eval.passed=1, eval.score=1.0 and eval.f=1 labelled every run failed, without
    a word; service.name (the resource's) was refused as carried by no span."""
    key, value = attr.split("=")
    r = analyze([str(_attr_runs(tmp_path))], Options(success_attr=(key, value)))
    assert int(r.runs["success"].sum()) == successes


@pytest.mark.parametrize("attr", ["name=invoke_agent bot", "_run_root=true", "status_code=0", "run_id=x", "=x", ""])
def test_success_attr_names_an_attribute(tmp_path, attr):
    """Fields agentobs keeps for every span (and its own columns) were taken as attributes; an empty value was
    ignored."""
    err = _one_line_error(_cli("report", _attr_runs(tmp_path), "--success-attr", attr))
    assert "--success-attr" in err


def test_a_utf16_labels_file_says_to_save_it_as_utf8(tmp_path):
    labels = tmp_path / "l.csv"
    labels.write_text("run_id,success\nr0,true\n", encoding="utf-16")
    with pytest.raises(InputError, match=r"not UTF-8 text .*save it as UTF-8"):
        read_labels(labels)


def test_runs_whose_root_lacks_the_success_attribute_are_said(tmp_path):
    """Runs without the attribute were labelled failed without a word."""
    r = analyze([str(_attr_runs(tmp_path))], Options(success_attr=("eval.first", "yes")))
    assert int(r.runs["success"].sum()) == 1
    assert "2 runs have no eval.first attribute on their root span (--success-attr labels them failed)" in \
        r.derivation.sentences()
    assert not [n for n in analyze([str(_attr_runs(tmp_path))], Options(success_attr=("eval.f", "1"))
                                   ).derivation.sentences() if "runs have no" in n]


def test_a_csv_with_two_success_columns_is_refused():
    """The first success column was used, without a word."""
    import tempfile
    from pathlib import Path
    with tempfile.TemporaryDirectory() as d:
        labels = Path(d) / "l.csv"
        labels.write_text("run_id,success,success\nr0,true,false\n")
        with pytest.raises(InputError, match="two success columns; keep one"):
            read_labels(labels)
