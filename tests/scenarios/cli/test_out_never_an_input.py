"""An output never names a file the same command reads (its sources, its labels file) or writes besides it.

`runs --labels L.csv --out L.csv` replaced the labels with the runs table, exit 0. Every command now compares each
output with the others by resolved path (a link, `./x` beside `x`) and by device and inode (a hard link), and
refuses, before anything is read or written, with one line naming both files."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from locations import TESTS

from agentobs.cli.main import cli

FIXTURE = TESTS / "dialects" / "fixtures" / "openai_v2.jsonl"


@pytest.fixture()
def inputs(tmp_path):
    """A traces file and a labels file of its runs (the first run's id, failed), each a copy we may lose."""
    traces = tmp_path / "traces.jsonl"
    traces.write_bytes(FIXTURE.read_bytes())
    labels = tmp_path / "labels.csv"
    labels.write_text("run_id,success\nnot-a-run,false\n")
    return traces, labels


def _refused(args: list[str], *keep: Path) -> str:
    before = {p: p.read_bytes() for p in keep}
    res = CliRunner().invoke(cli, [str(a) for a in args])
    lines = res.stderr.strip().splitlines()
    assert res.exit_code == 2 and len(lines) == 1 and lines[0].startswith("agentobs: error: --"), res.output
    assert "Traceback" not in res.output
    assert {p: p.read_bytes() for p in keep} == before
    return lines[0]


@pytest.mark.parametrize("command", [["runs"], ["report", "--format", "json"], ["report", "--format", "html"],
                                     ["report"]])
def test_out_naming_the_labels_file_is_refused(inputs, command):
    traces, labels = inputs
    line = _refused([*command, traces, "--labels", labels, "--out", labels], traces, labels)
    assert line == (f"agentobs: error: --out {labels} is the labels file ({labels}): writing it would replace that "
                    "file; choose another")


@pytest.mark.parametrize("how", ["hard link", "symbolic link", "dotted path", "relative path"])
@pytest.mark.parametrize("which", ["labels", "traces"])
def test_another_name_of_an_input_is_refused(inputs, tmp_path, monkeypatch, how, which):
    traces, labels = inputs
    target = labels if which == "labels" else traces
    if how == "hard link":
        out = tmp_path / "other-name.csv"
        os.link(target, out)
    elif how == "symbolic link":
        out = tmp_path / "link.csv"
        out.symlink_to(target)
    elif how == "dotted path":
        out = tmp_path / "sub" / ".." / target.name
        (tmp_path / "sub").mkdir()
    else:
        monkeypatch.chdir(tmp_path)
        out = Path(target.name)
    line = _refused(["runs", traces, "--labels", labels, "--out", out], traces, labels)
    assert ("is the labels file" if which == "labels" else "is one of the inputs") in line


def test_a_file_read_from_a_source_folder_is_an_input(inputs, tmp_path):
    traces, labels = inputs
    line = _refused(["report", tmp_path, "--format", "json", "--out", traces], traces, labels)
    assert f"is one of the inputs ({traces})" in line


def test_an_output_beside_the_inputs_is_fine(inputs, tmp_path):
    traces, labels = inputs
    res = CliRunner().invoke(cli, ["runs", str(traces), "--labels", str(labels), "--out", str(tmp_path / "r.csv")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "r.csv").read_text().startswith("run_id")


def test_the_manifest_may_not_name_the_traces_file(tmp_path):
    traces = tmp_path / "t.jsonl"
    traces.write_text("earlier\n")
    line = _refused(["simulate", "--runs", "2", "--traces-out", traces, "--manifest", tmp_path / "." / "t.jsonl"],
                    traces)
    assert line.startswith(f"agentobs: error: --manifest {tmp_path / '.' / 't.jsonl'} is the traces file "
                           f"(--traces-out) ({traces})")


def test_the_demos_traces_may_not_name_a_file_it_writes_later(tmp_path):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    for name in ("simulate-traces.jsonl", "simulate-manifest.json", "report.html"):
        line = _refused(["demo", "--runs", "1", "--out-dir", out_dir, "--traces-out", out_dir / name])
        assert f"--traces-out {out_dir / name} is where the demo writes its " in line
        assert not (out_dir / name).exists()


def test_the_default_html_report_is_checked_too(tmp_path, monkeypatch):
    """`report --format html` writes agentobs-out/report.html: when that is a source, it is refused too."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agentobs-out").mkdir()
    src = tmp_path / "agentobs-out" / "report.html"
    src.write_bytes(FIXTURE.read_bytes())             # (a traces file under that name: it is read by its content)
    line = _refused(["report", "agentobs-out/report.html", "--format", "html"], src)
    assert "--out agentobs-out/report.html is one of the inputs" in line


def test_report_json_out_still_works_and_is_json(inputs, tmp_path):
    traces, _ = inputs
    res = CliRunner().invoke(cli, ["report", str(traces), "--format", "json", "--out", str(tmp_path / "r.json")])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "r.json").read_text())["schema_version"] == 1
