"""Every benchmark module imports and has the shape bench.run expects (the benchmarks themselves are not run here).

A module that no longer imports (a helper moved to another module) would only show when someone runs the
benchmarks, long after the change; this catches it in the test run.
"""
from __future__ import annotations

import importlib

import pytest
from locations import TESTS

from bench.run import BENCHMARKS, OPTIONAL


@pytest.mark.parametrize("module", BENCHMARKS + OPTIONAL)
def test_a_benchmark_module_imports_and_names_its_targets(module):
    m = importlib.import_module(module)
    assert isinstance(m.NAME, str) and m.NAME and isinstance(m.TITLE, str) and m.TITLE
    assert callable(m.run)
    for t in m.TARGETS:
        assert t.op in ("<=", ">=") and t.figure, t

def test_each_target_row_belongs_to_one_module():
    """``--update`` replaces a module's rows of the targets table by name: no row may be claimed by two modules."""
    modules = [importlib.import_module(m) for m in BENCHMARKS + OPTIONAL]
    names = [m.NAME for m in modules]
    assert len(names) == len(set(names)), names
    for m in modules:
        for t in m.TARGETS:
            others = [o.NAME for o in modules if o is not m and t.name.startswith((f"{o.NAME}:", f"{o.NAME} ("))]
            assert not others, f"{m.__name__}: target {t.name!r} would be replaced by {others}"
    every = [t.name for m in modules for t in m.TARGETS]
    assert len(every) == len(set(every)), sorted(x for x in every if every.count(x) > 1)


def test_the_analysis_benchmarks_report_phases_run_on_a_small_file():
    """``timed_report`` imports what it times inside the function (a helper it used moved once and only the
    28-minute benchmark run found out): run it on a fixture."""
    import json

    from agentobs.cli import render
    from bench.analysis_phases import timed_report
    fixture = TESTS / "dialects" / "fixtures" / "openai_v2.jsonl"
    truth = json.loads(fixture.with_name("openai_v2.truth.json").read_text())
    spans = sum(len(ss["spans"]) for line in fixture.read_text().splitlines()
                for rs in json.loads(line)["resourceSpans"] for ss in rs["scopeSpans"])
    out = timed_report(fixture)
    assert out["runs"] == sum(t["n_runs"] for t in truth["traces"]) and out["spans"] == spans and out["total"] > 0
    assert set(out["phases"]) >= {"load", "runs table", "pricing", "signatures"}
    # the CLI's console still follows sys.stdout: pinning it to the stream of the moment emptied every later
    # CliRunner's output in the same process
    assert render.console._file is None


def test_instructions_are_counted_per_call_and_grow_with_the_calls():
    """The telemetry benchmark's instruction rows: a child counted under callgrind twice, with and without its
    calls; what the calls execute doubles when they do, and the set-up cancels out."""
    import shutil
    import sys

    from bench.common import instructions, instructions_per_call
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed")
    child = [sys.executable, "-c", "import sys\nfor _ in range(int(sys.argv[1])): sum(range(2000))"]
    per_call = instructions_per_call(child, 200)
    assert per_call is not None and per_call > 2000           # at least one instruction per number summed
    twice = (instructions([*child, "400"]) - instructions([*child, "0"])) / 400   # type: ignore[operator]
    assert abs(twice - per_call) / per_call < 0.05
    with pytest.raises(RuntimeError, match="callgrind run"):
        instructions([sys.executable, "-c", "raise SystemExit(3)"])
