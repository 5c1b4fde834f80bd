"""Scenario A without telemetry: our kernel against the seed 000 standard-library kernel.

Both run in this process, with interleaved repeats. One "run" is a whole task, constructing
everything a caller constructs (our ``SEED000["A normal run"]()``: desk, kernel, clock, state;
the seed's ``go(Policy())``: tools, clock, trace, state). Both produce done / 5 steps / 708
tokens, checked before timing. "Per step" is the run divided by its 5 steps.

    python -m bench.kernel_bench [--quick] [--profile]
"""
from __future__ import annotations

import sys

from .common import (
    QUICK,
    Figure,
    Plan,
    Target,
    by_area,
    profile,
    profile_markdown,
    ratio,
    summarize,
    time_interleaved,
    us,
)

NAME = "kernel"
TITLE = "Agent loop without telemetry: our kernel vs the seed kernel (scenario A)"
STEPS = 5

TARGETS = [Target("kernel: ours / seed per run", "ours / seed (per run)", "<=", 1.5)]

FULL = Plan(repeats=21, iterations=300, warmup=300)

# for the profile: where a row's self time belongs
AREAS = [
    ("json encode (json.dumps: view, digests, signature, token estimates)", ["json/encoder", "json/__init__.py:183",
                                                                            "built-in method _json"]),
    ("json decode (the policy reads the view)", ["json/decoder", "json/__init__.py:299"]),
    ("hashing (sha256 of digests and signatures)", ["_hashlib", "hashlib"]),
    ("deepcopy", ["copy.py"]),
    ("kernel loop (loop.py)", ["agentobs/kernel/loop.py"]),
    ("kernel state (state.py)", ["agentobs/kernel/state.py"]),
    ("kernel view/render (view.py)", ["agentobs/kernel/view.py"]),
    ("kernel budget checks (budget.py)", ["agentobs/kernel/budget.py"]),
    ("kernel tools / fact policy (tools.py)", ["agentobs/kernel/tools.py"]),
    ("kernel proposals, plan, pricing, models, clock, events", ["agentobs/kernel/"]),
    ("domain: support desk and policy stand-in", ["agentobs/domain/"]),
    ("dataclass construction (__init__ of generated classes)", ["<string>"]),
    ("builtins (isinstance, round, dict.get, ...)", ["<built-in", "<method"]),
]


def _contenders():
    from agentobs.domain.scenarios import SEED000

    from .seed_kernel import load

    seed = load()                                    # extracts from the shared spec and checks done/5/708
    ours = SEED000["A normal run"]
    r = ours()
    got = (r.state.stop, r.state.step, r.state.tokens)
    if got != ("done", 5, 708):
        raise AssertionError(f"our scenario A gave stop/steps/tokens {got}, expected ('done', 5, 708)")
    return ours, seed.scenario_a


def run(quick: bool = False) -> list[Figure]:
    ours, seed = _contenders()
    plan = QUICK if quick else FULL
    t = time_interleaved({"ours": ours, "seed": seed}, plan)
    n = dict(iterations=plan.iterations, group=NAME)
    return [
        summarize("ours, per run", us(t["ours"]), "µs", notes="agentobs Kernel, no observers", **n),
        summarize("seed, per run", us(t["seed"]), "µs", notes="seed 000 kernel.py/loop.py from the shared spec",
                  **n),
        summarize("ours, per step", us(t["ours"], STEPS), "µs", **n),
        summarize("seed, per step", us(t["seed"], STEPS), "µs", **n),
        ratio("ours / seed (per run)", t["ours"], t["seed"], notes="median of per-repeat ratios", group=NAME),
    ]


def summary(figures: list[Figure]) -> str:
    m = {f.name: f.median for f in figures}
    try:
        ours, seed = m["ours, per run"], m["seed, per run"]
    except KeyError:
        return ""
    return (f"Our kernel spends {ours - seed:.0f} µs more per run than the seed ({(ours - seed) / STEPS:.1f} µs per "
            f"step); the target (≤ 1.5 ×) allows {1.5 * seed - ours:+.0f} µs more.\n")


def profile_report(quick: bool = False, figures: list[Figure] | None = None) -> str:
    """cProfile of our kernel and of the seed's on scenario A, by area and by function.

    ``figures`` (from ``run``) give the unprofiled medians the shares are scaled to; without
    them a quick interleaved measurement is taken.
    """
    ours, seed = _contenders()
    runs = 300 if quick else 2000
    rows, prof_us = profile(ours, runs)
    srows, sprof_us = profile(seed, runs)
    med = {f.name: f.median for f in figures or ()}
    if "ours, per run" not in med or "seed, per run" not in med:
        t = time_interleaved({"ours": ours, "seed": seed}, QUICK)
        med = {"ours, per run": summarize("", us(t["ours"]), "µs").median,
               "seed, per run": summarize("", us(t["seed"]), "µs").median}
    ours_calls = sum(r.calls_per_run for r in rows)
    seed_calls = sum(r.calls_per_run for r in srows)
    dumps = next((r.calls_per_run for r in rows if r.label.startswith("stdlib/json/__init__.py:183")), 0)
    sdumps = next((r.calls_per_run for r in srows if r.label.startswith("stdlib/json/__init__.py:183")), 0)
    head = (f"Python function calls per run (cProfile): ours {ours_calls:.0f}, seed {seed_calls:.0f}. "
            f"`json.dumps` calls per run: ours {dumps:g}, seed {sdumps:g}.\n\n")
    return head + profile_markdown("Our kernel, scenario A, no telemetry", rows, prof_us, med["ours, per run"],
                                   by_area(rows, AREAS)) + "\n" + profile_markdown(
        "The seed kernel, scenario A (for comparison)", srows, sprof_us, med["seed, per run"], top=15)


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    figs = run(quick)
    for f in figs:
        print(f"{f.name:28} {f.value():>12}   {f.spread()}")
    for tg in TARGETS:
        c = tg.check(figs)
        print(c.name, "PASS" if c.passed else "FAIL", f"{c.value:.3f} {c.op} {c.target}", c.margin())
    if "--profile" in sys.argv or not all(tg.check(figs).passed for tg in TARGETS):
        print(profile_report(quick, figs))
