"""Tables laid out to a width, every key cell whole: the terminal's tables (report, caps, signatures, runs, trace).

``lay_out`` turns a title, columns and their cells (plain, cleaned strings) into lines for a width:

1. at their natural widths when they fit (or when there is no width: piped output is never cut or wrapped);
2. else the key columns (``key``, and the first: the rows' names) keep their cells on one line and the secondary
   text columns wrap at spaces (a number never wraps), and when that is not enough the secondary columns move out of
   the table, the rightmost first, under each row: ``<column> <value> · ...``, indented, wrapped at spaces;
3. else, when the key columns alone do not fit on one line each, their text wraps at its spaces too;
4. else, when even that does not fit, each row is stacked: its name, then ``<column> <value>`` pairs.

So a number, a name or a recommended value is never cut: the only text ever split inside a word is a word wider
than the whole width (an id longer than the terminal). A secondary column with no value in any row is left out.
Widths are terminal cells (``rich.cells.cell_len``).

Why not ``rich.table.Table``: past its width it shrinks every column in proportion, numbers included (``1,4…``),
and it lays out each cell as a renderable (a 20,000-span trace took 37 s). Rows that fit their columns are padded
and joined a column at a time here (a 200,000-span trace in about a second); only rows with a cell to wrap are
laid out one by one. A line is a ``str``, or a ``Line`` when part of it is styled.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from rich.cells import cell_len

GAP = 2                       # spaces between two columns
READABLE = 24                 # a secondary text column narrower than this moves out of the table instead of wrapping
BELOW_JOIN = " · "
_SEP = " " * GAP


@dataclass(frozen=True, kw_only=True)
class Col:
    name: str
    right: bool = False       # a number: right-aligned, never wrapped or cut
    key: bool = False         # kept in the table at any width (the first column always is)
    wrap: bool = True         # text that may wrap at spaces (a right-aligned column never does)


@dataclass(frozen=True, kw_only=True)
class Line:
    """A line with style: ``bold`` character ranges (headers, strong cells), or all of it in italics (a title)."""
    text: str
    bold: tuple[tuple[int, int], ...] = ()
    italic: bool = False


Out = str | Line


def text_of(line: Out) -> str:
    return line if isinstance(line, str) else line.text


@dataclass(kw_only=True)
class Grid:
    """A table's cells a column at a time: ``cells[column][row]``; ``strong[row]`` the columns shown in bold in that
    row; ``lead``/``hang`` per row: what the first cell's first line and its further lines start with (a tree's
    lines), never wrapped."""
    columns: Sequence[Col]
    cells: Sequence[Sequence[str]]
    strong: Sequence[Sequence[bool]] | None = None
    lead: Sequence[str] | None = None         # (narrow characters only: a lead's width is its length)
    hang: Sequence[str] | None = None
    _widths: list[np.ndarray] = field(default_factory=list)
    _first: list[str] | None = None

    @staticmethod
    def of_rows(columns: Sequence[Col], rows: Sequence[Sequence[str]], **kw: object) -> Grid:
        cells = [list(c) for c in zip(*rows, strict=True)] if rows else [[] for _ in columns]
        return Grid(columns=columns, cells=cells, **kw)  # type: ignore[arg-type]

    @property
    def n_rows(self) -> int:
        return len(self.cells[0]) if self.cells else 0

    def first(self) -> list[str]:
        """The first column with each row's lead."""
        names = list(self.cells[0])
        if self.lead is None:
            return names
        if self._first is None:
            self._first = [a + b for a, b in zip(self.lead, names, strict=True)]
        return self._first

    def widths(self, i: int) -> np.ndarray:
        """The width of every cell of column ``i`` (the first with its lead)."""
        if not self._widths:
            self._widths = [_widths(list(c)) for c in self.cells]
            if self.lead is not None:
                self._widths[0] = self._widths[0] + np.fromiter(map(len, self.lead), dtype=np.int64,
                                                                count=len(self.lead))
        return self._widths[i]


def width_of(s: str) -> int:
    return len(s) if s.isascii() else cell_len(s)


def _widths(texts: list[str]) -> np.ndarray:
    out = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    wide = np.flatnonzero(~np.fromiter(map(str.isascii, texts), dtype=bool, count=len(texts)))
    for k in wide.tolist():
        out[k] = cell_len(texts[k])
    return out


def _longest_word(s: str) -> int:
    return max((width_of(w) for w in s.split()), default=0)


