"""The trace files the analysis benchmarks read, generated once into ``bench.common.cache_dir()``.

* ``population(runs)``: a simulated population (``agentobs simulate``: one stand-in model, a handful of token
  counts, every failure pattern), seed 2026;
* ``realistic(spans, dialects)``: ``bench.realistic`` traces (13 models, heavy-tailed tokens, varied tool
  arguments, errors, runs inside request spans; ``dialects="all"`` mixes six span dialects), seed 2026;
* ``prefix(path, spans)``: the first lines of a file holding about that many spans.

Each returns the path and its span count. A file is written under a temporary name and renamed, so an
interrupted generation is never taken for a finished one.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from .common import cache_dir

SEED = 2026


def data_dir() -> Path:
    return Path(cache_dir())


def population(runs: int) -> tuple[Path, int]:
    """The population file with ``runs`` runs (generated once) and its span count."""
    path = data_dir() / f"population-{runs}.jsonl"
    meta = path.with_suffix(".json")
    if not (path.exists() and meta.exists()):
        from agentobs.domain.population import simulate
        from agentobs.telemetry import configure
        tmp = path.with_name(f"{path.name}.{os.getpid()}.partial")      # another process may be writing the same file
        tel = configure(traces_out=tmp)
        simulate(runs, seed=SEED, observers=lambda: [tel.observer()], start_ns=1_780_000_000 * 10**9)
        report = tel.shutdown()
        spans = next(iter(report.exporters.values()))["exported"]
        meta_tmp = meta.with_name(f"{meta.name}.{os.getpid()}.partial")
        meta_tmp.write_text(json.dumps({"runs": runs, "spans": spans}))
        os.replace(tmp, path)
        os.replace(meta_tmp, meta)
    return path, json.loads(meta.read_text())["spans"]


def realistic(spans: int, dialects: str = "genai") -> tuple[Path, int]:
    """``bench.realistic`` traces of at least ``spans`` spans in the GenAI dialect (``genai``) or six (``all``)."""
    from .realistic import generate
    path = data_dir() / f"realistic-{dialects}-seed{SEED}-{spans}.jsonl"
    meta = path.with_name(path.stem + ".meta.json")
    if not (path.exists() and meta.exists()):
        totals = generate(path, spans, seed=SEED, dialects=dialects,
                          manifest=path.with_name(path.stem + "-manifest.json"))
        meta_tmp = meta.with_name(f"{meta.name}.{os.getpid()}.partial")
        meta_tmp.write_text(json.dumps({"spans": totals["spans"], "runs": totals["runs"], "dialects": dialects}))
        os.replace(meta_tmp, meta)
    return path, json.loads(meta.read_text())["spans"]


def prefix(path: Path, spans_wanted: int) -> tuple[Path, int]:
    """The first lines of ``path`` holding about ``spans_wanted`` spans (OTLP JSON lines in our spelling)."""
    out = path.with_name(f"{path.stem}-first-{spans_wanted}.jsonl")
    meta = out.with_suffix(".json")
    if not (out.exists() and meta.exists()):
        n = 0
        tmp = out.with_name(f"{out.name}.{os.getpid()}.partial")
        with open(path, "rb") as src, open(tmp, "wb") as dst:
            for line in src:
                dst.write(line)
                n += line.count(b'"spanId"') - line.count(b'"links":[{"traceId"')
                if n >= spans_wanted:
                    break
        meta_tmp = meta.with_name(f"{meta.name}.{os.getpid()}.partial")
        meta_tmp.write_text(json.dumps({"spans": n}))
        os.replace(tmp, out)
        os.replace(meta_tmp, meta)
    return out, json.loads(meta.read_text())["spans"]
