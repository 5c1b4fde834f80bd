"""Realistic benchmark traces: an OTLP JSON lines file of N spans as varied as real agent traffic.

The simulated population (``agentobs simulate``) is one stand-in model with a handful of token counts:
every cache in the analysis hits. This generator writes what real deployments send instead:

* several agents and services, 13 models across 8 providers (three of them unknown to genai-prices:
  a fine-tune, a self-hosted model, a local one), chosen per agent;
* input tokens from a log-normal start that grows with every step by heavy-tailed tool results (a few
  hundred to a million+ tokens), varied output tokens, cache reads on cached providers, cache writes on
  Anthropic's;
* runs of 2 to 100+ steps; ~25 tools with JSON arguments of varied values; some runs repeating one
  identical call back to back, some repeating it with progress in between;
* model errors (429 and 500, ``error.type``, status ERROR, then a retry; a few runs die of them) and tool
  errors;
* traces with the run under an HTTP ``SERVER`` span (some holding two runs, one agent after another) or
  a job span, or bare;
* our own runs (``agentobs.*`` attributes, stop reasons, step spans; success = stop reason ``done``) and
  other instrumentations' (success = root span status not ERROR).

``dialects="all"`` emits the *same* runs (same ids, tokens, timings) in six span dialects, one per trace:
OpenTelemetry GenAI (current names), the older GenAI names (``gen_ai.system``, ``prompt_tokens`` /
``completion_tokens``), OpenInference, OpenLLMetry/Traceloop, Langfuse and MLflow (attribute names as each
project's specification has them; MLflow's values JSON-encoded, as it exports them). Our own runs are always in
the current GenAI names.

Generation streams (one export batch of 512 spans buffered at a time), is deterministic from the seed,
and writes ``<out>`` and ``<out stem>-manifest.json`` (the ground truth: totals, and one row per run with
its trace, dialect, model, calls, token sums and label) atomically. Token counts in the manifest follow
the GenAI conventions (input tokens include cache reads and writes), whatever the dialect says.

    python -m bench.realistic --spans 100000 --out /tmp/realistic-100k.jsonl [--seed 1] [--dialects all|genai]
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from .dialects import SCOPES, Renderer, attributes
from .plan import DIALECTS, Planner, Run, Trace
from .world import MODELS

BATCH = 512                               # spans per export request (one line), as the SDK's batch processor
MANIFEST_SCHEMA = 1
__all__ = ["DIALECTS", "RUN_COLUMNS", "generate", "main"]


RUN_COLUMNS = ("trace_id", "root_span_id", "run_index", "agent", "service", "dialect", "ours", "model", "provider",
               "model_priced", "model_calls", "failed_model_calls", "tool_calls", "tool_errors", "input_tokens",
               "output_tokens", "cache_read_tokens", "cache_creation_tokens", "max_input_tokens", "success",
               "stop_reason", "container", "runs_in_trace", "repeat", "max_consecutive_identical",
               "max_identical_calls", "tool_arguments_recorded", "conversation_id", "spans")


def _run_row(tr: Trace, run: Run, spans: int) -> list[Any]:
    calls = [c for s in run.steps for c in s.calls]
    ok = [c for c in calls if not c.error]
    tools = [(t.name, t.args) for s in run.steps for t in s.tools]
    longest = cur = 0
    for i, tc in enumerate(tools):
        cur = cur + 1 if i and tc == tools[i - 1] else 1
        longest = max(longest, cur)
    counts: dict[tuple[str, str], int] = {}
    for tc in tools:
        counts[tc] = counts.get(tc, 0) + 1
    return [tr.trace_id, run.root_id, run.index, run.agent.name, run.agent.service,
            "genai" if run.ours else tr.dialect, run.ours, run.model.name, run.model.provider, run.model.priced,
            len(calls), len(calls) - len(ok), len(tools), sum(1 for s in run.steps for t in s.tools if t.error),
            sum(c.tin for c in ok), sum(c.tout for c in ok), sum(c.cread for c in ok), sum(c.cwrite for c in ok),
            max((c.tin for c in ok), default=0), run.success, run.stop_reason, tr.container, len(tr.runs), run.repeat,
            longest, max(counts.values(), default=0), _arguments_seen(tr, run), run.conversation, spans]


def _arguments_seen(tr: Trace, run: Run) -> bool:
    """Whether the tool spans carry the call arguments (or our digest of them): repeats are derivable."""
    if run.ours:
        return True
    return {"genai": run.capture, "genai_old": False}.get(tr.dialect, True)


def generate(out: str | os.PathLike[str], spans: int, *, seed: int = 1, dialects: str = "all",
             manifest: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Writes at least ``spans`` spans (whole traces) to ``out`` and the manifest; returns the manifest's totals."""
    if dialects not in ("all", "genai"):
        raise ValueError(f"dialects must be 'all' or 'genai', not {dialects!r}")
    if spans < 1:
        raise ValueError("spans must be at least 1")
    out = Path(out)
    man = Path(manifest) if manifest else out.with_name(out.name.split(".")[0] + "-manifest.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    planner = Planner(seed, dialects)
    renderer = Renderer()
    totals: dict[str, Any] = {"spans": 0, "traces": 0, "runs": 0, "model_calls": 0, "failed_model_calls": 0,
                              "tool_calls": 0, "tool_errors": 0, "input_tokens": 0, "output_tokens": 0,
                              "cache_read_tokens": 0, "cache_creation_tokens": 0, "successful_runs": 0,
                              "http_traces": 0, "job_traces": 0, "two_run_traces": 0, "lines": 0}
    by_dialect: dict[str, int] = {}
    by_model: dict[str, int] = {}
    # entered below, renamed into place at the end
    tmp_out = tempfile.NamedTemporaryFile("w", dir=out.parent, prefix=out.name, suffix=".partial",  # noqa: SIM115
                                          delete=False, encoding="utf-8")
    tmp_rows = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115 - closed in finally
    buffer: dict[str, dict[str, list[dict[str, Any]]]] = {}
    buffered = 0
    try:
        with tmp_out:
            while totals["spans"] < spans:
                tr = planner.trace()
                per_run = {r.root_id: 0 for r in tr.runs}
                run_of: dict[str, str] = {}
                for dialect, container, s in renderer.trace(tr):
                    service = tr.runs[0].agent.service
                    scope = SCOPES[dialect] if dialect else "acme.http" if container == "http" else "acme.jobs"
                    buffer.setdefault(service, {}).setdefault(scope, []).append(s)
                    buffered += 1
                    totals["spans"] += 1
                    if not container:
                        rid = s["spanId"] if s["spanId"] in per_run else run_of[s["parentSpanId"]]
                        run_of[s["spanId"]] = rid
                        per_run[rid] += 1
                    if buffered >= BATCH:
                        _flush(tmp_out, buffer)
                        totals["lines"] += 1
                        buffer, buffered = {}, 0
                totals["traces"] += 1
                totals["http_traces"] += tr.container == "http"
                totals["job_traces"] += tr.container == "job"
                totals["two_run_traces"] += len(tr.runs) > 1
                for run in tr.runs:
                    row = _run_row(tr, run, per_run[run.root_id])
                    r = dict(zip(RUN_COLUMNS, row, strict=True))
                    totals["runs"] += 1
                    totals["successful_runs"] += bool(r["success"])
                    for k in ("model_calls", "failed_model_calls", "tool_calls", "tool_errors", "input_tokens",
                              "output_tokens", "cache_read_tokens", "cache_creation_tokens"):
                        totals[k] += r[k]
                    by_dialect[r["dialect"]] = by_dialect.get(r["dialect"], 0) + 1
                    by_model[r["model"]] = by_model.get(r["model"], 0) + r["model_calls"]
                    tmp_rows.write(json.dumps(row, separators=(",", ":")) + "\n")
            if buffered:
                _flush(tmp_out, buffer)
                totals["lines"] += 1
        head = {"schema_version": MANIFEST_SCHEMA, "generator": "bench.realistic", "seed": seed,
                "dialects": dialects, "traces_file": out.name, "totals": totals, "runs_by_dialect": by_dialect,
                "model_calls_by_model": by_model,
                "models": {m.name: {"provider": m.provider, "priced_by_genai_prices": m.priced} for m in
                           MODELS.values()},
                "token_semantics": "input_tokens include cache_read and cache_creation tokens (GenAI conventions)",
                "run_columns": list(RUN_COLUMNS)}
        tmp_man = man.with_name(man.name + ".partial")
        with open(tmp_man, "w", encoding="utf-8") as f:
            text = json.dumps(head, indent=1)
            f.write(text[:-2] + ',\n "run_rows": [\n')
            tmp_rows.seek(0)
            for i, line in enumerate(tmp_rows):
                f.write(("  " if i == 0 else ",\n  ") + line.rstrip("\n"))
            f.write("\n ]\n}\n")
        os.replace(tmp_out.name, out)
        os.replace(tmp_man, man)
    except BaseException:
        Path(tmp_out.name).unlink(missing_ok=True)
        raise
    finally:
        tmp_rows.close()
    return {**totals, "manifest": str(man)}


def _flush(f: Any, buffer: dict[str, dict[str, list[dict[str, Any]]]]) -> None:
    req = {"resourceSpans": [
        {"resource": {"attributes": attributes({"service.name": service, "service.version": "2026.1",
                                            "deployment.environment.name": "prod",
                                            "telemetry.sdk.language": "python",
                                            "telemetry.sdk.name": "opentelemetry"})},
         "scopeSpans": [{"scope": {"name": scope}, "spans": spans} for scope, spans in scopes.items()]}
        for service, scopes in buffer.items()]}
    f.write(json.dumps(req, separators=(",", ":")))
    f.write("\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.realistic", description=__doc__.split("\n\n")[0])
    ap.add_argument("--spans", type=int, required=True, help="at least this many spans (whole traces)")
    ap.add_argument("--out", required=True, help="OTLP JSON lines file to write (replaced)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dialects", choices=("all", "genai"), default="all")
    ap.add_argument("--manifest", help="default: <out stem>-manifest.json next to the file")
    a = ap.parse_args(argv)
    if a.spans < 1:
        ap.error("--spans must be at least 1")
    t0 = time.perf_counter()
    totals = generate(a.out, a.spans, seed=a.seed, dialects=a.dialects, manifest=a.manifest)
    dt = time.perf_counter() - t0
    size = os.path.getsize(a.out)
    print(f"{totals['spans']:,} spans, {totals['runs']:,} runs, {totals['traces']:,} traces -> {a.out} "
          f"({size / 1e6:.1f} MB, {size / totals['spans']:.0f} B/span) in {dt:.1f} s; "
          f"ground truth: {totals['manifest']}")
    return 0

