"""Many runs at once: one kernel and one observer serving concurrent runs, in threads and in asyncio tasks.

Scenario A (5 model calls, 3 tool calls) through ONE ``Kernel`` with ONE ``OTelObserver`` on a real SDK pipeline
(a ``BatchSpanProcessor`` over an exporter that drops, SDK metrics: the pipeline of ``telemetry_bench``); every run
has its own simulated clock (``SimClock(per_run=True)``) and its own desk (``SupportDesks``).

Throughput (runs/s), a model with 20 ms of I/O per call (100 ms of waiting per run):

* ``threads``: ``kernel.run`` in a pool of 1, 8 or 64 threads; the model sleeps (``time.sleep``).
* ``asyncio``: ``await kernel.arun`` in 1, 8 or 64 tasks at once on one event loop; the model awaits
  (``asyncio.sleep``).
* ``asyncio, sync model``: the same tasks with the sleeping model, which the async kernel runs in the event
  loop's default worker threads (``asyncio.to_thread``): bounded by that pool, not by the tasks.

Each contender runs a batch (4 runs at concurrency 1, 16 at 8, 128 at 64), repeats interleaved; runs/s is the batch
over its wall time. The speed-ups are per-repeat ratios of the time per run at concurrency 1 and at 64 (or 8).

Telemetry overhead per run at concurrency 64 against 1: the same runs with no I/O wait (the model yields,
``asyncio.sleep(0)`` or ``time.sleep(0)``, so runs still interleave), 64 runs per batch, sequential or all at
once, with and without the observer. The overhead is (with - without) per run, at each concurrency; the ratio of
the two, per repeat, says whether one shared observer costs more per run when 64 runs share it.

    python -m bench.concurrency_bench [--quick]
"""
from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .common import Figure, Plan, Target, ratio, summarize, time_interleaved

NAME = "concurrency"
TITLE = "Concurrent runs through one kernel and one observer: throughput, threads and asyncio; telemetry at 64 vs 1"

LATENCY_S = 0.02                 # real I/O wait per model call
LEVELS = (1, 8, 64)
BATCH = {1: 4, 8: 16, 64: 128}   # runs per timed batch at each concurrency
OVERHEAD_RUNS = 64

F_ASYNC_64 = "asyncio: runs/s at 64 / at 1"
F_THREADS_8 = "threads: runs/s at 8 / at 1"
F_THREADS_64 = "threads: runs/s at 64 / at 1"
F_TEL_ASYNC = "asyncio: telemetry per run at 64 / at 1"
F_TEL_THREADS = "threads: telemetry per run at 64 / at 1"
TARGETS = [
    Target("concurrency: asyncio runs/s at 64 / at 1", F_ASYNC_64, ">=", 20.0),
    Target("concurrency: threads runs/s at 8 / at 1", F_THREADS_8, ">=", 6.0),
    Target("concurrency: telemetry per run, asyncio, at 64 / at 1", F_TEL_ASYNC, "<=", 1.5),
]

FULL = Plan(repeats=7, iterations=1, warmup=1)
QUICK = Plan(repeats=3, iterations=1, warmup=1)
FULL_OVERHEAD = Plan(repeats=15, iterations=2, warmup=2)
QUICK_OVERHEAD = Plan(repeats=7, iterations=1, warmup=1)


class _Ids:
    """Task ids, new for every run (each gets a desk of its own)."""

    def __init__(self) -> None:
        self.n = 0

    def take(self, k: int) -> list[str]:
        self.n += k
        return [f"b{i}" for i in range(self.n - k, self.n)]


def _kernel(model: Any, observers: list[Any]) -> Any:
    from agentobs import Kernel, SimClock
    from agentobs.domain.scenarios import FACTS, PRICE_AS
    from agentobs.domain.support import SupportDesks
    return Kernel(model, SupportDesks(), clock=SimClock(per_run=True), facts=FACTS, price_as=PRICE_AS,
                  observers=observers)


