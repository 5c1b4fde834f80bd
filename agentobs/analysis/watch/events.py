"""What ``agentobs watch`` reports: a run in flight that crossed a cap (``Event``), and what the watch saw (``Stats``).
"""
from __future__ import annotations

import math
import statistics
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from .caps import Cap

DELAYS_KEPT = 10_000            # the last delays kept for the summary's percentiles (memory stays bounded)


@dataclass(frozen=True, kw_only=True)
class Event:
    """A run crossed a cap. Times: ``crossed_at`` and ``run_started`` on the trace's clock (span times, UTC);
    ``arrived_at`` (when the spans that made the run cross were read) and ``reported_at`` on this machine's."""
    run_id: str                      # a run in flight: its trace id; one that ended: as the batch analysis names it
    trace_id: str
    anchor: str                      # its root span's id (in flight: the id its root span will have)
    service: str | None
    agent: str | None
    cap: Cap
    value: float
    crossed_at: datetime | None      # the end of the span whose arrival took the run past the cap
    run_started: datetime | None
    running: bool                    # False: the run had ended when its crossing was seen (its root span arrived)
    arrived_at: float
    reported_at: float

    @property
    def delay_s(self) -> float:
        return self.reported_at - self.arrived_at

    def to_dict(self) -> dict[str, Any]:
        return {"event": "cap_crossed", "run_id": self.run_id, "trace_id": self.trace_id,
                "root_span_id": self.anchor, "service": self.service,
                "agent": self.agent, "limit": self.cap.limit, "dimension": self.cap.dimension,
                "cap": _plain(self.cap.value), "value": _plain(self.value), "at_cap": self.cap.at_cap,
                "crossed_at": _iso(self.crossed_at), "run_started": _iso(self.run_started),
                "running": self.running, "cutoff_share": self.cap.cutoff_share,
                "successful_runs": self.cap.successful_runs, "arrived_at": _iso(_utc(self.arrived_at)),
                "reported_at": _iso(_utc(self.reported_at)), "delay_s": round(self.delay_s, 6)}

    def line(self) -> str:
        """One line: when, the run, the cap and the value, since when, then what else is known."""
        past = ">=" if self.cap.at_cap else ">"
        now = _utc(self.reported_at)
        since = f"since {_clock(self.crossed_at, now)}" if self.crossed_at else "since (unknown)"
        started = f"run started {_clock(self.run_started, now)}" if self.run_started else ""
        extra = [x for x in (started, "running" if self.running else "already ended",
                             f"agent {self.agent}" if self.agent else "",
                             f"service {self.service}" if self.service else "", self.cap.cutoff_text()) if x]
        return (f"{_clock(_utc(self.reported_at))}  run {self.run_id}  {self.cap.limit} {_number(self.value)} {past} "
                f"{_number(self.cap.value)}  {since}  ({'; '.join(extra)})")


@dataclass
class Stats:
    batches: int = 0
    spans: int = 0
    runs_finished: int = 0           # runs whose root span arrived
    traces_idle: int = 0             # traces let go after the idle time without their root
    events: int = 0
    held_spans_max: int = 0
    held_traces_max: int = 0
    source_issues: int = 0           # lines or spans of the input that could not be read
    failed_traces: int = 0           # traces let go because deriving their runs failed (a bug: first_failure)
    first_failure: str | None = None
    delays: deque[float] = field(default_factory=lambda: deque(maxlen=DELAYS_KEPT))

    def delay_percentiles(self) -> dict[str, float] | None:
        if not self.delays:
            return None
        xs = sorted(self.delays)
        q = statistics.quantiles(xs, n=100, method="inclusive") if len(xs) > 1 else [xs[0]] * 99
        return {"p50": q[49], "p99": q[98], "max": xs[-1]}

    def to_dict(self) -> dict[str, Any]:
        return {"event": "summary", "batches": self.batches, "spans": self.spans,
                "runs_finished": self.runs_finished, "traces_idle": self.traces_idle, "events": self.events,
                "held_spans_max": self.held_spans_max, "held_traces_max": self.held_traces_max,
                "source_issues": self.source_issues, "failed_traces": self.failed_traces,
                "first_failure": self.first_failure, "delay_s": self.delay_percentiles()}

    def line(self) -> str:
        d = self.delay_percentiles()
        delay = f"; delay from arrival to event p50 {d['p50']:.3f} s, p99 {d['p99']:.3f} s" if d else ""
        issues = f"; {self.source_issues} unreadable lines or spans" if self.source_issues else ""
        if self.failed_traces:
            issues += f"; {self.failed_traces} traces let go unchecked: {self.first_failure}"
        return (f"watched {self.spans:,} spans in {self.batches:,} batches: {self.events} events, "
                f"{self.runs_finished:,} runs finished, {self.traces_idle:,} traces let go idle; at most "
                f"{self.held_traces_max:,} traces ({self.held_spans_max:,} spans) held{delay}{issues}")


def _utc(t: float) -> datetime:
    return datetime.fromtimestamp(t, UTC)


def _iso(t: datetime | None) -> str | None:
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z") if t else None


def _clock(t: datetime | None, day: datetime | None = None) -> str:
    """``t`` (UTC) to the second; to the millisecond, without the date, when it is on ``day``'s date."""
    if t is None:
        return "?"
    if day is not None and t.date() == day.date():
        return t.strftime("%H:%M:%S.%f")[:-3]
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _plain(v: float) -> float | int:
    return int(v) if math.isfinite(v) and float(v).is_integer() and abs(v) < 2**53 else float(v)


def _number(v: float) -> str:
    return str(_plain(v)) if float(v).is_integer() else f"{v:.6g}"