def lay_out(title: str, grid: Grid, width: int | None) -> list[Out]:
    """The lines of the table for ``width`` terminal cells (None: no limit)."""
    cols = list(grid.columns)
    out: list[Out] = [Line(text=t, italic=True) for t in wrap(title, width)] if title else []
    if not cols:
        return out
    cell = [int(grid.widths(i).max(initial=0)) for i in range(len(cols))]
    most = [max(width_of(c.name), w) for c, w in zip(cols, cell, strict=True)]
    shown = [i for i, c in enumerate(cols) if i == 0 or c.key or cell[i] > 0]   # an empty column says nothing
    if width is None or _total([most[i] for i in shown]) <= width:
        return out + _table(grid, shown, most, [], None)
    least = _min_widths(grid, cell, most)
    key = [i == 0 or c.key for i, c in enumerate(cols)]
    # first the key columns whole on one line each (their headers may wrap), the others as narrow as they can be;
    # the others move out of the table, the rightmost first, until that fits
    start = [max(cell[i], _longest_word(c.name)) if key[i] else least[i] for i, c in enumerate(cols)]
    movable = [i for i in reversed(shown[1:]) if not key[i]]
    moved: list[int] = []
    while _total([start[i] for i in shown]) > width and movable:
        moved.insert(0, movable.pop(0))
        shown.remove(moved[0])
    if _total([start[i] for i in shown]) > width:
        start = least                        # the key columns do not fit whole: their text wraps at its spaces
        if _total([least[i] for i in shown]) > width:
            return out + _stacked(grid, width)
    widths = _allocate([start[i] for i in shown], [most[i] for i in shown], width)
    full = [0] * len(cols)
    for i, w in zip(shown, widths, strict=True):
        full[i] = w
    return out + _table(grid, shown, full, moved, width)


def _total(widths: Sequence[int]) -> int:
    return sum(widths) + GAP * max(len(widths) - 1, 0)


def _min_widths(grid: Grid, cell: list[int], most: list[int]) -> list[int]:
    """The narrowest each column can be with every cell whole: a number's widest cell, a text's longest word (a
    header wraps at its spaces); a secondary text column at least ``READABLE`` (or its widest cell): one word
    a line is no way to read a sentence."""
    out = []
    for i, c in enumerate(grid.columns):
        head = _longest_word(c.name)
        if c.right or not c.wrap:
            out.append(max(head, cell[i]))
            continue
        longest = {v: _longest_word(v) for v in set(grid.cells[i])}
        words = [longest[v] for v in grid.cells[i]]
        if i == 0 and grid.lead is not None:
            hang = grid.hang or grid.lead
            words = [max(width_of(a), width_of(b)) + w for a, b, w in zip(grid.lead, hang, words, strict=True)]
        least = max(head, max(words, default=0))
        if not (c.key or i == 0):
            least = max(least, min(READABLE, most[i]))
        out.append(least)
    return out


def _allocate(least: list[int], most: list[int], width: int) -> list[int]:
    """From the narrowest widths up: the room left goes to the first column (the rows' names) up to its natural
    width, then to the others that want more, in proportion."""
    widths = list(least)
    spare = width - _total(least)
    if spare <= 0 or not widths:
        return widths
    first = min(spare, most[0] - widths[0])
    widths[0] += first
    spare -= first
    want = [max(m - w, 0) for m, w in zip(most, widths, strict=True)]
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


def _table(grid: Grid, shown: list[int], widths: list[int], moved: list[int], width: int | None) -> list[Out]:
    """The table of the ``shown`` columns; under each row, its values in the ``moved`` ones, wrapped at spaces.
    Rows whose cells all fit are padded and joined a column at a time; the others are laid out one by one."""
    cols, n = grid.columns, grid.n_rows
    heads = [wrap(cols[i].name, widths[i]) for i in shown]
    lines: list[Out] = list(_join([[_pad(h, widths[i], cols[i].right) for h in hs]
                                   for i, hs in zip(shown, heads, strict=True)],
                                  [widths[i] for i in shown], bold_all=True))
    slow = np.zeros(n, dtype=bool)
    for i in shown:
        slow |= grid.widths(i) > widths[i]
    if grid.strong is not None:
        slow |= np.array([any(s[i] for i in shown) for s in grid.strong], dtype=bool)
    under = _under(grid, moved, width) if moved else None
    fast = _padded(grid, shown, widths)
    for r in range(n):
        if slow[r]:
            lines += _row(grid, r, shown, widths)
        else:
            lines.append(fast[r])
        if under is not None and under[r]:
            lines += under[r]
    return lines


