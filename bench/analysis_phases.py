"""Where the time of ``agentobs report`` goes: the library's own pieces, timed in the order the report calls them.

``timed_report(path)`` runs what ``agentobs report FILE --out report.json`` runs (``load_sources``, then
``analyze_spans``, then the terminal tables and the JSON file), with the functions ``analyze_spans`` calls
wrapped by timers for the duration of the call (module attributes of ``agentobs.analysis.report.local``,
``agentobs.analysis.report.summary`` and ``agentobs.analysis.derive.pricing``, restored afterwards; the library is
not changed):

* ``load``: ``sources.load_sources`` (read, parse, flatten, structural checks);
* ``runs table``: ``runs.derive_runs`` less the pricing inside it (dialects, run identity, every column);
* ``pricing``: ``pricing.price_calls`` (model calls without a recorded cost, priced with genai-prices' terms);
* ``signatures``: ``signatures.classify``, ``summarize`` and the examples' ``evidence``;
* ``percentiles``: ``limits.percentiles`` and ``segment_percentiles`` (with the exact bootstrap intervals);
* ``caps``: ``limits.recommend_all``;
* ``other analysis``: what ``analyze_spans`` does between those (overview, labels, unplaced calls, growth);
* ``render: terminal``: ``view.report_view`` and the CLI's ``print_view`` (a console writing to /dev/null);
* ``render: JSON``: ``Report.to_dict``, the CLI's ``json_text`` and the file written.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

PHASES = ("load", "runs table", "pricing", "signatures", "percentiles", "caps", "other analysis",
          "render: terminal", "render: JSON")

# the names analyze_spans calls (module attributes of agentobs.analysis.report.local, and of report.summary for
# what summarize_runs calls) -> phase
_LOCAL_CALLS = {"derive_runs": "runs table"}
_REPORT_CALLS = {"classify": "signatures", "summarize": "signatures", "evidence": "signatures",
                 "percentiles": "percentiles", "segment_percentiles": "percentiles", "recommend_all": "caps"}


class _Clock:
    def __init__(self) -> None:
        self.spent: dict[str, float] = {p: 0.0 for p in PHASES}

    def wrap(self, phase: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*a: Any, **kw: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                self.spent[phase] += time.perf_counter() - t0
        return timed


@contextlib.contextmanager
def _patched(clock: _Clock) -> Iterator[None]:
    from agentobs.analysis.derive import pricing
    from agentobs.analysis.report import local, summary
    calls = [(local, name, phase) for name, phase in _LOCAL_CALLS.items()] + \
        [(summary, name, phase) for name, phase in _REPORT_CALLS.items()]
    saved = [(module, name, getattr(module, name)) for module, name, _ in calls]
    saved_price = pricing.price_calls
    try:
        for (module, name, phase), (_, _, fn) in zip(calls, saved, strict=True):
            setattr(module, name, clock.wrap(phase, fn))
        pricing.price_calls = clock.wrap("pricing", saved_price)
        yield
    finally:
        for module, name, fn in saved:
            setattr(module, name, fn)
        pricing.price_calls = saved_price


def timed_report(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Seconds per phase (``PHASES``) of one report on ``path``, their total, and the report's size."""
    from agentobs.analysis.load.sources import load_sources
    from agentobs.analysis.report.local import analyze_spans
    from agentobs.analysis.report.view import report_view
    from agentobs.cli import render, terminal
    from agentobs.contract.files import write_text

    clock = _Clock()
    t0 = time.perf_counter()
    ss = load_sources([str(path)])
    t1 = time.perf_counter()
    clock.spent["load"] = t1 - t0
    with _patched(clock):
        r = analyze_spans(ss, None, [str(path)])
    t2 = time.perf_counter()
    clock.spent["runs table"] -= clock.spent["pricing"]      # price_calls runs inside derive_runs
    inside = sum(clock.spent[p] for p in ("runs table", "pricing", "signatures", "percentiles", "caps"))
    clock.spent["other analysis"] = (t2 - t1) - inside
    # the console follows sys.stdout (it has no file of its own): redirect that, never pin the console to a stream
    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
        terminal.print_view(report_view(r))
    t3 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        write_text(Path(d) / "report.json", render.json_text(r.to_dict(), indent=1) + "\n")
    t4 = time.perf_counter()
    clock.spent["render: terminal"] = t3 - t2
    clock.spent["render: JSON"] = t4 - t3
    return {"phases": clock.spent, "total": t4 - t0, "runs": len(r.runs), "spans": len(r.spans),
            "careful_path": int(r.quality.count("careful_path"))}
