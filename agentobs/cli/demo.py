"""``agentobs demo``: the seeds' scenarios through the kernel, traced, as a table or JSON lines."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..domain.scenarios import SEED000, SEED004, Result
from ..telemetry import Telemetry
from .common import jaeger_link, jaeger_url, report_export, telemetry_options
from .render import console, json_lines, table


def _fmt_effects(effects: list) -> str:
    return "[" + ", ".join("(" + ", ".join(repr(x) for x in e) + ")" for e in effects) + "]"


def run_suite(tel: Telemetry, suite: dict[str, Any]) -> list[tuple[Result, str | None]]:
    out = []
    for run in suite.values():
        obs = tel.observer()
        r = run([obs])
        ctx = obs.trace_context()
        out.append((r, ctx.split("-")[1] if ctx else None))
    return out


def _rows(results: list[tuple[Result, str | None]], link: bool):
    for r, trace_id in results:
        st = r.state
        row = [r.name, st.stop, st.step, st.tool_calls, st.tokens, f"{st.elapsed:.1f}", _fmt_effects(r.desk.effects)]
        if link:
            row.append(jaeger_link(trace_id) or "")
        yield row


@click.command()
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="table: the seed's scenario table; json: one object per scenario.")
@telemetry_options("demo-traces.jsonl")
def demo(fmt: str, telemetry: Telemetry) -> None:
    """Run the seed scenarios (A-H and seed 004's guards) on the simulated support desk."""
    seed000 = run_suite(telemetry, SEED000)
    seed004 = run_suite(telemetry, SEED004)
    lines = report_export(telemetry)
    path: Path | None = telemetry.config.traces_out
    if fmt == "json":
        json_lines({**r.row(), "suite": suite, "trace_id": tid}
                   for suite, rs in (("seed000", seed000), ("seed004", seed004)) for r, tid in rs)
        return
    link = jaeger_url() is not None
    cols = [("scenario", "left"), ("stop", "left"), ("steps", "right"), ("tools", "right"), ("tokens", "right"),
            ("secs", "right"), ("effects", "left")] + ([("jaeger", "left")] if link else [])
    console.print(table("Seed 000 scenarios", cols, _rows(seed000, link)))
    console.print()
    console.print(table("Seed 004 guards and recovery", cols, _rows(seed004, link)))
    console.print()
    console.print(f"Traces (OTLP JSON lines): {path}")
    for line in lines:
        console.print(f"  {line}")
    console.print(f"Inspect a run: agentobs trace <trace_id> {path}")
