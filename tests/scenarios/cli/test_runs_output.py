"""``agentobs runs`` without ``--out`` prints its table on a terminal and CSV when piped; ``--out -`` is standard
output, never a file named ``-``; ``runs --help`` lists only options that do something there; ``caps --out``."""
from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from locations import TESTS

from agentobs.cli.main import cli

FIXTURE = str(TESTS / "dialects" / "fixtures" / "openai_v2.jsonl")


def _invoke(args, **env):
    res = CliRunner().invoke(cli, args, env={"COLUMNS": None, **env})
    assert res.exit_code == 0, res.output
    return res


def test_piped_runs_are_csv_of_every_column_and_the_table_is_asked_for():
    piped = _invoke(["runs", FIXTURE]).stdout
    rows = list(csv.DictReader(io.StringIO(piped)))
    assert len(rows) == 16 and "max_identical_since_progress" in rows[0]
    table = _invoke(["runs", FIXTURE, "--format", "table"], COLUMNS="100").stdout.splitlines()
    assert table[0] == "16 runs" and table[1].split()[:3] == ["run_id", "success", "stop_reason"]
    assert all(len(line) <= 100 for line in table)
    assert {r["run_id"] for r in rows} <= {line.split()[0] for line in table[2:] if line and not line[0].isspace()}
    some = _invoke(["runs", FIXTURE, "--format", "table", "--columns", "run_id,model_calls"]).stdout.splitlines()
    assert some[1].split() == ["run_id", "model_calls"]
    assert _invoke(["runs", FIXTURE, "--columns", "run_id,tokens"]).stdout.splitlines()[0] == "run_id,tokens"
    bad = CliRunner().invoke(cli, ["runs", FIXTURE, "--columns", "run_id,nope"])
    assert bad.exit_code == 2 and "no column named nope" in bad.output and bad.output.count("\n") == 1


def test_on_a_terminal_runs_print_the_table(tmp_path):
    """A real terminal (a pty): the table, not CSV."""
    import pty
    exe = [sys.executable, "-c", "from agentobs.cli.main import main; main()", "runs", FIXTURE]
    parent, child = pty.openpty()
    env = {**os.environ, "COLUMNS": "120", "TERM": "dumb"}
    proc = subprocess.run(exe, stdout=child, stderr=subprocess.PIPE, env=env, timeout=120, check=False)
    os.close(child)
    out = b""
    while True:
        try:
            chunk = os.read(parent, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.close(parent)
    assert proc.returncode == 0, proc.stderr
    text = out.decode()
    assert "16 runs" in text and "run_id" in text and "," not in text.splitlines()[1]


def test_a_pipe_gets_csv_even_with_forced_colour():
    """FORCE_COLOR makes rich take a pipe for a terminal: the CSV and the widths follow where the text goes."""
    exe = [sys.executable, "-c", "from agentobs.cli.main import main; main()", "runs", FIXTURE]
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    done = subprocess.run(exe, capture_output=True, text=True, env={**env, "FORCE_COLOR": "1"}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("run_id,trace_id,") and "\x1b" not in done.stdout and done.stderr == ""


def test_out_dash_is_standard_output(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = _invoke(["runs", FIXTURE, "--out", "-"])
    assert res.stdout.startswith("run_id,") and len(res.stdout.splitlines()) == 17
    assert "16 runs: standard output" in res.stderr and not Path("-").exists()
    res = _invoke(["report", FIXTURE, "--out", "-"])
    assert json.loads(res.stdout)["schema_version"] == 1 and not Path("-").exists()


def test_runs_help_lists_only_what_runs_uses():
    text = _invoke(["runs", "--help"]).stdout
    for gone in ("--segment", "--margin", "--target", "--jaeger-url"):
        assert gone not in text
    for kept in ("--labels", "--success-attr", "--engine", "--scheduler", "--out", "--format", "--columns"):
        assert kept in text


@pytest.mark.parametrize("emit", [None, "budget"])
def test_caps_out_writes_through_the_file_writer(tmp_path, emit):
    out = tmp_path / "sub" / ("budget.py" if emit else "caps.json")
    res = _invoke(["caps", FIXTURE, "--out", str(out), *(["--emit", emit] if emit else [])])
    text = out.read_text()
    if emit:
        assert text.startswith("# Recommended caps") and "budget = Budget(" in text
        assert "budget = Budget(" not in res.stdout
    else:
        assert set(json.loads(text)["dimensions"]) >= {"steps", "tokens"}
        assert "Recommended caps" in res.stdout                        # the table stays on the terminal
    assert f": {out}" in res.stdout
