"""The crash matrix: every boundary of the loop x every scenario with a write.

For each cell, every occurrence of the boundary in an uninterrupted run is tried: the run
is killed there and recovered from its last checkpoint. The effects are compared with the
uninterrupted run's ledger: duplicated (an effect more often), lost (an effect missing)
and extra (an effect the uninterrupted run did not have).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from ..kernel.checkpoint import SQLiteCheckpointStore
from ..kernel.events import EventLog
from ..kernel.faults import BOUNDARIES
from .scenarios import APPROVED, SEED000_SPECS, SEED004_SPECS, Spec, crash_and_recover, run

WRITE_SCENARIOS: list[Spec] = [SEED000_SPECS[0], SEED000_SPECS[4], SEED000_SPECS[5], SEED000_SPECS[7], APPROVED,
                               *(s for s in SEED004_SPECS if s.name in ("approval_denied", "tool_down_replan",
                                                                         "budget_usd"))]


@dataclass(frozen=True)
class Cell:
    scenario: str
    boundary: str
    crashes: int          # occurrences of the boundary in the uninterrupted run, each crashed once
    duplicated: int
    lost: int
    extra: int
    same_stop: int        # recovered runs that ended with the uninterrupted run's stop reason


def _diff(base: Sequence[Hashable], got: Sequence[Hashable]) -> tuple[int, int, int]:
    b, g = Counter(base), Counter(got)
    dup = sum(max(0, g[e] - b[e]) for e in g if e in b)
    lost = sum(max(0, b[e] - g[e]) for e in b)
    extra = sum(n for e, n in g.items() if e not in b)
    return dup, lost, extra


def matrix(specs: list[Spec] | None = None) -> list[Cell]:
    cells = []
    for spec in specs or WRITE_SCENARIOS:
        log = EventLog()
        base = run(spec, [log], checkpoints=SQLiteCheckpointStore(":memory:"))
        for boundary, kind in BOUNDARIES.items():
            n = len(log.of(kind))
            dup = lost = extra = same = 0
            for nth in range(1, n + 1):
                r = crash_and_recover(spec, boundary, nth)
                d, lo, ex = _diff(base.desk.effects, r.desk.effects)
                dup, lost, extra, same = dup + d, lost + lo, extra + ex, same + (r.state.stop == base.state.stop)
            cells.append(Cell(spec.name, boundary, n, dup, lost, extra, same))
    return cells