def _contenders(loop: asyncio.AbstractEventLoop, pools: dict[int, ThreadPoolExecutor], kernels: dict[str, Any],
                levels: tuple[int, ...], batch: dict[int, int]) -> dict[str, Callable[[], object]]:
    from agentobs.domain.scenarios import new_state
    ids = _Ids()

    def threads(kernel: Any, c: int) -> Callable[[], object]:
        def go() -> object:
            return list(pools[c].map(lambda t: kernel.run(new_state(t)), ids.take(batch[c])))
        return go

    def tasks(kernel: Any, c: int) -> Callable[[], object]:
        async def main() -> None:
            sem = asyncio.Semaphore(c)

            async def one(t: str) -> None:
                async with sem:
                    await kernel.arun(new_state(t))
            await asyncio.gather(*(one(t) for t in ids.take(batch[c])))
        return lambda: loop.run_until_complete(main())

    out: dict[str, Callable[[], object]] = {}
    for c in levels:
        if "threads" in kernels:
            out[f"threads {c}"] = threads(kernels["threads"], c)
        if "asyncio" in kernels:
            out[f"asyncio {c}"] = tasks(kernels["asyncio"], c)
        if "asyncio, sync model" in kernels:
            out[f"asyncio, sync model {c}"] = tasks(kernels["asyncio, sync model"], c)
    return out


def _throughput(quick: bool) -> list[Figure]:
    from agentobs.domain.policies import SupportPolicy
    from agentobs.telemetry import configure
    from agentobs.testing import AwaitingModel, SleepingModel

    from .telemetry_bench import pipeline
    p = pipeline()
    obs = configure(tracer_provider=p.tracer_provider, meter_provider=p.meter_provider).observer()
    kernels = {"threads": _kernel(SleepingModel(SupportPolicy(), LATENCY_S), [obs]),
               "asyncio": _kernel(AwaitingModel(SupportPolicy(), LATENCY_S), [obs]),
               "asyncio, sync model": _kernel(SleepingModel(SupportPolicy(), LATENCY_S), [obs])}
    loop = asyncio.new_event_loop()
    pools = {c: ThreadPoolExecutor(c, thread_name_prefix=f"bench-{c}") for c in LEVELS}
    try:
        t = time_interleaved(_contenders(loop, pools, kernels, LEVELS, BATCH), QUICK if quick else FULL,
                             between=p.flush)
    finally:
        for pool in pools.values():
            pool.shutdown()
        loop.close()
        p.shutdown()
    figs = []
    per_run: dict[str, list[float]] = {}
    for name, samples in t.items():
        c = int(name.rsplit(" ", 1)[1])
        per_run[name] = [s / BATCH[c] for s in samples]                   # ns per run
        mode = name.rsplit(" ", 1)[0]
        figs.append(summarize(f"{mode}, concurrency {c}: runs/s", [1e9 / x for x in per_run[name]], "runs/s",
                              iterations=BATCH[c], group=NAME,
                              notes=f"{BATCH[c]} runs per batch, {LATENCY_S * 1000:.0f} ms per model call"))
    figs += [
        ratio(F_THREADS_8, per_run["threads 1"], per_run["threads 8"], group=NAME),
        ratio(F_THREADS_64, per_run["threads 1"], per_run["threads 64"], group=NAME),
        ratio("asyncio: runs/s at 8 / at 1", per_run["asyncio 1"], per_run["asyncio 8"], group=NAME),
        ratio(F_ASYNC_64, per_run["asyncio 1"], per_run["asyncio 64"], group=NAME),
        ratio("asyncio, sync model in worker threads: runs/s at 64 / at 1", per_run["asyncio, sync model 1"],
              per_run["asyncio, sync model 64"], group=NAME,
              notes="bounded by the event loop's default executor (min(32, cores + 4) threads)"),
    ]
    return figs


