"""One measurement of ``select_bench`` in a fresh process, so that its peak memory (VmHWM) is its own.

    python -m bench.select_child WHAT RESULT_JSON FILE [SINCE UNTIL]

WHAT is ``report`` (the CLI: ``agentobs report FILE [--since SINCE --until UNTIL] --out <tmp>/report.json``) or
``afterwards`` (the same window without the push-down: every span loaded, every run built, the runs table filtered,
then the report: ``analyze_spans`` on ``load_sources`` with the selection). RESULT_JSON gets ``hwm_mb``,
``inner_s`` (the work, imports excluded) and ``runs`` (the runs of the report).
"""
from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import time
from typing import Any


def _hwm_mb() -> float:
    with open("/proc/self/status") as f:
        return int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1)) / 1024   # type: ignore[union-attr]


def _child(what: str, path: str, window: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if what == "report":
        from agentobs.cli.main import cli
        args = ["--since", window[0], "--until", window[1]] if window else []
        with tempfile.TemporaryDirectory() as d:
            target = os.path.join(d, "report.json")
            t0 = time.perf_counter()
            cli.main(["report", path, *args, "--out", target], prog_name="agentobs", standalone_mode=False)
            out["inner_s"] = time.perf_counter() - t0
            with open(target, encoding="utf-8") as f:
                out["runs"] = json.load(f)["overview"]["runs"]
    elif what == "afterwards":
        from agentobs.analysis.load.sources import load_sources
        from agentobs.analysis.report.local import analyze_spans
        from agentobs.analysis.report.summary import Options
        from agentobs.analysis.select.selection import Selection
        t0 = time.perf_counter()
        sel = Selection.resolve(since=window[0], until=window[1])
        r = analyze_spans(load_sources([path]), Options(selection=sel), [path])
        r.to_dict()
        out["inner_s"] = time.perf_counter() - t0
        out["runs"] = len(r.runs)
    else:
        raise SystemExit(f"unknown measurement {what!r}")
    out["hwm_mb"] = _hwm_mb()
    return out


def main(argv: list[str]) -> int:
    what, result, path, *window = argv
    out = _child(what, path, window)
    with open(result, "w", encoding="utf-8") as f:
        json.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
