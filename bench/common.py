"""A tiny timing harness for side-by-side benchmarks, and the records they report.

Rules the harness enforces, because these machines are noisy:

* everything compared is measured in the same process, with repeats *interleaved* (A, B, C,
  then B, C, A, ...), so drift in machine load hits every contender alike;
* every figure is the median of ``repeats`` repeats of ``iterations`` calls each, reported with
  its spread (interquartile range and min/max over the repeats);
* warm-up calls run first and are not timed; ``gc`` is disabled while a repeat runs and a full
  collection runs between repeats, so a collection triggered by one contender is not billed to
  another;
* ratios are computed per repeat (contender A of repeat i over contender B of repeat i) and
  summarised the same way: median and spread of the per-repeat ratios.
"""
from __future__ import annotations

import gc
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cache_dir() -> str:
    """Where benchmarks keep what they build once (datasets, venvs): ``$AGENTOBS_BENCH_DATA``, by default
    ``~/.cache/agentobs/bench``."""
    d = os.environ.get("AGENTOBS_BENCH_DATA") or os.path.join(os.path.expanduser("~"), ".cache", "agentobs", "bench")
    os.makedirs(d, exist_ok=True)
    return d


def stack_harness():
    """The helpers of tests/scenarios/stack (``stackutil``: PrivateStack, SentIds, Jaeger polling) for the benchmarks
    that run against the real collector and Jaeger; one copy serves the tests and the benchmarks."""
    path = os.path.join(REPO_ROOT, "tests", "scenarios", "stack")
    if path not in sys.path:
        sys.path.insert(0, path)
    import stackutil
    return stackutil


# -- records -------------------------------------------------------------------------------------


@dataclass
class Figure:
    """One measured quantity: the median over repeats and its spread."""
    name: str
    median: float
    q1: float
    q3: float
    min: float
    max: float
    unit: str                 # "µs", "ms", "x" (a ratio)...
    repeats: int = 0
    iterations: int = 0       # calls per repeat
    notes: str = ""
    group: str = ""           # the benchmark module that produced it

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    def spread(self) -> str:
        return f"IQR {_fmt(self.q1)}–{_fmt(self.q3)}, min/max {_fmt(self.min)}–{_fmt(self.max)}"

    def value(self) -> str:
        return f"{_fmt(self.median)} {self.unit}"


@dataclass(frozen=True)
class Target:
    """A target declared by a benchmark module: the median of figure ``figure`` compared by ``op``."""
    name: str
    figure: str            # Figure.name
    op: str                # "<=" or ">="
    target: float

    def check(self, figures: Sequence[Figure]) -> Check | None:
        for f in figures:
            if f.name == self.figure:
                return Check(self.name, f, self.op, self.target)
        return None


@dataclass
class Check:
    """A target evaluated: ``value`` (the figure's median) against ``target``."""
    name: str
    figure: Figure
    op: str
    target: float

    @property
    def value(self) -> float:
        return self.figure.median

    @property
    def passed(self) -> bool:
        return self.value <= self.target if self.op == "<=" else self.value >= self.target

    def margin(self) -> str:
        """How far the median is from the target, relative to the target (a target of 0: met, or by how much not)."""
        if self.target == 0:
            return "on target" if self.passed else f"missed by {_fmt(abs(self.value))} {self.figure.unit}"
        rel = (self.target - self.value if self.op == "<=" else self.value - self.target) / self.target
        if rel >= 0:
            return f"{rel:.0%} of headroom"
        return f"missed by {-rel:.0%}"

    def across_iqr(self) -> bool:
        """Whether the target also holds at the unfavourable quartile."""
        edge = self.figure.q3 if self.op == "<=" else self.figure.q1
        return edge <= self.target if self.op == "<=" else edge >= self.target


# -- statistics ----------------------------------------------------------------------------------


def _quantile(xs: Sequence[float], q: float) -> float:
    s = sorted(xs)
    if len(s) == 1:
        return s[0]
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def summarize(name: str, samples: Sequence[float], unit: str, *, iterations: int = 0, notes: str = "",
              group: str = "") -> Figure:
    return Figure(name, statistics.median(samples), _quantile(samples, 0.25), _quantile(samples, 0.75),
                  min(samples), max(samples), unit, len(samples), iterations, notes, group)


