"""The telemetry benchmark's core figures under two OpenTelemetry SDK versions: ours and the last one before 1.45.

opentelemetry-sdk 1.45.0 made every metric recording validate and copy its attributes (``Measurement``) and hash
them by type (extended attribute values, #5266). That more than doubles the cost of a histogram recording, and the
contract's 28 recordings per run of scenario A weigh on the telemetry targets, which are measured against the SDK
making the same spans and recordings. This module measures how much, instead of asserting it.

Each version runs in its own virtual environment (the installed one, and 1.44.0 in a cached venv under
``$AGENTOBS_BENCH_DATA``, by default ``~/.cache/agentobs/bench``, built on first use from PyPI with this repo's
dependencies). A child process per version runs ``bench.telemetry_bench``'s contenders (a) instrumented,
(b) uninstrumented, (c) SDK spans alone, (c') SDK spans and metrics alone, the control "(b) then (c')" (no
integration, run together) and Pydantic AI instrumented, interleaved as usual; ratios are per repeat inside one
child. The children alternate (A, B, A, B...) so drift hits both versions alike; figures comparing the two
versions pair the repeats of consecutive children.

    python -m bench.sdk_versions [--quick]
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tomllib
from importlib import metadata

from .common import REPO_ROOT, Figure, Plan, cache_dir, ratio, summarize, time_interleaved, us

NAME = "sdk_versions"
TITLE = "Telemetry overhead by OpenTelemetry SDK version (1.44 vs the installed one, a venv each)"
TARGETS: list = []

OLD = "1.44.0"
OTEL_PINNED = ("opentelemetry-api", "opentelemetry-sdk", "opentelemetry-exporter-otlp-proto-grpc",
               "opentelemetry-exporter-otlp-proto-http", "opentelemetry-exporter-otlp-proto-common",
               "opentelemetry-proto")
CONTENDERS = ("instrumented", "uninstrumented", "sdk spans", "sdk spans+metrics", "(b) then (c')",
              "pai instrumented")


# -- the child: one SDK version, one process -----------------------------------------------------


def child(quick: bool) -> dict:
    from . import telemetry_bench as tb
    s = tb.setup(with_pydantic_ai=True, ablation=True)
    plan = Plan(repeats=5, iterations=30, warmup=30) if quick else Plan(repeats=9, iterations=150, warmup=150)
    pai_iter = 4 if quick else 15
    contenders = {n: s.contenders[n] for n in CONTENDERS}
    t = time_interleaved(contenders, plan, per_call={"pai instrumented": pai_iter}, between=s.pipe.flush)
    s.loop.close()
    s.pipe.shutdown()
    return {"sdk": metadata.version("opentelemetry-sdk"), "iterations": plan.iterations, "samples": t}


# -- the parent: venvs, alternation, figures -----------------------------------------------------


def _requirements() -> list[str]:
    with open(os.path.join(REPO_ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    return list(project["dependencies"]) + list(project["optional-dependencies"]["dev"])


def venv_python(version: str) -> str:
    """The interpreter of a venv with this repo's dependencies and the OpenTelemetry packages at ``version``."""
    reqs = _requirements()
    pins = [f"{p}=={version}" for p in OTEL_PINNED]
    key = hashlib.sha256("\n".join(reqs + pins).encode()).hexdigest()[:12]
    root = os.path.join(cache_dir(), f"otel-{version}-{key}")
    python = os.path.join(root, "bin", "python")
    marker = os.path.join(root, ".installed")
    if not os.path.exists(marker):
        print(f"building {root} (first use: pip install from PyPI)", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", "--clear", root], check=True)
        constraints = os.path.join(root, "constraints.txt")
        with open(constraints, "w") as f:
            f.write("\n".join(pins) + "\n")
        subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "-c", constraints,
                        *reqs], check=True)
        open(marker, "w").close()
    return python


