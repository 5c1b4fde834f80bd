"""One trace as a tree: ``agentobs trace`` on a 200,000-span trace against ``agentobs report`` on the same file.

Two files of one trace each (OTLP JSON lines, GenAI dialect), generated once into the benchmark cache:

* **wide**: an agent run of 200,000 spans: model and tool calls one after the other, a sub-agent every 50 calls
  with calls of its own (depth 3);
* **chain**: 200,000 spans each the parent of the next (a parent chain 199,999 deep: model and tool calls
  alternating). Walking it one level at a time made the old view quadratic: 372 s and 1.8 GB.

Contenders, each a fresh process of the command line (wall time from outside: start-up, imports, loading, the
work, exit; peak memory as VmHWM inside), standard output to /dev/null (piped: the tree at its natural width),
repeats interleaved: ``agentobs report FILE``, ``agentobs trace ID FILE``, ``agentobs trace ID FILE`` at 80 columns
(``COLUMNS=80``: the layout that moves secondary columns under each row) and ``agentobs trace ID FILE --format
json`` (the tree as nested objects).

Targets: ``trace`` within 2 x the time of ``report`` on the same file, for both files (the trace loads the same
file, derives its runs and walks its tree once; the report derives the runs and summarises them).

    python -m bench.views_bench [--quick]
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

from .common import REPO_ROOT, Figure, Target, cache_dir, module_main, ratio, summarize

NAME = "views"
TITLE = "One trace as a tree: agentobs trace on a 200,000-span trace vs agentobs report on the same file"
SPANS = 200_000
TRACE_ID = "7a" * 16
SHAPES = ("wide", "chain")
FULL_REPEATS, QUICK_REPEATS = 5, 2

TARGETS = [
    Target("views: trace / report, a 200,000-span trace (wide)", "wide: trace / report", "<=", 2.0),
    Target("views: trace / report, a 200,000-deep parent chain", "chain: trace / report", "<=", 2.0),
]

CONTENDERS: dict[str, tuple[list[str], dict[str, str]]] = {
    "report": (["report", "{file}"], {}),
    "trace": (["trace", TRACE_ID, "{file}"], {}),
    "trace at 80 columns": (["trace", TRACE_ID, "{file}"], {"COLUMNS": "80"}),
    "trace --format json": (["trace", TRACE_ID, "{file}", "--format", "json"], {}),
}


# -- the files ------------------------------------------------------------------------------------------------------

def _span(sid: int, parent: int | None, name: str, start: int, end: int, attrs: dict[str, Any],
          error: bool = False) -> dict[str, Any]:
    span: dict[str, Any] = {
        "traceId": TRACE_ID, "spanId": f"{sid:016x}", "name": name, "kind": 1,
        "startTimeUnixNano": str(start), "endTimeUnixNano": str(end),
        "attributes": [{"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}}
                       for k, v in attrs.items()]}
    if parent is not None:
        span["parentSpanId"] = f"{parent:016x}"
    if error:
        span["status"] = {"code": 2, "message": "tool failed"}
    return span


def _chat(i: int) -> tuple[str, dict[str, Any]]:
    return "chat gpt-4o-mini", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini",
                                "gen_ai.usage.input_tokens": 800 + 37 * (i % 60), "gen_ai.usage.output_tokens": 40}


def _tool(i: int) -> tuple[str, dict[str, Any]]:
    return "execute_tool lookup", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup",
                                   "gen_ai.tool.call.id": f"call_{i}"}


def _wide(n: int, t0: int) -> list[dict[str, Any]]:
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"}
    spans = [_span(1, None, "invoke_agent planner", t0, t0 + n * 1_000_000, agent)]
    sub, sid = None, 1
    while len(spans) < n:
        sid += 1
        k = len(spans)
        start = t0 + k * 1_000_000
        if k % 50 == 0:               # a sub-agent: the next calls are its own
            sub = sid
            spans.append(_span(sid, 1, "invoke_agent researcher", start, start + 20_000_000,
                               {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "researcher"}))
            continue
        parent = sub if sub is not None and k % 50 < 20 else 1
        name, attrs = _chat(k) if k % 2 else _tool(k)
        spans.append(_span(sid, parent, name, start, start + 900_000, attrs, error=k % 997 == 0))
    return spans


def _chain(n: int, t0: int) -> list[dict[str, Any]]:
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"}
    spans = [_span(1, None, "invoke_agent planner", t0, t0 + n * 1_000_000, agent)]
    for k in range(1, n):
        name, attrs = _chat(k) if k % 2 else _tool(k)
        spans.append(_span(k + 1, k, name, t0 + k * 1_000, t0 + n * 1_000_000 - k * 1_000, attrs))
    return spans


def trace_file(shape: str, n: int = SPANS) -> Path:
    """The file of one trace of ``n`` spans of ``shape`` (``wide`` or ``chain``), written once (under a temporary
    name, then renamed)."""
    path = Path(cache_dir()) / f"views-{shape}-{n}.jsonl"
    if not path.exists():
        spans = (_wide if shape == "wide" else _chain)(n, 1_780_000_000 * 10**9)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.partial")
        with open(tmp, "w", encoding="utf-8") as f:
            for i in range(0, len(spans), 2000):
                doc = {"resourceSpans": [{"resource": {"attributes": [
                    {"key": "service.name", "value": {"stringValue": "bench"}}]},
                    "scopeSpans": [{"scope": {"name": "bench"}, "spans": spans[i:i + 2000]}]}]}
                f.write(json.dumps(doc, separators=(",", ":")) + "\n")
        os.replace(tmp, path)
    return path


# -- one measurement in a fresh process -----------------------------------------------------------------------------

def _child(result: str, args: list[str]) -> None:
    """In the child: the command line on ``args``, standard output to /dev/null; VmHWM to ``result``."""
    from agentobs.cli.main import cli
    with open(os.devnull, "w") as sink:
        sys.stdout = sink
        try:
            cli.main(args, prog_name="agentobs", standalone_mode=False)
        finally:
            sys.stdout = sys.__stdout__
    with open("/proc/self/status") as f:
        hwm = int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1)) / 1024   # type: ignore[union-attr]
    with open(result, "w", encoding="utf-8") as f:
        json.dump({"hwm_mb": hwm}, f)


def run_cli(args: list[str], env: dict[str, str]) -> dict[str, float]:
    """``agentobs ARGS`` in a fresh interpreter: ``wall_s`` (from outside) and ``hwm_mb``."""
    with tempfile.TemporaryDirectory() as d:
        result = os.path.join(d, "result.json")
        cmd = [sys.executable, "-m", "bench.views_bench", "--child", result, *args]
        t0 = time.perf_counter()
        done = subprocess.run(cmd, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, **env}, timeout=3600)
        wall = time.perf_counter() - t0
        if done.returncode != 0:
            raise RuntimeError(f"agentobs {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
        with open(result, encoding="utf-8") as f:
            out = json.load(f)
    out["wall_s"] = wall
    return out


def _side_by_side(shape: str, repeats: int) -> list[Figure]:
    path = trace_file(shape)
    names = list(CONTENDERS)
    res: dict[str, list[dict[str, float]]] = {n: [] for n in names}
    for r in range(repeats):
        for name in names[r % len(names):] + names[:r % len(names)]:
            args, env = CONTENDERS[name]
            res[name].append(run_cli([a.replace("{file}", str(path)) for a in args], env))
    mb = path.stat().st_size / 2**20
    figs = [summarize(f"{shape}: agentobs {name} ({SPANS:,} spans, {mb:,.0f} MB)", [x["wall_s"] for x in res[name]],
                      "s", iterations=1, group=NAME) for name in names]
    figs += [summarize(f"{shape}: peak memory of agentobs {name}", [x["hwm_mb"] for x in res[name]], "MB",
                       group=NAME) for name in names]
    wall = {n: [x["wall_s"] for x in res[n]] for n in names}
    figs += [ratio(f"{shape}: trace / report", wall["trace"], wall["report"], group=NAME),
             ratio(f"{shape}: trace at 80 columns / report", wall["trace at 80 columns"], wall["report"], group=NAME),
             ratio(f"{shape}: trace --format json / report", wall["trace --format json"], wall["report"], group=NAME),
             ratio(f"{shape}: peak memory, trace / report", [x["hwm_mb"] for x in res["trace"]],
                   [x["hwm_mb"] for x in res["report"]], group=NAME)]
    return figs


def run(quick: bool = False) -> list[Figure]:
    repeats = QUICK_REPEATS if quick else FULL_REPEATS
    return [f for shape in SHAPES for f in _side_by_side(shape, repeats)]


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2], sys.argv[3:])
    else:
        module_main(run)
