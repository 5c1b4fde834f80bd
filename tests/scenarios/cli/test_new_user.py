"""What tripped a new user trying ``diff`` and ``watch`` on the simulated support desk (real commands in a child
process, what they print):

- ``diff`` with a side of one run called a 26-point drop in the success rate and every signature "significant"
  (resampling one run never varies), and with a side of 27 runs called every p99 and cap significant (a resample's
  p99 of 27 runs is never above their maximum) and 0 of 27 runs against 2% of 1,196 too (a share of 0 resamples to
  0): such changes are now shown side by side, untested, with a line saying why;
- ``watch FILE --once`` followed the file from its end and read nothing (it now reads what the file holds), and a
  caps file with a misspelt ``Budget`` field was read as "no successful run measured any".
"""
from __future__ import annotations

import csv
import io
import json
import subprocess
from pathlib import Path

import pytest
from cli_process import CLI, child_env


def _run(*args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*CLI, *args], capture_output=True, text=True, env=child_env(), timeout=600)
    assert "Traceback" not in done.stderr, done.stderr
    if ok:
        assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def population(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("newuser")
    out = d / "sim.jsonl"
    _run("simulate", "--runs", "400", "--seed", "5", "--traces-out", str(out), "--manifest", str(d / "m.json"))
    return out


def _starts(path: Path) -> list[str]:
    rows = csv.DictReader(io.StringIO(_run("runs", str(path), "--out", "-").stdout))
    return sorted(r["start"] for r in rows)


def test_diff_with_a_side_of_one_run_tests_nothing_and_says_why(population):
    args = ["diff", str(population), "--before-where", "agentobs.task.id=sim-000001"]
    out = _run(*args).stdout
    assert out.startswith(f"Before: {population} (where agentobs.task.id=sim-000001): 1 run, 1 labelled")
    assert " yes" not in out
    assert "warning: the before side has 1 run:" in out and "shown untested" in out
    doc = json.loads(_run(*args, "--format", "json").stdout)
    assert doc["before"]["runs"] == 1 and doc["method"]["min_runs"] == 10
    measures = [doc["success_rate"], *doc["signatures"].values(), *doc["caps"].values(),
                *(m for q in doc["percentiles"].values() for m in q.values())]
    assert measures and all(m["ci"] is None and m["significant"] is None for m in measures)
    assert all({"before", "after", "change", "ci", "significant"} <= set(m) for m in measures)


def test_diff_with_a_small_side_tests_no_p99_or_cap_of_it(population):
    starts = _starts(population)
    until = starts[27].replace(" ", "T")           # the first 27 runs against the rest
    doc = json.loads(_run("diff", str(population), "--before-until", until, "--after-since", until,
                          "--format", "json").stdout)
    assert doc["before"]["runs"] == 27 and doc["method"]["min_tail"] == 3
    p99 = [q["p99"] for q in doc["percentiles"].values()]
    assert all(m["significant"] is None and m["ci"] is None for m in [*p99, *doc["caps"].values()])
    # the shares and medians are still tested, and a share of 0 of 27 is not "significant" beside a few percent
    assert doc["success_rate"]["significant"] is False
    assert doc["percentiles"]["steps"]["p50"]["significant"] is not None
    zero = [m for m in doc["signatures"].values() if m["runs"]["before"] == 0]
    assert zero and not any(m["significant"] for m in zero)
    assert all(m["ci"][0] < 0 for m in zero if m["ci"] is not None)     # the interval holds "no change"


def test_watch_once_reads_what_the_file_holds(population, tmp_path):
    caps = tmp_path / "caps.py"
    caps.write_text(_run("caps", str(population), "--emit", "budget").stdout)
    done = _run("watch", str(population), "--caps", str(caps), "--once", "--format", "json")
    lines = [json.loads(x) for x in done.stdout.splitlines()]
    assert lines[-1]["event"] == "summary" and lines[-1]["runs_finished"] >= 400 and lines[-1]["spans"] > 0
    assert [x for x in lines if x["event"] == "cap_crossed"]
    done = _run("watch", str(population), "--caps", str(caps), "--once", "--from", "end", ok=False)
    assert done.returncode == 2 and "--once --from end reads nothing" in done.stderr


def test_watch_refuses_a_misspelt_cap_in_one_line(population, tmp_path):
    caps = tmp_path / "caps.py"
    caps.write_text("from agentobs import Budget\n\nbudget = Budget(\n    max_stepz=14,\n)\n")
    done = _run("watch", str(population), "--caps", str(caps), "--once", ok=False)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "line 4: Budget has no field 'max_stepz'" in done.stderr and "max_steps" in done.stderr


def test_caps_takes_no_option_that_does_nothing(population):
    """``caps --help`` listed ``--segment`` and ``--jaeger-url``, which changed nothing it prints, and took
    ``--alert-window``/``--alert-for`` without ``--emit prometheus-rules``, where they shape nothing."""
    helped = _run("caps", "--help").stdout
    assert "--segment" not in helped and "--jaeger-url" not in helped and "--alert-window" in helped
    done = _run("caps", str(population), "--segment", "agent", ok=False)
    assert done.returncode == 2 and "No such option '--segment'" in done.stderr
    done = _run("caps", str(population), "--alert-window", "2h", ok=False)
    assert done.returncode == 2 and done.stderr.strip() == (
        "agentobs: error: --alert-window shapes the alerting rules: add --emit prometheus-rules")
    rules = _run("caps", str(population), "--emit", "prometheus-rules", "--alert-window", "2h").stdout
    assert "[2h]" in rules


@pytest.mark.parametrize("option, says", [
    (["--agent", "Support-agent"], "--agent: the runs read are of agent 'support-agent' (400)"),
    (["--model", "gpt-4.1*"], "--model: the runs read are of model 'support-policy-sim' (400)"),
    (["--service", "billing"], "--service: the spans read are of service 'agentobs' ("),
    (["--where", "app.tenant=acme"], "--where: no span read carries app.tenant"),
    (["--where", "gen_ai.agent.name=billing"], "--where: gen_ai.agent.name is 'support-agent' ("),
])
def test_a_selection_that_leaves_no_run_says_what_the_input_holds(population, option, says):
    """It said only how many traces were read and when: a misspelt or miscased agent, a model that is not there and
    an attribute no span carries read alike."""
    done = _run("report", str(population), *option, ok=False)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "matches the selection" in done.stderr and says in done.stderr, done.stderr


def test_trace_takes_the_run_ids_the_report_shows(population):
    """The report's examples and ``agentobs runs`` name runs by their run id (``sim-000083``): ``trace`` refused it
    as "not a trace id"."""
    rows = list(csv.DictReader(io.StringIO(_run("runs", str(population), "--out", "-").stdout)))
    row = next(r for r in rows if r["run_id"] != r["trace_id"])
    done = _run("trace", row["run_id"], str(population))
    assert done.stdout.startswith(f"trace {row['trace_id']}: ")
    assert done.stderr.strip() == f"agentobs: run {row['run_id']}: trace {row['trace_id']}"
    done = _run("trace", "no-such-run", str(population), ok=False)
    assert done.returncode == 2 and "nor a run, task or conversation id in" in done.stderr


@pytest.mark.parametrize("name", ["download_results.json", "trace_json.json"])
def test_watch_refuses_a_file_that_is_no_otlp_json_lines(tmp_path, name):
    """A Jaeger UI download, or a tau2 transcript (one JSON document over many lines), was watched as 0 spans and
    "unreadable lines"; ``agentobs report`` reads them."""
    from locations import TESTS
    caps = tmp_path / "caps.py"
    caps.write_text("budget = Budget(max_steps=14)\n")
    download = TESTS / "data" / "jaeger_ui" / name
    done = _run("watch", str(download), "--caps", str(caps), "--once", ok=False)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        f"agentobs: error: {name}: its first line holds no resourceSpans (a JSON document over many lines, "
        "a transcript, a Jaeger UI download?): watch follows OTLP JSON lines (the collector's file exporter with "
        "format: json, or agentobs' own traces file); agentobs report reads the others")
    assert _run("report", str(download)).stdout
