"""Runs the benchmarks, prints them, and writes BENCHMARKS.md at the repo root.

    .venv/bin/python -m bench.run                     # everything; writes BENCHMARKS.md
    .venv/bin/python -m bench.run --quick             # CI smoke: fewer repeats; writes nothing unless --out
    .venv/bin/python -m bench.run --only kernel       # one module (repeatable); writes nothing unless --out
    .venv/bin/python -m bench.run --profile           # add cProfile sections for every module
    .venv/bin/python -m bench.run --strict            # exit 1 when a target is missed
    .venv/bin/python -m bench.run --only analysis --update   # rewrite only that module's section and target
                                                      # rows of BENCHMARKS.md, the others kept as they are
    .venv/bin/python -m bench.run --only peers --update      # an optional module (OPTIONAL): only when named
    .venv/bin/python -m bench.run --only dask --update       # the Dask engine on 1M and 10M spans (long)

A benchmark module is listed in ``BENCHMARKS`` and exposes:

    NAME: str                                   # what --only matches
    TITLE: str
    run(quick: bool) -> list[Figure]
    TARGETS: list[Target]                       # name, figure name, "<=" or ">=", target value
    profile_report(quick, figures) -> str       # optional: markdown, added when a target fails or --profile
    summary(figures) -> str                     # optional: markdown, derived from the figures

To add one (analysis load on 1M spans, export throughput through a real collector...), write
the module and append its import path to ``BENCHMARKS`` (or to ``OPTIONAL`` for one that runs only when named
with ``--only``: it installs things or takes long). Name its targets ``"<NAME>: ..."`` so that ``--update``
finds its rows.
"""
from __future__ import annotations

import argparse
import datetime as dt
import importlib
import os
import shlex
import sys
import time
import traceback
from dataclasses import dataclass, field
from types import ModuleType

from .common import REPO_ROOT, Check, Figure, _fmt, machine_info

BENCHMARKS = [
    "bench.kernel_bench",
    "bench.cli_startup",
    "bench.telemetry_bench",
    "bench.sdk_versions",
    "bench.analysis_bench",
    "bench.export_bench",
    "bench.burst_bench",
    "bench.outage_bench",
    "bench.guard_bench",
    "bench.spellings_bench",
    "bench.concurrency_bench",
    "bench.folder_bench",
    "bench.jaeger_bench",
    "bench.redaction_bench",
    "bench.explorer_bench",
    "bench.memory_bench",
    "bench.views_bench",
    "bench.watch_bench",
    "bench.select_bench",
]
# run only when named with --only (their own virtual environments, servers, long runs); never in CI
OPTIONAL = [
    "bench.dask_bench",
    "bench.peers",
]


@dataclass
class Outcome:
    module: ModuleType
    figures: list[Figure] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    missing_targets: list[str] = field(default_factory=list)
    profile: str = ""
    error: str = ""
    seconds: float = 0.0


def _print_outcome(o: Outcome) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:                               # plain text when rich is absent
        print(f"\n== {o.module.TITLE}")
        for f in o.figures:
            print(f"  {f.name:64} {f.value():>12}  {f.spread()}")
        for c in o.checks:
            verdict = "PASS" if c.passed else "FAIL"
            print(f"  {verdict} {c.name}: {_fmt(c.value)} {c.op} {_fmt(c.target)} ({c.margin()})")
        return
    con = Console(width=None if sys.stdout.isatty() else 150)
    t = Table(title=o.module.TITLE, title_justify="left", show_lines=False)
    for col, just in (("figure", "left"), ("median", "right"), ("unit", "left"), ("IQR", "right"),
                      ("min – max", "right"), ("repeats × calls", "right")):
        t.add_column(col, justify=just)   # type: ignore[arg-type]
    for f in o.figures:
        t.add_row(f.name, _fmt(f.median), f.unit, f"{_fmt(f.q1)} – {_fmt(f.q3)}", f"{_fmt(f.min)} – {_fmt(f.max)}",
                  f"{f.repeats} × {f.iterations}" if f.iterations else str(f.repeats))
    con.print(t)
    if o.checks or o.missing_targets:
        tt = Table(title="targets", title_justify="left")
        for col in ("target", "median", "IQR", "goal", "result", "margin"):
            tt.add_column(col)
        for c in o.checks:
            tt.add_row(c.name, _fmt(c.value), f"{_fmt(c.figure.q1)} – {_fmt(c.figure.q3)}", f"{c.op} {_fmt(c.target)}",
                       "[green]PASS[/]" if c.passed else "[red]FAIL[/]", c.margin())
        for m in o.missing_targets:
            tt.add_row(m, "—", "—", "—", "[yellow]NO FIGURE[/]", "")
        con.print(tt)


