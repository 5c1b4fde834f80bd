"""The report and a trace on the terminal, from the view model (``agentobs.analysis.view``).

Layout only: the same sections, tables and lines as the HTML page. Every cell goes through ``render``, which
shows text from traces as plain text (never markup, never control codes).
"""
from __future__ import annotations

from ..analysis.view import Line, ReportView, Table
from .layout import Col
from .render import say, table


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
