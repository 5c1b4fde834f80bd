"""``agentobs demo``: the main job, on local files and no servers.

1. The seeds' scenarios (A-H, seed 004's guards and recovery) through the kernel, traced.
2. A simulated population of support tasks, traced.
3. The analysis of that population: failure taxonomy and recommended caps, and the HTML report.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from ..analysis.explorer import html as html_report
from ..analysis.report.engine import analyze
from ..analysis.report.summary import Options
from ..domain.scenarios import SEED000, SEED004, Result
from ..telemetry import Telemetry, configure
from .analysis_cmds import print_caps
from .common import DEFAULT_OUT, jaeger_link, jaeger_url
from .outputs import refuse_overlap
from .render import blank, json_lines, say, table, write_text
from .safe_text import http_url
from .simulate import print_summary, run_population, write_manifest

# the files the demo writes into OUT_DIR after the scenarios' traces (name: what it is)
OUTPUTS = {"simulate-traces.jsonl": "population's traces", "simulate-manifest.json": "simulation manifest",
           "report.html": "HTML report"}


def _fmt_effects(effects: list[tuple[Any, ...]]) -> str:
    return "[" + ", ".join("(" + ", ".join(repr(x) for x in e) + ")" for e in effects) + "]"


def run_suite(tel: Telemetry, suite: dict[str, Any]) -> list[tuple[Result, str | None]]:
    out = []
    for run in suite.values():
        obs = tel.observer()
        r = run([obs])
        out.append((r, obs.trace_id()))
    return out


def _rows(results: list[tuple[Result, str | None]], link: bool) -> Iterator[list[Any]]:
    for r, trace_id in results:
        st = r.state
        row = [r.name, st.stop, st.step, st.tool_calls, st.tokens, f"{st.elapsed:.1f}", _fmt_effects(r.desk.effects)]
        if link:
            row.append(jaeger_link(trace_id) or "")
        yield row


def _telemetry(path: Path, otlp_endpoint: str | None, service: str | None) -> Telemetry:
    return configure(traces_out=path, otlp_endpoint=otlp_endpoint, service_name=service, replace_traces=True)


@click.command()
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="table: the whole demo; json: one object per seed scenario, nothing else.")
@click.option("--runs", type=click.IntRange(0, 1_000_000), default=2000, show_default=True,
              help="Size of the simulated population (0: scenarios only).")
@click.option("--seed", type=int, default=7, show_default=True)
@click.option("--out-dir", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_OUT, show_default=True)
@click.option("--traces-out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="OTLP JSON lines file for the scenarios' traces (default OUT_DIR/demo-traces.jsonl).")
@click.option("--otlp-endpoint", default=None, metavar="URL",
              help="Also export over OTLP (default: OTEL_EXPORTER_OTLP_ENDPOINT when set).")
@click.option("--service-name", default=None, help="service.name (default: OTEL_SERVICE_NAME or agentobs).")
def demo(*, fmt: str, runs: int, seed: int, out_dir: Path, traces_out: Path | None, otlp_endpoint: str | None,
         service_name: str | None) -> None:
    """The main job: seed scenarios, a simulated population, its failure taxonomy and caps, an HTML report."""
    scen_path = traces_out or out_dir / "demo-traces.jsonl"
    pop_path, manifest_path, html_path = (out_dir / name for name in OUTPUTS)
    if runs:
        refuse_overlap("traces-out", scen_path,
                       [(f"where the demo writes its {what}", out_dir / name) for name, what in OUTPUTS.items()])
    tel = _telemetry(scen_path, otlp_endpoint, service_name)
    seed000 = run_suite(tel, SEED000)
    seed004 = run_suite(tel, SEED004)
    export_lines = tel.shutdown().lines()
    if fmt == "json":
        json_lines({**r.row(), "suite": suite, "trace_id": tid}
                   for suite, rs in (("seed000", seed000), ("seed004", seed004)) for r, tid in rs)
        return
    link = http_url(jaeger_url()) is not None
    cols = [("scenario", "left"), ("stop", "left"), ("steps", "right"), ("tools", "right"), ("tokens", "right"),
            ("secs", "right"), ("effects", "left")] + ([("jaeger", "left")] if link else [])
    table("Seed 000 scenarios", cols, _rows(seed000, link))
    blank()
    table("Seed 004 guards and recovery", cols, _rows(seed004, link))
    say(f"Scenario traces: {scen_path} ({'; '.join(export_lines)})")
    if runs == 0:
        return
    blank()
    ptel = _telemetry(pop_path, otlp_endpoint, service_name)
    records = run_population(ptel, runs, seed)
    pop_lines = ptel.shutdown().lines()
    write_manifest(manifest_path, records, seed, pop_path)
    print_summary(records)
    blank()
    report = analyze([str(pop_path)], Options(jaeger_url=http_url(jaeger_url())))
    rows = [[s.name, s.runs, f"{100 * s.share:.1f}%", s.failed, s.control] for s in report.signatures]
    table("Failure taxonomy found in the traces", [("signature", "left"), ("runs", "right"), ("share", "right"),
                                                   ("failed", "right"), ("control", "left")], rows)
    print_caps(report)
    write_text(html_path, html_report.render(report))
    blank()
    say(f"Population traces: {pop_path} ({'; '.join(pop_lines)})")
    say(f"HTML report:       {html_path} (the run explorer, offline)")
    say(f"Serve the explorer: agentobs view {pop_path}")
    say(f"Inspect a run:     agentobs trace <trace_id> {pop_path}")
    say(f"Full report:       agentobs report {pop_path}")
    say(f"See the same runs in Jaeger: {BACKEND_HINT}")


# where the demo's runs go to be seen in Jaeger: the two ways to start the backend, and their OTLP endpoints
BACKEND_HINT = ("start the backend, GF_ADMIN_PASSWORD='<choose one>' docker compose up -d (OTLP/HTTP on "
                "http://127.0.0.1:4318), or without Docker make stack-up (on http://127.0.0.1:14318); run the demo "
                "again with OTEL_EXPORTER_OTLP_ENDPOINT set to that endpoint, and open http://127.0.0.1:16686 (README: "
                "'The real backend').")
