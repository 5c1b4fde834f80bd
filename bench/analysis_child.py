"""One measurement in a fresh process, so that its peak memory (VmHWM) and its start-up are its own.

    python -m bench.analysis_child WHAT RESULT_JSON FILE [--warm FILE]

WHAT is ``report`` (the CLI, ``agentobs report FILE --out <tmp>/report.json``, its tables to the process's
stdout), ``runs`` (the CLI, ``agentobs runs FILE --out <tmp>/runs.csv``), ``analyze``
(``agentobs.analysis.analyze``, timed after its imports), ``profile`` (cProfile of ``timed_report``), ``loop`` (the
straightforward json loop into pandas), ``load`` (``load_file``), ``import`` (the analysis imported, nothing read)
or ``phases`` (``analysis_phases.timed_report``; ``--warm FILE`` runs one report on FILE first, untimed, so that
one-time costs are not billed to the measured one). The child writes
RESULT_JSON: ``hwm_mb`` (VmHWM at the end) and what WHAT measured. ``run_child`` is the parent's side: it
also times the whole process from the outside (``wall_s``: start-up, imports, the work, exit).

VmHWM, not getrusage's ru_maxrss: on Linux ru_maxrss carries the parent's peak across fork and exec, so a
child of a large benchmark process would report the parent's size.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .common import REPO_ROOT


def _hwm_mb() -> float:
    with open("/proc/self/status") as f:
        return int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1)) / 1024   # type: ignore[union-attr]


def _child(what: str, path: str, warm: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    if what == "report":
        from agentobs.cli.main import cli
        with tempfile.TemporaryDirectory() as d:
            cli.main(["report", path, "--out", os.path.join(d, "report.json")], prog_name="agentobs",
                     standalone_mode=False)
    elif what == "loop":
        from .analysis_contenders import straightforward
        out["rows"] = straightforward(Path(path))
    elif what == "load":
        from .analysis_contenders import ours
        out["spans"] = ours(Path(path))
    elif what == "import":
        import agentobs.analysis.report.summary  # noqa: F401
    elif what == "phases":
        from .analysis_phases import timed_report
        if warm:
            timed_report(warm)
            t0 = time.perf_counter()
        out.update(timed_report(path))
    elif what == "runs":                 # the CLI: agentobs runs FILE --out runs.csv
        from agentobs.cli.main import cli
        with tempfile.TemporaryDirectory() as d:
            cli.main(["runs", path, "--out", os.path.join(d, "runs.csv")], prog_name="agentobs",
                     standalone_mode=False)
    elif what == "analyze":              # the Python API
        from agentobs.analysis import analyze
        t0 = time.perf_counter()
        r = analyze([path])
        out["runs"], out["spans"] = len(r.runs), len(r.spans)
    elif what == "profile":
        out["markdown"] = _profile(path)
    else:
        raise SystemExit(f"unknown measurement {what!r}")
    out["inner_s"] = time.perf_counter() - t0
    out["hwm_mb"] = _hwm_mb()
    return out


AREAS = [("load (agentobs/analysis/_otlp_*, otlp.py, pyarrow)", ["_otlp_", "analysis/otlp/load.py", "pyarrow/"]),
         ("pricing (pricing.py, genai_prices)", ["analysis/derive/pricing.py", "genai_prices/"]),
         ("dialects", ["analysis/spans/dialects/"]),
         ("runs table (runs.py, identity.py, graph.py)", ["analysis/derive/runs.py", "analysis/derive/_identity.py",
                                                          "analysis/spans/graph.py"]),
         ("signatures", ["analysis/assess/signatures.py"]),
         ("percentiles and caps (limits.py, _bootstrap.py)",
          ["analysis/assess/limits.py", "analysis/assess/_bootstrap.py"]),
         ("render (view.py, cli/, rich)", ["analysis/report/view.py", "cli/", "rich/"]),
         ("pandas", ["pandas/"]), ("numpy", ["numpy/"]), ("builtins", ["<built-in", "<method"])]


def _profile(path: str) -> str:
    from .analysis_phases import timed_report
    from .common import by_area, profile, profile_markdown
    timed_report(path)                                   # warm-up
    measured = timed_report(path)["total"] * 1e6
    rows, profiled = profile(lambda: timed_report(path), runs=1, warmup=0)
    return profile_markdown(f"One report on {os.path.basename(path)} (after a warm-up report), by self time",
                            rows, profiled, measured, by_area(rows, AREAS), top=30)


def run_child(what: str, path: str | os.PathLike[str], *, warm: str | os.PathLike[str] | None = None
              ) -> dict[str, Any]:
    """Runs one measurement in a fresh interpreter; returns its result with ``wall_s`` (timed from outside)."""
    with tempfile.TemporaryDirectory() as d:
        result = os.path.join(d, "result.json")
        cmd = [sys.executable, "-m", "bench.analysis_child", what, result, str(path)]
        if warm:
            cmd += ["--warm", str(warm)]
        t0 = time.perf_counter()
        done = subprocess.run(cmd, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - t0
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd[2:])} failed ({done.returncode}): {done.stderr[-2000:]}")
        with open(result, encoding="utf-8") as f:
            out = json.load(f)
    out["wall_s"] = wall
    return out


def main(argv: list[str]) -> int:
    what, result, path = argv[:3]
    warm = argv[argv.index("--warm") + 1] if "--warm" in argv else None
    out = _child(what, path, warm)
    with open(result, "w", encoding="utf-8") as f:
        json.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
