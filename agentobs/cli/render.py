"""Terminal rendering helpers (rich). Library code never prints; the CLI does, through these.

Everything printed is built here from plain strings: every value goes through ``safe_text.clean`` and becomes a
``rich.text.Text``, so text from traces is never parsed as markup and never reaches the terminal as control
codes. Our own styling is given as ``(text, style)`` pairs, not as markup.
"""
from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.text import Text

from .safe_text import clean

if TYPE_CHECKING:                    # (layout loads numpy: imported when a table is printed)
    from .layout import Col, Out

# markup and emoji codes off: a string that slips through unwrapped is still shown literally
console = Console(highlight=False, markup=False, emoji=False)
# progress bars go to standard error, and only to a terminal: standard output holds the result alone
errors = Console(stderr=True, highlight=False, markup=False, emoji=False)

Part = Any                           # a value shown as plain text, or a (value, style) pair


def width() -> int | None:
    """The width output is laid out to: ``COLUMNS`` when it is set, else the terminal's; None when standard output
    is no terminal (piped or captured), where nothing is cut or wrapped."""
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    return console.size.width if on_terminal() else None


def on_terminal(where: Console | None = None) -> bool:
    """Whether standard output (or ``where``'s file) is a terminal; not rich's ``is_terminal``, which FORCE_COLOR
    makes true in a pipe: colours may go down a pipe, but a table's width, a CSV's place and a progress bar follow
    where the text really goes."""
    try:
        return bool((where or console).file.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def text(*parts: Part) -> Text:
    """One line from plain values and ``(value, style)`` pairs; every value is cleaned, none is markup.
    A part is not shortened (a line may name many files): shorten each long value with ``clean`` first."""
    out = Text()
    for p in parts:
        if isinstance(p, Text):
            out.append_text(p)
        elif isinstance(p, tuple):
            out.append(clean(p[0], None), style=p[1])
        else:
            out.append(clean(p, None))
    return out


def say(*parts: Part) -> None:
    """Prints one line built by ``text``: wrapped at spaces to the width, never when piped."""
    console.print(text(*parts), soft_wrap=width() is None)


def blank() -> None:
    console.print()


def print_lines(lines: Iterable[Out]) -> None:
    """Lines laid out by ``layout`` (cleaned already), as they are: rich neither wraps nor crops them. Lines
    without style are written in batches (a trace's table may have hundreds of thousands)."""
    plain: list[str] = []
    for line in lines:
        if isinstance(line, str):
            plain.append(line)
            if len(plain) >= 4096:
                _write(plain)
            continue
        _write(plain)
        t = Text(line.text, style="italic" if line.italic else "")
        for a, b in line.bold:
            t.stylize("bold", a, b)
        console.print(t, soft_wrap=True)
    _write(plain)


def _write(plain: list[str]) -> None:
    if plain:
        console.file.write("\n".join(plain) + "\n")
        plain.clear()


def table(title: Part, columns: Sequence[tuple[str, str] | Col], rows: Iterable[Iterable[Any]], *,
          strong: Sequence[Sequence[bool]] | None = None) -> None:
    """Prints a table laid out to the width (``layout.lay_out``): ``columns`` are ``(name, "left"|"right")`` pairs
    or ``Col``s; every cell is cleaned. The first column and the right-aligned ones are kept in the table at any
    width unless ``Col``s say otherwise."""
    from .layout import Col, Grid, lay_out
    cols = [c if isinstance(c, Col) else Col(name=clean(c[0]), right=c[1] == "right", key=c[1] == "right")
            for c in columns]
    cells = [[clean(x) for x in r] for r in rows]
    print_lines(lay_out(clean(title), Grid.of_rows(cols, cells, strong=strong), width()))


def jsonable(o: Any) -> Any:
    """``o`` with only values JSON can hold: NaN and infinities become null, numpy and pandas values plain
    ones, anything else its string; keys become strings as ``json.dumps`` would make them."""
    import numpy as np  # imported here: a command's --help needs neither
    import pandas as pd
    if isinstance(o, dict):
        return {_key(k): jsonable(v) for k, v in o.items()}
    if isinstance(o, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in o]
    if isinstance(o, str):
        from ..contract.redaction import secrets_masked
        return secrets_masked(o)                      # secrets masked, as everywhere agentobs shows text
    if o is None or isinstance(o, bool):
        return o
    if isinstance(o, int):
        return int(o)
    if isinstance(o, float):
        return float(o) if math.isfinite(o) else None
    if isinstance(o, (np.generic, np.ndarray, pd.Series, pd.Index)):
        return jsonable(o.tolist())
    try:
        if pd.isna(o) is True:               # pd.NA, pd.NaT
            return None
    except (TypeError, ValueError):
        pass
    return str(o)


def _key(k: Any) -> str:
    v = jsonable(k)
    return v if isinstance(v, str) else json.dumps(v)


def json_text(o: Any, indent: int | None = None) -> str:
    """Valid JSON (``json.loads`` with default settings reads it back), ASCII only, for any report value; ``<``,
    ``>`` and ``&`` are written as ``\\u`` escapes (the same values), so that no text from a trace is markup where a
    browser or a web server takes the file for HTML (a report saved as ``x.html`` with ``--format json``)."""
    text = json.dumps(jsonable(o), indent=indent, allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")   # (only in strings)


def json_lines(objs: Iterable[dict[str, Any]]) -> None:
    for o in objs:
        click.echo(json_text(o))


def write_text(path: Any, text: str, *, mode: int = 0o666) -> None:
    """``agentobs.contract.files.write_text``, imported when a file is written: a command's ``--help`` loads no
    contract. ``-`` is standard output (never a file named ``-``)."""
    if str(path) == "-":
        click.echo(text, nl=False)
        return
    from ..contract.files import write_text as write
    write(path, text, mode=mode)
