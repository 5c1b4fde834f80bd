"""``agentobs simulate``: a population of support tasks through the kernel, traced like the demo."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from ..domain.population import PATTERNS, SIGNATURES, Record, simulate, summary
from ..telemetry import OTelObserver, Telemetry
from .common import report_export, telemetry_options
from .render import errors, on_terminal, say, table, write_text


def _trace_id(observers: list[Any]) -> str | None:
    return next((o.trace_id() for o in observers if isinstance(o, OTelObserver) and o.trace_id()), None)


def run_population(tel: Telemetry, runs: int, seed: int, show_progress: bool = True) -> list[Record]:
    with Progress(TextColumn("simulating"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=errors, disable=not (show_progress and on_terminal(errors)), transient=True) as bar:
        task = bar.add_task("runs", total=runs)
        return simulate(runs, seed, observers=lambda: [tel.observer()], trace_id_of=_trace_id,
                        progress=lambda n: bar.advance(task, n))


def write_manifest(path: Path, records: list[Record], seed: int, traces: Path | None) -> None:
    body = {"schema_version": 1, "seed": seed, "traces": str(traces) if traces else None,
            "summary": summary(records), "runs": [r.to_dict() for r in records]}
    write_text(path, json.dumps(body, indent=1), mode=0o600)


def print_summary(records: list[Record]) -> None:
    s = summary(records)
    say(f"{s['runs']} runs, {s['successful']} successful (done and completed)")
    pat = Counter(r.pattern for r in records)
    stops = Counter(r.stop for r in records)
    table("Injected patterns", [("pattern", "left"), ("runs", "right")], pat.most_common())
    table("Stop reasons", [("stop", "left"), ("runs", "right")], stops.most_common())
    table("Failure signatures the simulation recorded", [("signature", "left"), ("runs", "right")],
          [(k, v) for k, v in s["signatures"].items()])


@click.command("simulate")
@click.option("--runs", type=click.IntRange(1, 10_000_000), default=1000, show_default=True)
@click.option("--seed", type=int, default=7, show_default=True)
@click.option("--manifest", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where to write what the simulation injected and recorded "
                   "(default: next to the traces, *-manifest.json).")
@telemetry_options("simulate-traces.jsonl", other_outputs=("manifest",))
def simulate_cmd(runs: int, seed: int, manifest: Path | None, telemetry: Telemetry) -> None:
    """Run a population of support tasks with stochastic stand-in models and every seed failure pattern."""
    records = run_population(telemetry, runs, seed)
    lines = report_export(telemetry)
    out = telemetry.config.traces_out
    manifest = manifest or (out.with_name(out.stem.replace("-traces", "") + "-manifest.json") if out else
                            Path("agentobs-out/simulate-manifest.json"))
    write_manifest(manifest, records, seed, out)
    print_summary(records)
    say(f"Traces (OTLP JSON lines): {out}")
    for line in lines:
        say(f"  {line}")
    say(f"Ground truth: {manifest}")
    say(f"Next: agentobs report {out}")


__all__ = ["simulate_cmd", "run_population", "write_manifest", "PATTERNS", "SIGNATURES"]