def _markdown(outcomes: list[Outcome], info: dict[str, str], command: str, started: dt.datetime,
              quick: bool) -> str:
    L = ["# Benchmarks", "",
         f"Produced by `{command}` on {started:%Y-%m-%d %H:%M} UTC"
         + (" (**quick mode**: fewer repeats, smoke only)" if quick else "") + ".", "",
         "Every figure is the median over interleaved repeats measured in one process, with its spread "
         "(interquartile range and min–max over the repeats). Each repeat times N calls after a warm-up, with "
         "`gc` disabled during the repeat and a full collection between repeats. Ratios are medians of per-repeat "
         "ratios. Absolute times on this machine drift from run to run; compare ratios. The harness is "
         "`bench/common.py`.", "",
         "## Machine", "", "| | |", "| --- | --- |"]
    L += [f"| {k} | {v} |" for k, v in info.items()]
    L += ["", "## Targets", "", *TARGETS_HEAD]
    for o in outcomes:
        L += _target_rows(o)
    for o in outcomes:
        L += _section(o)
    return "\n".join(L).rstrip() + "\n"


TARGETS_HEAD = ["| target | median | IQR | goal | result | margin | holds across IQR |",
                "| --- | ---: | ---: | ---: | --- | --- | --- |"]


def _target_rows(o: Outcome) -> list[str]:
    L = []
    for c in o.checks:
        L.append(f"| {c.name} | {_fmt(c.value)} | {_fmt(c.figure.q1)}–{_fmt(c.figure.q3)} | {c.op} {_fmt(c.target)} "
                 f"| {'**PASS**' if c.passed else '**FAIL**'} | {c.margin()} | "
                 f"{'yes' if c.across_iqr() else 'no'} |")
    for m in o.missing_targets:
        L.append(f"| {m} | — | — | — | NO FIGURE | | |")
    if o.error:
        L.append(f"| {o.module.NAME}: benchmark failed | — | — | — | **ERROR** | | |")
    return L


def _section(o: Outcome, provenance: str = "") -> list[str]:
    L = ["", f"## {o.module.TITLE}", ""]
    if provenance:
        L += [provenance, ""]
    L += [f"Module `{o.module.__name__}`, {o.seconds:.1f} s including checks and profiling.", ""]
    doc = (o.module.__doc__ or "").strip()
    if doc:
        L += ["<details><summary>What is measured</summary>", "", "```text", doc, "```", "", "</details>", ""]
    if o.error:
        return [*L, "```text", o.error, "```"]
    L += ["| figure | median | unit | IQR | min – max | repeats × calls | notes |",
          "| --- | ---: | --- | ---: | ---: | ---: | --- |"]
    for f in o.figures:
        notes = f.notes.replace("|", "\\|")
        calls = f" × {f.iterations}" if f.iterations else ""
        L.append(f"| {f.name} | {_fmt(f.median)} | {f.unit} | {_fmt(f.q1)}–{_fmt(f.q3)} | "
                 f"{_fmt(f.min)}–{_fmt(f.max)} | {f.repeats}{calls} | {notes} |")
    summary = getattr(o.module, "summary", None)
    text = summary(o.figures) if summary is not None else ""
    if text:
        L += ["", text]
    if o.profile:
        L += ["", "### Profile", "", o.profile]
    return L


def _owns_row(o: Outcome, line: str) -> bool:
    """Whether a row of the targets table is one of this module's (its current target names, or a name that
    starts with the module's NAME, as earlier versions of its targets did)."""
    if not line.startswith("| "):
        return False
    name = line[2:].split(" | ", 1)[0]
    mine = {t.name for t in getattr(o.module, "TARGETS", [])}
    return name in mine or name.startswith((f"{o.module.NAME}:", f"{o.module.NAME} ("))


