"""The report and a trace on the terminal, from the view model (``agentobs.analysis.report.view``).

Layout only: the same sections, tables and lines as the HTML page. Every cell goes through ``render``, which
shows text from traces as plain text (never markup, never control codes).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..analysis.report.view import Line, Listing, ReportView, Table, TraceView
from .layout import Col, Grid, lay_out
from .render import print_lines, say, table, width
from .safe_text import clean

TREE_LEVELS = 16            # tree lines drawn for the nearest levels; a deeper span shows its depth before them


def print_view(view: ReportView, *, sections: tuple[str, ...] | None = None) -> None:
    """The summary lines, then each section (or only those named, by key prefix)."""
    if sections is None:
        for line in view.summary:
            print_line(line)
    for s in view.sections:
        if sections is not None and not s.key.startswith(sections):
            continue
        for block in s.blocks:
            if isinstance(block, Table):
                if block.terminal:
                    print_table(block)
            else:
                print_line(block)


def print_table(t: Table) -> None:
    """The table laid out to the terminal's width: its key columns (``Column.key``, and the first) kept whole in
    it, the others moved below it when it does not fit (``layout``)."""
    keep = [i for i, c in enumerate(t.columns) if c.terminal]
    cols = [Col(name=t.columns[i].name, right=t.columns[i].align == "right", key=k == 0 or t.columns[i].key)
            for k, i in enumerate(keep)]
    table(t.title, cols, ([r[i].text for i in keep] for r in t.rows),
          strong=[[r[i].strong for i in keep] for r in t.rows])


def print_line(line: Line) -> None:
    if line.level == "warning":
        say(("warning:", "yellow"), " ", line.text)
    else:
        say(line.text)


def print_listing(view: Listing) -> None:
    """A table of many rows (the runs table), laid out like every table; text cleaned once per distinct value."""
    cols = [Col(name=c.name, right=c.align == "right", key=k == 0 or c.key) for k, c in enumerate(view.columns)]
    cells = [col if c.right else _cleaned(col) for c, col in zip(cols, view.cells, strict=True)]
    print_lines(lay_out(clean(view.title), Grid(columns=cols, cells=cells), width()))


def print_trace(view: TraceView) -> None:
    """A trace's span tree: the tree lines and names in the first column, laid out like every table (``layout``).
    Text from the trace is cleaned once per distinct value."""
    w = width()
    levels = TREE_LEVELS if w is None else max(2, min(TREE_LEVELS, (w - 40) // 6))
    lead, hang = tree_lines(view.parent, view.depth, view.last, levels)
    cols = [Col(name=c.name, right=c.align == "right", key=k == 0 or c.key) for k, c in enumerate(view.columns)]
    cells = [col if c.right else _cleaned(col) for c, col in zip(cols, view.cells, strict=True)]
    print_lines(lay_out(clean(view.title), Grid(columns=cols, cells=cells, lead=lead, hang=hang), w))


def _cleaned(texts: list[str]) -> list[str]:
    """Each text cleaned (``safe_text.clean``), once per distinct value."""
    done = {v: clean(v) for v in set(texts)}
    return [done[v] for v in texts]


def tree_lines(parent: np.ndarray, depth: np.ndarray, last: np.ndarray, levels: int
               ) -> tuple[list[str], list[str]]:
    """Per row (parents before children): what its name's first line starts with (``├─ `` or ``└─ `` after its
    ancestors' lines) and what its further lines start with. The nearest ``levels`` ancestors are drawn; a deeper
    row starts with its depth, ``[1,234]``. One pass, each row's lines built from its parent's (the same lines are
    made once: every row of a long chain shares them). Only narrow characters: a line's width is its length."""
    up: Sequence[int] = parent.tolist()
    deep: Sequence[int] = depth.tolist()
    end: Sequence[bool] = last.tolist()
    keep = 3 * levels
    below: list[str] = [""] * len(up)          # what a row's children draw of the levels above them
    lead: list[str] = [""] * len(up)
    hang: list[str] = [""] * len(up)
    made: dict[tuple[str, bool], tuple[str, str]] = {}
    for i, p in enumerate(up):
        if p < 0:
            continue
        key = (below[p], end[i])
        got = made.get(key)
        if got is None:
            above = key[0]
            mine = above + ("   " if end[i] else "│  ")
            got = made[key] = (mine[-keep:] if len(mine) > keep else mine, above + ("└─ " if end[i] else "├─ "))
        below[i], lead[i] = got
        if deep[i] > levels + 1:
            mark = f"[{deep[i]:,}] "
            lead[i] = mark + got[1]
            hang[i] = " " * len(mark) + got[0]
        else:
            hang[i] = got[0]
    return lead, hang