def _padded(grid: Grid, shown: list[int], widths: list[int]) -> list[str]:
    """Every row as one line with each cell padded to its column, a column at a time (rows whose cells are wider
    than their column are laid out by ``_row`` instead)."""
    columns = []
    for i in shown:
        texts = grid.first() if i == 0 else list(grid.cells[i])
        cells = grid.widths(i)
        wide = np.flatnonzero(cells != np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))).tolist()
        # (characters two cells wide, or none: padded by cells below)
        w = widths[i]
        padded = [t.rjust(w) for t in texts] if grid.columns[i].right else [t.ljust(w) for t in texts]
        for k in wide:
            padded[k] = " " * max(w - int(cells[k]), 0) + texts[k] if grid.columns[i].right else \
                texts[k] + " " * max(w - int(cells[k]), 0)
        columns.append(padded)
    return [_SEP.join(parts).rstrip() for parts in zip(*columns, strict=True)]


def _row(grid: Grid, r: int, shown: list[int], widths: list[int]) -> list[Out]:
    cols = grid.columns
    cells = []
    for i in shown:
        text, w = grid.cells[i][r], widths[i]
        if i == 0 and grid.lead is not None:
            lead = grid.lead[r]
            parts = wrap(text, w, grid.hang[r] if grid.hang is not None else lead, first=lead)
        elif cols[i].right or width_of(text) <= w:
            parts = [text]
        else:
            parts = wrap(text, w)
        cells.append([_pad(p, w, cols[i].right) for p in parts])
    strong = [bool(grid.strong and grid.strong[r][i]) for i in shown]
    return _join(cells, [widths[i] for i in shown], strong=strong)


def _join(cells: list[list[str]], widths: list[int], *, bold_all: bool = False,
          strong: list[bool] | None = None) -> list[Out]:
    height = max((len(c) for c in cells), default=0)
    out: list[Out] = []
    for k in range(height):
        parts, bold, x = [], [], 0
        for j, c in enumerate(cells):
            piece = c[k] if k < len(c) else " " * widths[j]
            if bold_all or (strong and strong[j] and piece.strip()):
                bold.append((x, x + len(piece)))
            parts.append(piece)
            x += len(piece) + GAP
        text = _SEP.join(parts).rstrip()
        ranges = tuple((a, min(b, len(text))) for a, b in bold if a < len(text))
        out.append(Line(text=text, bold=ranges) if ranges else text)
    return out


def _pairs(grid: Grid, r: int, which: list[int]) -> str:
    """``<column> <value>`` for each of ``which`` that has a value in row ``r`` (``<column>: <value>`` when the
    value has spaces)."""
    said = []
    for i in which:
        v = grid.cells[i][r]
        if v not in ("", "–"):
            said.append(f"{grid.columns[i].name}{':' if ' ' in v else ''} {v}")
    return BELOW_JOIN.join(said)


def _under(grid: Grid, moved: list[int], width: int | None) -> list[list[str]]:
    """Per row, the lines of its values in the columns moved out of the table (indented under it, after the
    tree's lines when there are some)."""
    out: list[list[str]] = []
    for r in range(grid.n_rows):
        said = _pairs(grid, r, moved)
        if not said:
            out.append([])
            continue
        under = (grid.hang[r] if grid.hang is not None else "") + "   "
        out.append(wrap(said, width, under + "  ", first=under))
    return out


def _stacked(grid: Grid, width: int) -> list[Out]:
    """Each row on its own: its name, then every other column as ``<column> <value>``, wrapped at spaces."""
    out: list[Out] = []
    rest = list(range(1, len(grid.columns)))
    for r in range(grid.n_rows):
        lead = grid.lead[r] if grid.lead is not None else ""
        hang = grid.hang[r] if grid.hang is not None else lead
        name = wrap(grid.cells[0][r], width, hang, first=lead)
        out.append(Line(text=name[0], bold=((len(lead), len(name[0])),)) if len(name[0]) > len(lead) else name[0])
        out += name[1:]
        said = _pairs(grid, r, rest)
        if said:
            out += wrap(said, width, hang + "    ", first=hang + "  ")
    return out
