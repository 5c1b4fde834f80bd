"""``agentobs watch``: the delay from a span's arrival to its event, and its memory over a long stream.

Delay. A writer appends the synthetic stream of ``bench.watch_data`` to a file in real time (one export batch a
tick, 20 runs in flight, one run in five a runaway of 30 steps) while ``agentobs watch FILE --caps`` (a child
process, its default 0.2 s poll) follows it with a step cap of 15. For each runaway, the delay is the time its
first event was reported (the event's ``reported_at``) minus the time the writer appended the line holding the span
that took it past the cap (its 16th step): polling, reading, deriving the runs in flight and finding since when, end
to end. The watch's own figure (``delay_s``: from reading the bytes to the event) is reported beside it. p50 and p99
per repeat, then the median over repeats.

Memory. ``agentobs watch FILE --from start --once`` over a stream of N runs and of 10 N (the same shape: 50 runs in
flight, one in 20 a runaway), each in a fresh process that reports its peak resident size (VmHWM) at exit,
interleaved: finished runs are let go, so the peak does not grow with the stream.

    python -m bench.watch_bench [--quick]
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

from .common import REPO_ROOT, Figure, Target, cache_dir, module_main, ratio, summarize
from .watch_data import Stream, write

NAME = "watch"
TITLE = "agentobs watch: delay from a span's arrival to its event, memory over a long stream"
TARGETS = [
    Target("watch: delay from a span's arrival to its event, p99", "delay, arrival to event: p99", "<=", 2.5),
    Target("watch: peak memory over a stream 10x longer / over the stream", "peak memory: 10x stream / stream",
           "<=", 1.2),
]
CLI = [sys.executable, "-c", "from agentobs.cli.main import main; main()"]
CAPS = "budget = Budget(max_steps=15)  # cuts off 0.5% of 1000 successful runs\n"
TICK_S = 0.1
PEAK = ("import atexit, sys\n"
        "def peak():\n"
        "    for line in open('/proc/self/status'):\n"
        "        if line.startswith('VmHWM:'):\n"
        "            sys.stderr.write('PEAK ' + line.split()[1] + '\\n')\n"
        "atexit.register(peak)\n"
        "from agentobs.cli.main import main\n"
        "main()\n")


def _env() -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}, "PYTHONPATH": REPO_ROOT}


def _unix(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))]


# -- delay ------------------------------------------------------------------------------------------------------

def delay_once(runs: int, seed: int) -> tuple[list[float], list[float]]:
    """(end-to-end delays, the watch's own delays) of one live stream, one per runaway run."""
    with tempfile.TemporaryDirectory(prefix="agentobs-watch-bench-") as d:
        path, caps = Path(d) / "live.jsonl", Path(d) / "caps.py"
        path.touch()
        caps.write_text(CAPS)
        proc = subprocess.Popen([*CLI, "watch", str(path), "--caps", str(caps), "--format", "json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
        assert proc.stderr is not None and proc.stdout is not None
        if "watching" not in proc.stderr.readline():
            proc.kill()
            raise RuntimeError("agentobs watch did not start")
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True)
        reader.start()
        s = Stream(runs=runs, concurrent=20, runaway_every=5, runaway_steps=30, cross_at=16, seed=seed,
                   start_ns=time.time_ns())
        written: list[float] = []
        with path.open("ab") as f:
            for line in s.lines():
                f.write(line)
                f.flush()
                written.append(time.time())
                time.sleep(TICK_S)
        deadline = time.time() + 60
        while time.time() < deadline and len({json.loads(x)["trace_id"] for x in list(lines)}) < len(s.runaway_traces):
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
        reader.join(timeout=10)
    first: dict[str, dict] = {}
    for x in lines:
        e = json.loads(x)
        if e["event"] == "cap_crossed" and e["trace_id"] not in first:
            first[e["trace_id"]] = e
    if set(first) != set(s.runaway_traces):
        raise RuntimeError(f"{len(first)} of {len(s.runaway_traces)} runaways reported")
    e2e = [_unix(e["reported_at"]) - written[s.crossing_tick[t]] for t, e in first.items()]
    own = [float(e["delay_s"]) for e in first.values()]
    return e2e, own


# -- memory -----------------------------------------------------------------------------------------------------

def peak_kib(path: str, caps: str) -> tuple[int, float]:
    """(VmHWM in KiB, seconds) of ``agentobs watch --from start --once`` over ``path`` in a fresh process."""
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", PEAK, "watch", path, "--caps", caps, "--from", "start", "--once",
                           "--format", "json"], capture_output=True, text=True, env=_env(), timeout=3600)
    took = time.perf_counter() - t
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return int(next(x for x in done.stderr.splitlines() if x.startswith("PEAK "))[5:]), took


def _stream_file(runs: int, seed: int) -> str:
    path = os.path.join(cache_dir(), f"watch-stream-{runs}-{seed}.jsonl")
    if not os.path.exists(path):
        tmp = path + ".tmp"
        write(tmp, Stream(runs=runs, runaway_every=20, cross_at=16, seed=seed))
        os.replace(tmp, path)
    return path


def run(quick: bool = False) -> list[Figure]:
    figures: list[Figure] = []
    repeats = 1 if quick else 3
    p50, p99, own50, own99 = [], [], [], []
    for r in range(repeats):
        e2e, own = delay_once(40 if quick else 100, seed=r)
        p50.append(_pct(e2e, 0.5))
        p99.append(_pct(e2e, 0.99))
        own50.append(_pct(own, 0.5))
        own99.append(_pct(own, 0.99))
        n = len(e2e)
    note = f"{n} runaways a repeat, 20 runs in flight, a line every {TICK_S:g} s"
    figures += [summarize("delay, arrival to event: p50", p50, "s", notes=note, group=NAME),
                summarize("delay, arrival to event: p99", p99, "s", notes=note, group=NAME),
                summarize("delay, read to event (the watch's own): p50", own50, "s", group=NAME),
                summarize("delay, read to event (the watch's own): p99", own99, "s", group=NAME)]
    short_runs = 200 if quick else 1000
    short, long_ = _stream_file(short_runs, 1), _stream_file(10 * short_runs, 2)
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(CAPS)
        caps = f.name
    try:
        a, b, ta, tb = [], [], [], []
        for _ in range(1 if quick else 2):
            ka, sa = peak_kib(short, caps)
            kb, sb = peak_kib(long_, caps)
            a.append(ka / 1024)
            b.append(kb / 1024)
            ta.append(sa)
            tb.append(sb)
    finally:
        os.unlink(caps)
    size_a, size_b = os.path.getsize(short) / 2**20, os.path.getsize(long_) / 2**20
    figures += [summarize("peak memory: stream", a, "MiB", notes=f"{short_runs:,} runs, {size_a:.0f} MiB", group=NAME),
                summarize("peak memory: 10x stream", b, "MiB", notes=f"{10 * short_runs:,} runs, {size_b:.0f} MiB",
                          group=NAME),
                ratio("peak memory: 10x stream / stream", b, a, group=NAME),
                summarize("throughput over the 10x stream", [size_b / t for t in tb], "MiB/s",
                          notes="--from start --once: read, derive, check, let go", group=NAME)]
    return figures


if __name__ == "__main__":
    module_main(run)