def update_markdown(old: str, outcomes: list[Outcome], info: dict[str, str], command: str, started: dt.datetime,
                    quick: bool) -> str:
    """``old`` (a BENCHMARKS.md written by ``_markdown``) with the sections and target rows of ``outcomes``
    replaced (or added), everything else kept. Each replaced section says when and how it was measured."""
    lines = old.rstrip("\n").split("\n")
    load = info.get("load average at start", "")
    stamp = (f"Measured by `{command}` on {started:%Y-%m-%d %H:%M} UTC" + (" (**quick mode**)" if quick else "")
             + (f", load average at start {load}" if load else "") + "; the other sections of this file are older.")
    # the targets table: drop these modules' rows, put the new ones where the first of them was (or at the end)
    start = lines.index("## Targets")
    head = next(i for i in range(start, len(lines)) if lines[i].startswith("| target |"))
    end = head + 2
    while end < len(lines) and lines[end].startswith("| "):
        end += 1
    rows = lines[head + 2:end]
    for o in outcomes:
        at = next((i for i, r in enumerate(rows) if _owns_row(o, r)), len(rows))
        rows = [r for r in rows if not _owns_row(o, r)]
        rows[at:at] = _target_rows(o)
    lines[head + 2:end] = rows
    # the sections
    for o in outcomes:
        new = _section(o, stamp)[1:]              # without its leading blank line
        marker = f"Module `{o.module.__name__}`,"
        heads = [i for i, x in enumerate(lines) if x.startswith("## ")]
        found = None
        for i in heads:
            nxt = next((j for j in heads if j > i), len(lines))
            if any(x.startswith(marker) for x in lines[i:nxt]):
                found = (i, nxt)
                break
        if found:
            i, nxt = found
            lines[i:nxt] = new + ([""] if nxt < len(lines) else [])
        else:
            lines += ["", *new]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer repeats and calls (CI smoke)")
    ap.add_argument("--only", action="append", metavar="NAME", help="run only this module (NAME or module path)")
    ap.add_argument("--profile", action="store_true", help="add each module's profile even when targets pass")
    ap.add_argument("--out", help="markdown output (default: BENCHMARKS.md at the repo root for a full run)")
    ap.add_argument("--no-write", action="store_true", help="do not write the markdown file")
    ap.add_argument("--strict", action="store_true", help="exit with status 1 when a target is missed")
    ap.add_argument("--update", action="store_true",
                    help="with --only: replace those modules' sections and target rows in the markdown file "
                         "(default BENCHMARKS.md), keeping the rest")
    args = ap.parse_args(argv)

    names = BENCHMARKS
    if args.only:
        names = [m for m in BENCHMARKS + OPTIONAL if m.rsplit(".", 1)[-1] in args.only or m in args.only
                 or importlib.import_module(m).NAME in args.only]
        if not names:
            ap.error(f"--only {args.only}: no such benchmark; have "
                     f"{[importlib.import_module(m).NAME for m in BENCHMARKS + OPTIONAL]}")
    if args.update and not args.only:
        ap.error("--update rewrites the sections of the modules named with --only; a full run rewrites the file")
    started = dt.datetime.now(dt.UTC)
    info = machine_info()
    command = " ".join([".venv/bin/python -m bench.run", *map(shlex.quote, sys.argv[1:] if argv is None else argv)])
    outcomes: list[Outcome] = []
    for modname in names:
        mod = importlib.import_module(modname)
        o = Outcome(mod)
        t0 = time.perf_counter()
        print(f"running {mod.NAME}{' (quick)' if args.quick else ''} ...", file=sys.stderr, flush=True)
        try:
            o.figures = mod.run(args.quick)
            for tg in getattr(mod, "TARGETS", []):
                c = tg.check(o.figures)
                if c is None:
                    o.missing_targets.append(tg.name)
                else:
                    o.checks.append(c)
            failed = any(not c.passed for c in o.checks)
            if (args.profile or failed) and hasattr(mod, "profile_report"):
                print(f"profiling {mod.NAME} ...", file=sys.stderr, flush=True)
                o.profile = mod.profile_report(args.quick, o.figures)
        except Exception:  # one broken benchmark must not hide the others
            o.error = traceback.format_exc()
            print(o.error, file=sys.stderr)
        o.seconds = time.perf_counter() - t0
        outcomes.append(o)
        _print_outcome(o)

    out = args.out
    if out is None and ((not args.quick and not args.only) or args.update):
        out = os.path.join(REPO_ROOT, "BENCHMARKS.md")
    if out and not args.no_write:
        if args.update and os.path.exists(out):
            with open(out, encoding="utf-8") as f:
                text = update_markdown(f.read(), outcomes, info, command, started, args.quick)
        else:
            text = _markdown(outcomes, info, command, started, args.quick)
        tmp = f"{out}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, out)
        print(f"wrote {out}", file=sys.stderr)
    missed = any(not c.passed for o in outcomes for c in o.checks) or any(o.error for o in outcomes)
    return 1 if (args.strict and missed) else 0


if __name__ == "__main__":
    sys.exit(main())