def _overhead(quick: bool) -> list[Figure]:
    from agentobs.domain.policies import SupportPolicy
    from agentobs.domain.scenarios import new_state
    from agentobs.telemetry import configure
    from agentobs.testing import AwaitingModel, SleepingModel

    from .telemetry_bench import pipeline
    p = pipeline()
    obs = configure(tracer_provider=p.tracer_provider, meter_provider=p.meter_provider).observer()
    n = OVERHEAD_RUNS
    ids = _Ids()
    loop = asyncio.new_event_loop()
    pools = {1: ThreadPoolExecutor(1), n: ThreadPoolExecutor(n)}
    kernels = {(mode, tel): _kernel(AwaitingModel(SupportPolicy()) if mode == "asyncio" else
                                    SleepingModel(SupportPolicy()), [obs] if tel else [])
               for mode in ("asyncio", "threads") for tel in (True, False)}

    def tasks(kernel: Any, c: int) -> Callable[[], object]:
        async def main() -> None:
            batch = ids.take(n)
            if c == 1:
                for t in batch:
                    await kernel.arun(new_state(t))
            else:
                await asyncio.gather(*(kernel.arun(new_state(t)) for t in batch))
        return lambda: loop.run_until_complete(main())

    def threads(kernel: Any, c: int) -> Callable[[], object]:
        return lambda: list(pools[c].map(lambda t: kernel.run(new_state(t)), ids.take(n)))

    contenders = {f"{mode} {'with' if tel else 'without'} {c}": (tasks if mode == "asyncio" else threads)(k, c)
                  for (mode, tel), k in kernels.items() for c in (1, n)}
    try:
        t = time_interleaved(contenders, QUICK_OVERHEAD if quick else FULL_OVERHEAD, between=p.flush)
    finally:
        for pool in pools.values():
            pool.shutdown()
        loop.close()
        p.shutdown()
    figs = []
    for mode, fig in (("asyncio", F_TEL_ASYNC), ("threads", F_TEL_THREADS)):
        over = {c: [(a - b) / n / 1e3 for a, b in zip(t[f"{mode} with {c}"], t[f"{mode} without {c}"], strict=True)]
                for c in (1, n)}
        for c in (1, n):
            figs.append(summarize(f"{mode}: telemetry per run at concurrency {c}", over[c], "µs", iterations=n,
                                  group=NAME, notes="(with observer - without) per run, no I/O wait"))
            figs.append(summarize(f"{mode}: run with telemetry at concurrency {c}",
                                  [x / n / 1e3 for x in t[f"{mode} with {c}"]], "µs", iterations=n, group=NAME))
        figs.append(summarize(fig, [a / b for a, b in zip(over[n], over[1], strict=True) if b > 0], "x",
                              group=NAME, notes="median of per-repeat ratios"))
    return figs


def run(quick: bool = False) -> list[Figure]:
    _check()
    return _throughput(quick) + _overhead(quick)


def _check() -> None:
    """One kernel, 8 concurrent async runs: each ends as scenario A does alone (done, 5 steps, 708 tokens)."""
    from agentobs.domain.policies import SupportPolicy
    from agentobs.domain.scenarios import new_state
    from agentobs.testing import AwaitingModel
    kernel = _kernel(AwaitingModel(SupportPolicy(), 0.001), [])

    async def main() -> list[Any]:
        return list(await asyncio.gather(*(kernel.arun(new_state(f"check-{i}")) for i in range(8))))
    got = {(s.stop, s.step, s.tokens) for s in asyncio.run(main())}
    if got != {("done", 5, 708)}:
        raise AssertionError(f"concurrent scenario A gave {got}, expected {{('done', 5, 708)}}")


def summary(figures: list[Figure]) -> str:
    m = {f.name: f.median for f in figures}
    try:
        a1, a64 = m["asyncio, concurrency 1: runs/s"], m["asyncio, concurrency 64: runs/s"]
        t1, t64 = m["threads, concurrency 1: runs/s"], m["threads, concurrency 64: runs/s"]
    except KeyError:
        return ""
    return (f"With 100 ms of model I/O per run, one kernel and one observer go from {a1:.1f} runs/s alone to "
            f"{a64:.0f} runs/s with 64 asyncio tasks and {t64:.0f} runs/s with 64 threads ({t1:.1f} alone); "
            f"telemetry per run at 64 concurrent runs against 1: asyncio {m.get(F_TEL_ASYNC, float('nan')):.2f} x, "
            f"threads {m.get(F_TEL_THREADS, float('nan')):.2f} x.\n")


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    figs = run(quick)
    for f in figs:
        print(f"{f.name:62} {f.value():>14}   {f.spread()}")
    for tg in TARGETS:
        c = tg.check(figs)
        if c is not None:
            print(c.name, "PASS" if c.passed else "FAIL", f"{c.value:.3f} {c.op} {c.target}", c.margin())
    print(summary(figs))
