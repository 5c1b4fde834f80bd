"""The Dask engine against the local engine, and on ten times more spans than the local engine holds comfortably.

(a) The 1,000,000-span population file (the analysis benchmark's, generated once into the bench cache) on both
engines, interleaved repeats in one process: ``analyze(engine="local")`` against ``analyze(engine="dask")`` on a
local cluster of 2 worker processes (one thread each) with a per-worker memory limit. The reports are compared
field for field. One file is one scan task (a file is read by one worker, as the local engine reads it), so the
same spans as 4 rotated files are timed too.

(b) A 10,000,000-span archive: the population's traces copied 10 times with new trace and task ids (so traces and
tasks stay distinct), as 40 rotated files of about 230 MB, generated into the bench cache and deleted afterwards
(disk space is checked first). Analysed once by the Dask engine in a fresh process, on a fresh 2-worker local
cluster with the memory limit: the time, each worker's peak resident memory (VmHWM, read on the workers) against
the limit, the client's peak, and the time per span against the 1M archive of the same shape (4 files) measured
the same way: 1.0 is linear growth. The local engine at 10M runs only when its projected peak (its measured peak
at 1M, times 10) fits in the memory available; otherwise the projection is the figure.

    python -m bench.dask_bench [--quick]           # quick: the 105,000-span file and a 1M archive
    python -m bench.run --only dask [--update]     # through the runner (not part of a plain run: it takes long)
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

from .analysis_bench import FULL_RUNS, QUICK_RUNS
from .analysis_data import population as dataset
from .common import REPO_ROOT, Figure, Plan, Target, cache_dir, module_main, ratio, summarize, time_interleaved

NAME = "dask"
TITLE = "Dask engine: 1M spans on both engines; 10M spans on 2 workers with a memory limit"
WORKERS = 2
MEMORY_LIMIT = 3 << 30           # per worker
COPIES = 10
FILES_PER_COPY = 4
TARGETS = [
    Target("dask: dask / local on the 1M-span file", "dask / local (the 1M-span file)", "<=", 2.0),
    Target("dask: peak worker memory / limit at 10M spans", "peak worker memory / limit (10M)", "<=", 0.95),
    Target("dask: time growth 1M -> 10M spans, / linear", "time growth 1M -> 10M spans, / linear", "<=", 1.2),
]
_HWM = re.compile(rb"VmHWM:\s+(\d+)")


def _hwm_mb() -> float:
    with open("/proc/self/status", "rb") as f:
        return int(_HWM.search(f.read()).group(1)) / 1024


def _settings(scheduler: str | None = None):
    from agentobs.analysis.report.dask.settings import DaskSettings
    return DaskSettings(scheduler=scheduler, workers=WORKERS, memory_per_worker=MEMORY_LIMIT)


def _cluster():
    import logging

    from distributed import LocalCluster
    return LocalCluster(n_workers=WORKERS, threads_per_worker=1, processes=True, memory_limit=MEMORY_LIMIT,
                        host="127.0.0.1", dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)


# -- the archives --------------------------------------------------------------------------------------------

_TRACE = re.compile(rb'("traceId":"[0-9a-f]{28})[0-9a-f]{4}"')
_TASK = re.compile(rb'"sim-(\d{6})')


def archive(src: Path, copies: int, files_per_copy: int, name: str) -> list[Path]:
    """``copies`` copies of ``src`` as ``files_per_copy`` rotated files each; copy c > 0 has new trace ids (their
    last 4 hex digits set to c) and new task ids (``sim-cNN-...``), links rewritten alike."""
    d = Path(cache_dir()) / name
    done = d / "complete.json"
    if done.exists():
        return sorted(d.glob("*.jsonl"))
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    per_file = src.stat().st_size // files_per_copy + 1
    for c in range(copies):
        trace = b"\\g<1>" + b"%04x" % c + b'"'
        task = b'"sim-c%02d-\\g<1>' % c
        parts = [d / f"archive-{c:02d}-{k}.jsonl" for k in range(files_per_copy)]
        with open(src, "rb") as f, ExitStack() as stack:
            outs = [stack.enter_context(open(p, "wb")) for p in parts]
            k, written = 0, 0
            while block := f.readlines(64 << 20):
                data = b"".join(block)
                if c:
                    data = _TASK.sub(task, _TRACE.sub(trace, data))
                for line in data.splitlines(keepends=True):
                    if written >= per_file and k < files_per_copy - 1:
                        k, written = k + 1, 0
                    outs[k].write(line)
                    written += len(line)
    done.write_text(json.dumps({"copies": copies, "files_per_copy": files_per_copy}))
    return sorted(d.glob("*.jsonl"))


def remove_archive(name: str) -> None:
    shutil.rmtree(Path(cache_dir()) / name, ignore_errors=True)


# -- measured in a fresh process -----------------------------------------------------------------------------

def measure(files: list[str]) -> dict[str, float]:
    """The Dask engine on ``files`` on a fresh local cluster: seconds, runs, spans, each worker's and the client's
    peak resident memory (MB)."""
    from distributed import Client

    from agentobs.analysis.report.dask import analyze_dask
    with _cluster() as cluster:
        t0 = time.perf_counter()
        r = analyze_dask(files, settings=_settings(cluster.scheduler_address))
        seconds = time.perf_counter() - t0
        with Client(cluster) as client:
            peaks = client.run(_hwm_mb)
    return {"seconds": seconds, "runs": len(r.runs), "spans": r.overview["spans"],
            "worker_peak_mb": max(peaks.values()), "worker_peaks_mb": sorted(peaks.values()),
            "client_peak_mb": _hwm_mb()}


def measure_local(files: list[str]) -> dict[str, float]:
    from agentobs.analysis.report.engine import analyze
    t0 = time.perf_counter()
    r = analyze(files)
    return {"seconds": time.perf_counter() - t0, "runs": len(r.runs), "spans": r.overview["spans"],
            "client_peak_mb": _hwm_mb()}


def _in_fresh_process(what: str, files: list[Path]) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-m", "bench.dask_bench", what, *map(str, files)], cwd=REPO_ROOT,
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{what} failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _available_mb() -> float:
    with open("/proc/meminfo") as f:
        info = dict(line.split(":", 1) for line in f)
    return int(info["MemAvailable"].split()[0]) / 1024


# -- the benchmark --------------------------------------------------------------------------------------------

def run(quick: bool = False) -> list[Figure]:
    from agentobs.analysis.report.dask import analyze_dask
    from agentobs.analysis.report.engine import analyze
    g = NAME
    path, n_spans = dataset(QUICK_RUNS if quick else FULL_RUNS)
    size_mb = path.stat().st_size / 2**20
    src = [str(path)]
    s = lambda xs: [x / 1e9 for x in xs]  # noqa: E731
    figs: list[Figure] = []
    with _cluster() as cluster:
        st = _settings(cluster.scheduler_address)
        reports = {}
        t = time_interleaved({"local": lambda: reports.__setitem__("local", analyze(src)),
                              "dask": lambda: reports.__setitem__("dask", analyze_dask(src, settings=st))},
                             Plan(repeats=2 if quick else 3, iterations=1, warmup=0))
    a, b = reports["local"].to_dict(), reports["dask"].to_dict()
    a.pop("generated_at"), b.pop("generated_at")
    same = json.dumps(a, default=str) == json.dumps(b, default=str)
    if not same:
        raise AssertionError("the Dask engine's report differs from the local engine's")
    label = f"{n_spans:,} spans, one {size_mb:,.0f} MB file"
    figs += [
        summarize(f"local engine ({label})", s(t["local"]), "s", iterations=1, group=g),
        summarize(f"dask engine, {WORKERS} workers ({label})", s(t["dask"]), "s", iterations=1, group=g,
                  notes="the same report, field for field (checked)"),
        ratio("dask / local (the 1M-span file)" if not quick else "dask / local (the quick file)",
              t["dask"], t["local"], group=g),
    ]
    # (b) 1M and 10M spans as rotated archives, each in a fresh process on a fresh cluster
    base_name, big_name = f"dask-archive-{path.stem}-1x", f"dask-archive-{path.stem}-{COPIES}x"
    base = archive(path, 1, FILES_PER_COPY, base_name)
    one = _in_fresh_process("measure", base)
    figs.append(summarize(f"dask engine, {one['spans']:,} spans as {len(base)} files", [one["seconds"]], "s",
                          iterations=1, group=g, notes="fresh process and cluster"))
    local = _in_fresh_process("measure-local", [path])
    projected = local["client_peak_mb"] * COPIES
    available = _available_mb()
    need = COPIES * path.stat().st_size * 1.1
    free = shutil.disk_usage(cache_dir()).free
    if free < need + (2 << 30):
        raise RuntimeError(f"{free / 2**30:.1f} GiB free in {cache_dir()}: the {COPIES}x archive needs "
                           f"{need / 2**30:.1f} GiB")
    local_ten = None
    try:
        big = archive(path, COPIES, FILES_PER_COPY, big_name)
        gb = sum(p.stat().st_size for p in big) / 2**30
        ten = _in_fresh_process("measure", big)
        if projected < 0.8 * _available_mb():
            local_ten = _in_fresh_process("measure-local", big)
    finally:
        remove_archive(big_name)
        remove_archive(base_name)
    limit_mb = MEMORY_LIMIT / 2**20
    figs += [
        summarize(f"dask engine, {ten['spans']:,} spans as {len(big)} files ({gb:.1f} GiB)", [ten["seconds"]], "s",
                  iterations=1, group=g, notes=f"{ten['runs']:,} runs; fresh process and cluster"),
        summarize("peak worker memory (10M)", [ten["worker_peak_mb"]], "MB", iterations=1, group=g,
                  notes=f"VmHWM of each worker: {', '.join(f'{x:,.0f}' for x in ten['worker_peaks_mb'])} MB; "
                        f"limit {limit_mb:,.0f} MB per worker"),
        summarize("peak worker memory / limit (10M)", [ten["worker_peak_mb"] / limit_mb], "x", iterations=1,
                  group=g),
        summarize("peak client memory (10M)", [ten["client_peak_mb"]], "MB", iterations=1, group=g,
                  notes="the client holds the runs table, not the spans"),
        summarize("time growth 1M -> 10M spans, / linear",
                  [(ten["seconds"] / ten["spans"]) / (one["seconds"] / one["spans"])], "x", iterations=1, group=g,
                  notes="(time per span at 10M) / (time per span at 1M), same shape of archive: 1.0 is linear"),
    ]
    figs.append(summarize(f"local engine peak memory ({n_spans:,} spans)", [local["client_peak_mb"]], "MB",
                          iterations=1, group=g, notes="fresh process"))
    figs.append(summarize("local engine at 10M spans: projected peak memory", [projected], "MB", iterations=1,
                          group=g, notes=f"{COPIES} x its peak at 1M; {available:,.0f} MB available on this machine"
                                         + ("" if local_ten else ": not run (it would not fit with a 20% margin)")))
    if local_ten:
        figs += [summarize("local engine, 10M-span archive", [local_ten["seconds"]], "s", iterations=1, group=g),
                 summarize("local engine peak memory (10M)", [local_ten["client_peak_mb"]], "MB", iterations=1,
                           group=g)]
    return figs


def summary(figures: list[Figure]) -> str:
    return ("The Dask engine loads each input in one task, buckets its rows by a hash of the trace id (compressed), "
            "places the traces of one task (span links, `agentobs.task.id`) in one partition, and runs the local "
            "engine's `check` and `derive_runs` per partition; the client merges the runs rows and summarizes them "
            "with the local engine's own code. A single file is read by one worker: rotate archives (the "
            "collector's file exporter does) to spread the reading.")


def main(argv: list[str]) -> None:
    if argv and argv[0] in ("measure", "measure-local"):
        fn = measure if argv[0] == "measure" else measure_local
        print(json.dumps(fn(argv[1:])))
        return
    module_main(run)


if __name__ == "__main__":
    main(sys.argv[1:])