def _run_child(python: str, quick: bool) -> dict:
    env = {**os.environ, "PYTHONPATH": REPO_ROOT}
    out = subprocess.run([python, "-m", "bench.sdk_versions", "--child"] + (["--quick"] if quick else []),
                         cwd=REPO_ROOT, env=env, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(quick: bool = False) -> list[Figure]:
    current = metadata.version("opentelemetry-sdk")
    if current == OLD:
        raise RuntimeError(f"the installed SDK is already {OLD}: nothing to compare")
    pythons = {OLD: venv_python(OLD), current: sys.executable}
    rounds = 1 if quick else 3
    samples: dict[str, dict[str, list[float]]] = {v: {n: [] for n in CONTENDERS} for v in pythons}
    iterations = 0
    for r in range(rounds):
        for v in (list(pythons) if r % 2 == 0 else list(pythons)[::-1]):
            res = _run_child(pythons[v], quick)
            if res["sdk"] != v:
                raise RuntimeError(f"the child meant for SDK {v} runs {res['sdk']}")
            iterations = res["iterations"]
            for n in CONTENDERS:
                samples[v][n] += res["samples"][n]
    figs: list[Figure] = []
    g = dict(group=NAME)
    n = dict(iterations=iterations, group=NAME)
    metric_cost = {}
    for v, t in samples.items():
        base = [b + c for b, c in zip(t["uninstrumented"], t["sdk spans"], strict=True)]
        base_m = [b + c for b, c in zip(t["uninstrumented"], t["sdk spans+metrics"], strict=True)]
        metric_cost[v] = [m - c for m, c in zip(t["sdk spans+metrics"], t["sdk spans"], strict=True)]
        figs += [
            summarize(f"SDK {v}: (a) ours instrumented, per run", us(t["instrumented"]), "µs", **n),
            summarize(f"SDK {v}: (c) SDK alone, 14 spans", us(t["sdk spans"]), "µs", **n),
            summarize(f"SDK {v}: (c') − (c), SDK alone, 28 metric recordings", us(metric_cost[v]), "µs", **n),
            ratio(f"SDK {v}: instrumented / (uninstrumented + SDK spans and metrics alone)", t["instrumented"], base_m,
                  notes="the telemetry target (<= 1.3)", **g),
            ratio(f"SDK {v}: instrumented / (uninstrumented + SDK spans alone)", t["instrumented"], base, **g),
            ratio(f"SDK {v}: floor ((b) + (c')) / ((b) + (c))", base_m, base, **g),
            ratio(f"SDK {v}: control, no integration: ((b) then (c')) / ((b) + (c))", t["(b) then (c')"], base,
                  notes="the kernel's run, then the SDK alone making the same spans and recordings, in one call",
                  **g),
            summarize(f"SDK {v}: ours beyond the floor, (a) − (b) − (c')",
                      us([a - bm for a, bm in zip(t["instrumented"], base_m, strict=True)]), "µs", **n),
            ratio(f"SDK {v}: Pydantic AI instrumented / ours instrumented", t["pai instrumented"],
                  t["instrumented"], **g),
            ratio(f"SDK {v}: Pydantic AI instrumented / control, no integration", t["pai instrumented"],
                  t["(b) then (c')"], **g),
        ]
    figs.append(ratio(f"28 metric recordings: SDK {current} / SDK {OLD}", metric_cost[current], metric_cost[OLD],
                      notes="repeats paired across the alternating child processes", **g))
    figs[0].notes = f"{rounds} round(s) alternating the two venvs; OTel packages pinned to {OLD} in the other venv"
    return figs


def summary(figures: list[Figure]) -> str:
    m = {f.name: f for f in figures}
    versions = sorted({f.name.split(":")[0][4:] for f in figures if f.name.startswith("SDK ")})
    rows = [("(a) ours instrumented, µs", "(a) ours instrumented, per run"),
            ("28 metric recordings, SDK alone, µs", "(c') − (c), SDK alone, 28 metric recordings"),
            ("target ratio (≤ 1.3)", "instrumented / (uninstrumented + SDK spans and metrics alone)"),
            ("against the SDK making the spans only", "instrumented / (uninstrumented + SDK spans alone)"),
            ("floor of that ratio", "floor ((b) + (c')) / ((b) + (c))"),
            ("that ratio with nothing of ours (control)", "control, no integration: ((b) then (c')) / ((b) + (c))"),
            ("ours beyond the floor, µs", "ours beyond the floor, (a) − (b) − (c')"),
            ("Pydantic AI instrumented / ours (≥ 10)", "Pydantic AI instrumented / ours instrumented"),
            ("Pydantic AI / nothing of ours (control)", "Pydantic AI instrumented / control, no integration")]
    lines = ["| | " + " | ".join(f"SDK {v}" for v in versions) + " |", "| --- |" + " ---: |" * len(versions)]
    for label, key in rows:
        cells = [m.get(f"SDK {v}: {key}") for v in versions]
        lines.append(f"| {label} | " + " | ".join(f.value() if f else "" for f in cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if "--child" in sys.argv:
        print(json.dumps(child("--quick" in sys.argv)))
    else:
        figs = run("--quick" in sys.argv)
        for f in figs:
            print(f"{f.name:66} {f.value():>12}   {f.spread()}")
        print(summary(figs))