def ratio(name: str, num: Sequence[float], den: Sequence[float], *, notes: str = "", group: str = "") -> Figure:
    """Median and spread of per-repeat ratios num[i] / den[i] (the repeats were interleaved)."""
    return summarize(name, [a / b for a, b in zip(num, den, strict=True)], "x", notes=notes, group=group)


def _fmt(x: float) -> str:
    if x == 0:
        return "0"
    a = abs(x)
    if a >= 1000:
        return f"{x:,.0f}"
    if a >= 100:
        return f"{x:.0f}"
    if a >= 10:
        return f"{x:.1f}"
    if a >= 1:
        return f"{x:.2f}"
    return f"{x:.3f}"


# -- timing --------------------------------------------------------------------------------------


@dataclass
class Plan:
    """How long to measure: ``repeats`` timed repeats of ``iterations`` calls, after ``warmup`` calls."""
    repeats: int = 15
    iterations: int = 200
    warmup: int = 200

    def scaled(self, factor: float) -> Plan:
        return Plan(self.repeats, max(1, int(self.iterations * factor)), max(1, int(self.warmup * factor)))


QUICK = Plan(repeats=7, iterations=30, warmup=30)


def time_interleaved(contenders: Mapping[str, Callable[[], object]], plan: Plan, *,
                     per_call: Mapping[str, int] | None = None,
                     between: Callable[[], object] | None = None) -> dict[str, list[float]]:
    """Time each contender ``plan.repeats`` times, interleaved; returns ns per call, one value per repeat.

    The order of contenders rotates from repeat to repeat. ``per_call`` optionally overrides the
    iteration count for one contender (slow contenders, e.g. Pydantic AI). ``between`` runs
    untimed after every repeat (e.g. to flush a span processor).
    """
    names = list(contenders)
    per_call = dict(per_call or {})
    for name in names:                                        # warm-up, untimed
        fn = contenders[name]
        for _ in range(max(1, plan.warmup * per_call.get(name, plan.iterations) // max(1, plan.iterations))):
            fn()
    out: dict[str, list[float]] = {n: [] for n in names}
    was_enabled = gc.isenabled()
    try:
        for r in range(plan.repeats):
            order = names[r % len(names):] + names[:r % len(names)]
            for name in order:
                fn, n = contenders[name], per_call.get(name, plan.iterations)
                gc.collect()
                gc.disable()
                t0 = time.perf_counter_ns()
                for _ in range(n):
                    fn()
                t1 = time.perf_counter_ns()
                gc.enable()
                out[name].append((t1 - t0) / n)
                if between is not None:
                    between()
    finally:
        if was_enabled:
            gc.enable()
        else:
            gc.disable()
    return out


def us(samples_ns: Iterable[float], div: float = 1.0) -> list[float]:
    return [s / 1e3 / div for s in samples_ns]


# -- instructions --------------------------------------------------------------------------------


def instructions(argv: Sequence[str], *, timeout_s: float = 1800) -> int | None:
    """Instructions a child process executes, counted by valgrind's callgrind, or None without valgrind.

    A count does not depend on what else the machine runs (seconds do), so it separates the work a contender
    does from what the machine makes that work cost (caches, neighbours). The child runs with a fixed hash
    seed; everything it does is counted, threads included, so callers difference two runs that differ only in
    the number of calls."""
    if shutil.which("valgrind") is None:
        return None
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
                         capture_output=True, text=True, env=env, timeout=timeout_s, cwd=REPO_ROOT)
    found = re.search(r"Collected\s*:\s*(\d+)", out.stderr)
    if out.returncode != 0 or found is None:
        raise RuntimeError(f"callgrind run of {argv!r} failed ({out.returncode}): {out.stderr[-2000:]}")
    return int(found.group(1))


def instructions_per_call(argv: Sequence[str], calls: int) -> float | None:
    """Instructions per call of a child whose last argument is the number of calls it makes: a run with
    ``calls`` less one with 0, over ``calls`` (set-up and warm-up cancel out)."""
    with_calls = instructions([*argv, str(calls)])
    if with_calls is None:
        return None
    without = instructions([*argv, "0"])
    assert without is not None
    return (with_calls - without) / calls


# -- machine -------------------------------------------------------------------------------------

PACKAGES = ("opentelemetry-api", "opentelemetry-sdk", "pydantic-ai-slim", "pydantic", "pydantic-core", "rich",
            "agentobs")


def machine_info(packages: Sequence[str] = PACKAGES) -> dict[str, str]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = os.cpu_count() or 0
    info = {
        "cpu": cpu,
        "cores": f"{os.cpu_count()} logical ({affinity} usable by this process)",
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "os": f"{platform.system()} {platform.release()}",
    }
    try:
        load = os.getloadavg()
        info["load average at start"] = " ".join(f"{x:.2f}" for x in load)
    except OSError:
        pass
    for p in packages:
        try:
            info[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            info[p] = "not installed"
    return info


# -- profiling -----------------------------------------------------------------------------------


@dataclass
class ProfileRow:
    label: str
    calls_per_run: float
    self_us: float          # tottime per run, under the profiler
    cum_us: float           # cumtime per run, under the profiler
    share: float            # self time / total self time


def _label(key: tuple[str, int, str]) -> str:
    path, line, func = key
    if path == "~":
        return func                                   # a builtin, e.g. "<built-in method builtins.isinstance>"
    if "/seed000_" in path:                           # the seed kernel, extracted to a temporary directory
        return f"seed/{os.path.basename(path)}:{line}({func})"
    for marker in ("/site-packages/", "/lib/python3", REPO_ROOT + "/"):
        if marker in path:
            path = path.split(marker, 1)[1]
            if marker == "/lib/python3":
                path = "stdlib/" + path.split("/", 1)[1]
            break
    return f"{path}:{line}({func})"


def profile(fn: Callable[[], object], runs: int, warmup: int = 50) -> tuple[list[ProfileRow], float]:
    """cProfile ``runs`` calls of ``fn``; returns rows sorted by self time and the profiled µs per run."""
    import cProfile
    import pstats
    for _ in range(warmup):
        fn()
    pr = cProfile.Profile()
    gc.collect()
    gc.disable()
    try:
        pr.enable()
        for _ in range(runs):
            fn()
        pr.disable()
    finally:
        gc.enable()
    stats = pstats.Stats(pr).stats  # type: ignore[attr-defined]
    total = sum(v[2] for v in stats.values())
    rows = [ProfileRow(_label(k), v[1] / runs, v[2] / runs * 1e6, v[3] / runs * 1e6, v[2] / total if total else 0)
            for k, v in stats.items()]
    rows.sort(key=lambda r: -r.self_us)
    return rows, total / runs * 1e6


def by_area(rows: Sequence[ProfileRow], areas: Sequence[tuple[str, Sequence[str]]]) -> list[tuple[str, float]]:
    """Self-time shares grouped by area: the first area whose substrings match a row's label wins."""
    out: dict[str, float] = {label: 0.0 for label, _ in areas}
    out["other"] = 0.0
    for r in rows:
        for label, subs in areas:
            if any(s in r.label for s in subs):
                out[label] += r.share
                break
        else:
            out["other"] += r.share
    return sorted(out.items(), key=lambda kv: -kv[1])


def profile_markdown(title: str, rows: Sequence[ProfileRow], profiled_us: float, measured_us: float,
                     areas: Sequence[tuple[str, float]] = (), top: int = 25) -> str:
    """A markdown section: areas and top functions, in µs per run scaled to the unprofiled median.

    cProfile slows small Python functions more than C code, so the scaled µs are estimates;
    the shares and call counts are the robust part.
    """
    lines = [f"#### {title}", "",
             f"Profiled with cProfile: {profiled_us:.0f} µs per run under the profiler, {measured_us:.0f} µs "
             "measured without it; the µs columns below are self-time shares × the measured median.", ""]
    if areas:
        lines += ["| area | share of self time | ≈ µs per run |", "| --- | ---: | ---: |"]
        lines += [f"| {a} | {s:.1%} | {s * measured_us:.1f} |" for a, s in areas if s > 0.0005]
        lines.append("")
    lines += ["| function | calls per run | self share | ≈ self µs per run | cumulative µs (profiled) |",
              "| --- | ---: | ---: | ---: | ---: |"]
    for r in rows[:top]:
        lines.append(f"| `{r.label}` | {r.calls_per_run:g} | {r.share:.1%} | {r.share * measured_us:.1f} | "
                     f"{r.cum_us:.1f} |")
    return "\n".join(lines) + "\n"


def module_main(run: Callable[[bool], Sequence[Figure]]) -> None:
    """`python -m bench.<module> [--quick]`: run one module and print its figures."""
    quick = "--quick" in sys.argv
    t0 = time.time()
    for fig in run(quick):
        print(f"{fig.name:66} {fig.value():>16}  {fig.spread()}")
    print(f"({time.time() - t0:.0f} s)")
