"""Tables laid out to a width, every key cell whole: the terminal's tables (report, caps, signatures, runs, trace).

``lay_out`` turns a title, columns and rows of plain strings into lines for a width:

1. at their natural widths when they fit (or when there is no width: piped output is never cut or wrapped);
2. else text columns wrap at spaces (a number never wraps: a right-aligned column keeps its widest cell);
3. else the secondary columns (not ``key``), the rightmost first, move below the table: one line per row,
   ``<row name>: <column> <value> · ...``, wrapped at spaces;
4. else, when even the key columns do not fit, each row is stacked: its name, then ``<column> <value>`` pairs.

So a number, a name or a recommended value is never cut: the only text ever split inside a word is a word wider
than the whole width (an id longer than the terminal). Cells are cleaned text (``safe_text.clean``); widths are
terminal cells (``rich.cells.cell_len``). Rendering only: nothing here knows what a table means.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.cells import cell_len

GAP = 2                       # spaces between two columns
READABLE = 24                 # a secondary text column narrower than this moves below instead of wrapping
BELOW_JOIN = " · "


@dataclass(frozen=True, kw_only=True)
class Col:
    name: str
    right: bool = False       # a number: right-aligned, never wrapped or cut
    key: bool = False         # kept in the table at any width (the first column always is)
    wrap: bool = True         # text that may wrap at spaces (a right-aligned column never does)


@dataclass(frozen=True, kw_only=True)
class Line:
    text: str
    bold: tuple[tuple[int, int], ...] = ()      # character ranges shown in bold (headers, strong cells)
    italic: bool = False                         # the title


@dataclass(kw_only=True)
class Grid:
    """A table's cells as given: ``rows[r][c]``; ``strong[r][c]`` marks a cell shown in bold; ``lead``/``hang``
    per row: what the first cell's first line and its further lines start with (a tree's lines), never wrapped."""
    columns: Sequence[Col]
    rows: Sequence[Sequence[str]]
    strong: Sequence[Sequence[bool]] | None = None
    lead: Sequence[str] | None = None
    hang: Sequence[str] | None = None
    _max: list[int] = field(default_factory=list)


def width_of(s: str) -> int:
    return len(s) if s.isascii() else cell_len(s)


def _longest_word(s: str) -> int:
    return max((width_of(w) for w in s.split()), default=0)


def lay_out(title: str, grid: Grid, width: int | None) -> list[Line]:
    """The lines of the table for ``width`` terminal cells (None: no limit)."""
    cols = list(grid.columns)
    out = [Line(text=t, italic=True) for t in wrap(title, width)] if title else []
    if not cols:
        return out
    most = _max_widths(grid)
    if width is None or _total(most) <= width:
        return out + _table(grid, list(range(len(cols))), most)
    least = _min_widths(grid)
    shown = list(range(len(cols)))
    movable = [i for i in reversed(shown[1:]) if not cols[i].key]
    while _total([least[i] for i in shown]) > width and movable:
        shown.remove(movable.pop(0))
    if _total([least[i] for i in shown]) > width:
        return out + _stacked(grid, width)
    widths = _allocate([least[i] for i in shown], [most[i] for i in shown], width)
    full = [0] * len(cols)
    for i, w in zip(shown, widths, strict=True):
        full[i] = w
    return out + _table(grid, shown, full) + _below(grid, [i for i in range(len(cols)) if i not in shown], width)


def _total(widths: Sequence[int]) -> int:
    return sum(widths) + GAP * max(len(widths) - 1, 0)


def _max_widths(grid: Grid) -> list[int]:
    if grid._max:
        return grid._max
    out = []
    for i, c in enumerate(grid.columns):
        cells = (r[i] for r in grid.rows)
        if i == 0 and grid.lead is not None:
            cells = (lead + text for lead, text in zip(grid.lead, cells, strict=True))
        out.append(max(width_of(c.name), max((width_of(x) for x in cells), default=0)))
    grid._max = out
    return out


def _min_widths(grid: Grid) -> list[int]:
    """The narrowest each column can be with every cell whole: a number's widest cell, a text's longest word (a
    header wraps at its spaces); a secondary text column at least ``READABLE`` (or its widest cell): one word
    a line is no way to read a sentence."""
    out = []
    for i, c in enumerate(grid.columns):
        head = _longest_word(c.name)
        if c.right or not c.wrap:
            out.append(max(head, _max_widths(grid)[i]))
            continue
        words = [_longest_word(r[i]) for r in grid.rows]
        if i == 0 and grid.lead is not None:
            hang = grid.hang or grid.lead
            words = [max(width_of(a), width_of(b)) + w for a, b, w in zip(grid.lead, hang, words, strict=True)]
        least = max(head, max(words, default=0))
        if not (c.key or i == 0):
            least = max(least, min(READABLE, _max_widths(grid)[i]))
        out.append(least)
    return out


def _allocate(least: list[int], most: list[int], width: int) -> list[int]:
    """From the narrowest widths up, the room left shared among the columns that want more, in proportion."""
    widths = list(least)
    spare = width - _total(least)
    want = [m - w for m, w in zip(most, widths, strict=True)]
    need = sum(want)
    if need <= 0 or spare <= 0:
        return widths
    given = [min(w, spare * w // need) for w in want]
    left = spare - sum(given)
    for i, w in enumerate(want):              # what the rounding left, to the first columns that still want it
        extra = min(left, w - given[i])
        given[i] += extra
        left -= extra
    return [w + g for w, g in zip(widths, given, strict=True)]


def wrap(text: str, width: int | None, indent: str = "", *, first: str = "") -> list[str]:
    """``first + text`` in lines of at most ``width`` cells, ``text`` broken at spaces; further lines start with
    ``indent``. A word wider than a line is split (the only cut, and nothing is lost)."""
    if width is None or width_of(first) + width_of(text) <= width:
        return [first + text]
    lines: list[str] = []
    line, used, placed = first, width_of(first), False
    for word in text.split():
        w = width_of(word)
        if used + (1 if placed else 0) + w <= width:
            line, used, placed = (f"{line} {word}", used + 1 + w, True) if placed else (line + word, used + w, True)
            continue
        if placed or line.strip():            # the word goes to the next line
            lines.append(line.rstrip())
            line, used = indent, width_of(indent)
        while used + w > width:               # one word wider than a whole line: split
            head = _fit(word, max(width - used, 1))
            lines.append(line + head)
            line, used = indent, width_of(indent)
            word = word[len(head):]
            w = width_of(word)
        line, used, placed = line + word, used + w, True
    lines.append(line)
    return lines


def _fit(word: str, room: int) -> str:
    """The longest start of ``word`` of at most ``room`` cells (one character at least)."""
    if word.isascii():
        return word[:max(room, 1)]
    used = 0
    for k, ch in enumerate(word):
        used += cell_len(ch)
        if used > room:
            return word[:max(k, 1)]
    return word


def _pad(text: str, width: int, right: bool) -> str:
    gap = width - width_of(text)
    if gap <= 0:
        return text
    return " " * gap + text if right else text + " " * gap


def _table(grid: Grid, shown: list[int], widths: list[int]) -> list[Line]:
    cols = grid.columns
    heads = [wrap(cols[i].name, widths[i]) for i in shown]
    lines = _join([[_pad(h, widths[i], cols[i].right) for h in hs] for i, hs in zip(shown, heads, strict=True)],
                  [widths[i] for i in shown], bold_all=True)
    for r, row in enumerate(grid.rows):
        cells = []
        for i in shown:
            text, w = row[i], widths[i]
            if i == 0 and grid.lead is not None:
                lead = grid.lead[r]
                hang = grid.hang[r] if grid.hang is not None else lead
                parts = wrap(text, w, hang, first=lead)
            elif cols[i].right or width_of(text) <= w:
                parts = [text]
            else:
                parts = wrap(text, w)
            cells.append([_pad(p, w, cols[i].right) for p in parts])
        strong = [bool(grid.strong and grid.strong[r][i]) for i in shown]
        lines += _join(cells, [widths[i] for i in shown], strong=strong)
    return lines


def _join(cells: list[list[str]], widths: list[int], *, bold_all: bool = False,
          strong: list[bool] | None = None) -> list[Line]:
    height = max((len(c) for c in cells), default=0)
    out = []
    for k in range(height):
        parts, bold, x = [], [], 0
        for j, c in enumerate(cells):
            piece = c[k] if k < len(c) else " " * widths[j]
            if bold_all or (strong and strong[j] and piece.strip()):
                bold.append((x, x + len(piece)))
            parts.append(piece)
            x += len(piece) + GAP
        text = (" " * GAP).join(parts).rstrip()
        out.append(Line(text=text, bold=tuple((a, min(b, len(text))) for a, b in bold if a < len(text))))
    return out


def _pairs(grid: Grid, row: Sequence[str], which: list[int]) -> str:
    """``<column> <value>`` for each of ``which`` that has a value (``<column>: <value>`` when the value has
    spaces)."""
    return BELOW_JOIN.join(f"{grid.columns[i].name}{':' if ' ' in row[i] else ''} {row[i]}" for i in which
                           if row[i] not in ("", "–"))


def _below(grid: Grid, moved: list[int], width: int) -> list[Line]:
    """The columns moved out of the table: one entry per row that has a value in them, wrapped at spaces."""
    if not moved:
        return []
    out = []
    for row in grid.rows:
        said = _pairs(grid, row, moved)
        if said:
            out += [Line(text=t) for t in wrap(said, width, "    ", first=f"{row[0]} — ")]
    return out


def _stacked(grid: Grid, width: int) -> list[Line]:
    """Each row on its own: its name, then every other column as ``<column> <value>``, wrapped at spaces."""
    out = []
    rest = list(range(1, len(grid.columns)))
    for r, row in enumerate(grid.rows):
        lead = grid.lead[r] if grid.lead is not None else ""
        hang = grid.hang[r] if grid.hang is not None else lead
        out += [Line(text=t, bold=((len(lead), len(t)),) if k == 0 else ())
                for k, t in enumerate(wrap(row[0], width, hang, first=lead))]
        said = _pairs(grid, row, rest)
        if said:
            out += [Line(text=t) for t in wrap(said, width, "    ", first="  ")]
    return out
