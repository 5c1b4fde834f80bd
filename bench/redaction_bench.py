"""Redaction time per MB: text crafted against every rule, against ordinary text, side by side.

Redaction runs on RE2 (``agentobs.contract.linear_rx``). Python's ``re`` backtracked: a crafted megabyte took a
report from 1 s to 275 s (issue 43). Every shape of ``bench/redaction_data.py`` (for each rule: a long run of what
opens it, an opening never closed, a near miss repeated), 1 MiB of it, goes through ``Redactor.text`` with the
default rules (21 of them, in order), interleaved with 1 MiB of ordinary text (support-desk prose, JSON order
records with an e-mail address now and then, log lines): each shape is timed beside its own run of the ordinary
text, so that the machine's load moves both. A ratio is the median of per-repeat ratios; the worst shape is the
one with the highest median.

Also, side by side with the same ordinary text: text made only of secrets (every one is masked, so it costs the
masks: a constant per secret on top of the reading), and the issue's cases through the paths that met them:
``secrets_masked`` (every output format of the analysis) on a 1 MiB JWT-like agent name, ``Redactor.json`` (telemetry
with content capture on) on a 432 KB tool result of key headers, each against ordinary text through the same path.

Target: the worst crafted shape / ordinary <= 2.

    python -m bench.redaction_bench [--quick]
"""
from __future__ import annotations

import statistics
from collections.abc import Callable

from . import redaction_data as data
from .common import Figure, Plan, Target, module_main, summarize, time_interleaved

NAME = "redaction"
TITLE = "Redaction: time per MB of text crafted against each rule vs ordinary text"
TARGETS = [Target("redaction: worst crafted shape / ordinary text (per MB)", "worst crafted shape / ordinary",
                  "<=", 2.0)]

FULL = Plan(repeats=15, iterations=1, warmup=1)
QUICK = Plan(repeats=5, iterations=1, warmup=1)
MIB = 1 << 20


def _pairs(size: int) -> tuple[dict[str, tuple[Callable[[], object], Callable[[], object]]], dict[str, int]]:
    """{name: (contender, the ordinary text through the same path)}, and the masks each dense text gets."""
    from agentobs.contract.redaction import REDACTED, Redactor, secrets_masked

    red = Redactor(env={})
    ordinary = data.ordinary(size)

    def text(t: str) -> Callable[[], object]:
        return lambda: red.text(t)
    base = text(ordinary)
    pairs = {f"{rule}/{kind}": (text(data.shaped(rule, kind, size)), base) for rule, kind in data.shapes()}
    dense = {f"dense/{name}": data.fill("", unit, size) for name, unit in data.DENSE.items()}
    pairs |= {name: (text(t), base) for name, t in dense.items()}
    masks = {name: red.text(t).count(REDACTED) for name, t in dense.items()}
    # the cases through the paths that met them, each against ordinary text through the same path
    name_jwt, name_plain = data.shaped("jwt", "prefix", size), data.ordinary(size, seed=1)
    pairs["shown/jwt-like name"] = (lambda: secrets_masked(name_jwt),                     # (none kept: > 4 KiB)
                                    lambda: secrets_masked(name_plain))
    result = round(size * 432_000 / MIB)
    doc_pem = {"status": "ok", "note": data.fill("", "-----BEGIN PRIVATE KEY-----", result)}
    doc_plain = {"status": "ok", "note": data.ordinary(result, seed=2)}
    pairs["json/key headers"] = (lambda: red.json(doc_pem), lambda: red.json(doc_plain))
    return pairs, masks


def run(quick: bool = False) -> list[Figure]:
    size = MIB // 4 if quick else MIB
    plan = QUICK if quick else FULL
    pairs, masks = _pairs(size)
    t: dict[str, tuple[list[float], list[float]]] = {}
    for name, (fn, base) in pairs.items():        # each against ordinary text timed right beside it
        got = time_interleaved({"crafted": fn, "ordinary": base}, plan)
        t[name] = (got["crafted"], got["ordinary"])
    g = dict(group=NAME)
    scale = MIB / size / 1e6                       # ns a call -> ms a MB
    shapes = [f"{rule}/{kind}" for rule, kind in data.shapes()]
    ordinary = [ns * scale for name in shapes for ns in t[name][1]]
    figs = [summarize("ordinary text, per MB", ordinary, "ms", iterations=1,
                      notes="prose, JSON order records, log lines: its runs beside every shape, pooled", **g)]
    ratios = {name: [a / b for a, b in zip(*t[name], strict=True)] for name in t}
    worst = max(shapes, key=lambda name: statistics.median(ratios[name]))
    figs.append(summarize("worst crafted shape / ordinary", ratios[worst], "x", iterations=1,
                          notes=f"the highest median of {len(shapes)} shapes: {worst}", **g))
    for rule, kinds in data.SHAPES.items():
        name = max((f"{rule}/{k}" for k in kinds), key=lambda n: statistics.median(ratios[n]))
        figs.append(summarize(f"{rule}: worst of its shapes / ordinary", ratios[name], "x", iterations=1,
                              notes=name.split("/")[1], **g))
    for name in data.DENSE:
        key = f"dense/{name}"
        per_mask = [(a - b) / 1e3 / masks[key] for a, b in zip(*t[key], strict=True)]
        figs += [summarize(f"text made of {name} only / ordinary", ratios[key], "x", iterations=1,
                           notes=f"{masks[key] * MIB // size:,} secrets a MB, every one masked; no target", **g),
                 summarize(f"text made of {name} only: time per masked secret", per_mask, "µs", iterations=1,
                           notes="over the ordinary text's time", **g)]
    figs += [summarize("shown (every output format): 1 MB JWT-like agent name / ordinary",
                       ratios["shown/jwt-like name"], "x", iterations=1, **g),
             summarize("Redactor.json (capture on): 432 KB tool result of key headers / ordinary",
                       ratios["json/key headers"], "x", iterations=1, **g)]
    return figs


def summary(figures: list[Figure]) -> str:
    by = {f.name: f for f in figures}
    ordinary, worst = by.get("ordinary text, per MB"), by.get("worst crafted shape / ordinary")
    if ordinary is None or worst is None:
        return ""
    dense = [f for f in figures if f.name.endswith("time per masked secret")]
    cost = max((f.median for f in dense), default=0.0)
    return (f"Ordinary text costs {ordinary.median:.0f} ms a MB through the 21 rules; the slowest crafted shape "
            f"{worst.median:.2f} x that. Text made only of secrets costs the masks on top: about {cost:.1f} µs a "
            "masked secret (RE2's call and the Python around it), linear in the number of secrets, which is at "
            "most the text's length over the shortest secret; it is reported, not held to the 2 x target.")


if __name__ == "__main__":
    module_main(run)
