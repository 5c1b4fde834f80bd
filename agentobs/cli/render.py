"""Terminal rendering helpers (rich). Library code never prints; the CLI does, through these."""
from __future__ import annotations

import json
from typing import Any, Iterable

import click
from rich.console import Console
from rich.table import Table

console = Console(highlight=False)
if not console.is_terminal:          # piped or captured: never truncate a table to 80 columns
    console.width = 220


def table(title: str, columns: list[tuple[str, str]], rows: Iterable[Iterable[Any]]) -> Table:
    t = Table(title=title, title_justify="left", box=None, pad_edge=False, header_style="bold")
    for name, justify in columns:
        t.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for r in rows:
        t.add_row(*[str(x) for x in r])
    return t


def json_lines(objs: Iterable[dict[str, Any]]) -> None:
    for o in objs:
        click.echo(json.dumps(o))
