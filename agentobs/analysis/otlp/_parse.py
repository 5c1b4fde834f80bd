"""One piece of OTLP JSON lines in, decoded Arrow tables out: the fast path, and the careful path per line.

A piece is parsed whole by ``pyarrow.json`` with the schema of its spelling (``_spelling``). When
pyarrow says the piece uses another spelling, the piece is parsed again with that one (the spelling
is then kept for the next pieces of the file, so a file in one spelling pays once). When the piece
holds lines of several spellings, its lines are grouped by the spelling their first bytes show
(``Spelling.clues``: a line that leaves a field out joins a spelling it does not contradict), each group parsed at
once, the groups decoded together (``_arrow.decode_tables``) and the rows put back in file order; when a group
fails, the piece is read in runs of consecutive lines of one spelling. When a piece
holds something no spelling explains (a truncated line, a value of the wrong type, a line that is not
OTLP), it is cut in two at a line boundary and each half tried again, down to single lines; only those
lines take the careful path (``_sanitize``: ``json`` per line, usable spans kept). The report
counts them (``careful_path``) with the reason.
"""
from __future__ import annotations

import enum
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from ..input.json_stream import Broken, Reader
from ..input.lines import has_null_line
from ..input.read import Buffers
from ..spans.quality import DataQuality
from ._arrow import Decoded, decode_arrow, decode_tables
from ._arrow_attributes import AttributePart, pivot_parts
from ._arrow_envelope import ParsedTable
from ._arrow_values import field_of
from ._sanitize import sanitize_request
from ._spelling import Spelling

_BLOCK = 1 << 23
_SNIFF_BYTES = 1 << 16      # of a line, to see its spelling
# what decoding may raise on input the parser accepted (bad text, a value Arrow cannot convert)
DECODE_ERRORS = (pa.ArrowException, ValueError, TypeError, OverflowError, UnicodeDecodeError, IndexError, KeyError)


@dataclass(frozen=True, kw_only=True)
class ParseFailure:
    """Why ``parse`` could not parse a piece whole (its lines are then cut, or read one by one)."""
    reason: str


# a parsed piece and the spelling it was parsed with, or why it could not be parsed
Parse = tuple[pa.Table, Spelling] | ParseFailure


@dataclass
class Parsed:
    """What a file's pieces gave: decoded parts, the spellings seen, the lines that took the careful path."""
    parts: list[Decoded] = field(default_factory=list)
    spelling: Spelling = field(default_factory=Spelling)
    spellings: dict[Spelling, int] = field(default_factory=dict)   # spelling -> rows parsed with it
    rows: int = 0

    def parsed(self, sp: Spelling, rows: int) -> None:
        """``rows`` more were parsed with ``sp`` (the spelling the next piece is tried with first)."""
        self.spelling = sp
        self.rows += rows
        self.spellings[sp] = self.spellings.get(sp, 0) + rows

    def took(self, other: Parsed) -> None:
        """Counts the rows ``other`` parsed (its parts are the caller's to place), its last spelling last."""
        for sp, rows in other.spellings.items():
            self.parsed(sp, rows)
        self.spelling = other.spelling


def parse_piece(data: bytes | memoryview, first_line: int, source: str, *, q: DataQuality, out: Parsed,
                max_block: int, parsed: Parse | Groups | None = None, by_resource: bool = True) -> None:
    """Decodes one piece of whole lines into ``out``; never raises for bad content. A view (of the reader's
    buffer) is parsed in place and copied only when it has to be cut. ``parsed``: what ``parse`` (or
    ``parse_groups``) already made of the whole piece (read ahead in another thread). ``by_resource``: a line longer
    than ``WHOLE_LINE`` that takes the careful path is read a resource at a time (False for a piece of such
    resources: each is read whole)."""
    careful: list[tuple[int, bytes, str]] = []
    # (piece, its first line, the spelling to try first, whether it was already cut by spelling, whether its
    # lines were screened)
    stack: list[tuple[bytes | memoryview, int, Spelling | None, bool, bool]] = [(data, first_line, None, False, False)]
    if isinstance(parsed, Groups):
        if decode_groups(parsed, source, q, out):
            return
        parsed = None                       # a group failed: each run of one spelling at once, cut where it fails
        stack = [(r.text, r.first, r.spelling, True, False) for r in reversed(_runs_by_spelling(data, first_line))]
    while stack:
        item, line, hint, cut, screened = stack.pop()
        if not len(item) or (isinstance(item, bytes) and item.isspace()):
            continue
        got = parsed if parsed is not None else parse(item, max_block, hint or out.spelling)
        parsed = None                                       # a pre-parsed result is the whole piece only
        reason = _decoded(got, source, q, out)
        if reason is None:
            continue
        piece = bytes(item)
        if piece.isspace():
            continue
        if not cut:
            runs = _runs_by_spelling(piece, line)
            if len(runs) > 1 and decode_groups(parse_groups(runs, max_block, source), source, q, out):
                continue                    # spellings mixed line by line: the lines of each spelling at once
            if len(runs) > 1:               # else each run of one spelling at once, and cut where it fails
                stack.extend((r.text, r.first, r.spelling, True, screened) for r in reversed(runs))
                continue
        if not screened and piece.count(b"\n", 0, len(piece) - 1) > 0:
            # lines that are not JSON or not a request go to the careful path at once: cutting in halves finds
            # each with pyarrow parses, which costs a parse per line when most lines are such (a pretty-printed
            # document, a log of other JSON)
            runs_ok, rejected = _screen(piece, line)
            careful.extend(rejected)
            stack.extend((p, n, hint, True, True) for p, n in reversed(runs_ok))
            continue
        nl = piece.find(b"\n", len(piece) // 2)
        if 0 <= nl < len(piece) - 1:
            left, right = piece[:nl + 1], piece[nl + 1:]
            stack.append((right, line + left.count(b"\n"), hint, True, True))
            stack.append((left, line, hint, True, True))    # popped first: pieces stay in file order
        elif piece.count(b"\n") > 1:
            first = piece.find(b"\n")
            stack.append((piece[first + 1:], line + 1, hint, True, True))
            stack.append((piece[:first + 1], line, hint, True, True))
        else:
            careful.append((line, piece, reason))
    if careful:
        _careful(careful, source, q, out, by_resource)


@dataclass(frozen=True, kw_only=True)
class Groups:
    """A piece of lines in several spellings, parsed one spelling at a time and decoded at once (its attributes not
    pivoted yet) by a parser thread, ahead of the caller, who puts its rows in file order (``decode_groups``): what
    the decoding kept and counted, or why the lines did not take the fast path."""
    reason: str | None
    found: Parsed
    quality: DataQuality


def _members(runs: list[Run]) -> list[tuple[Spelling, list[bytes | memoryview], np.ndarray]]:
    """The runs' texts per spelling (first seen first; a line break after a run's last line where it has none), with
    the file line of each non-blank line."""
    groups: dict[Spelling, tuple[list[bytes | memoryview], list[np.ndarray]]] = {}
    for run in runs:
        members, lines = groups.setdefault(run.spelling, ([], []))
        members.append(run.text)
        if bytes(run.text[-1:]) != b"\n":
            members.append(b"\n")
        lines.append(run.lines)
    return [(sp, members, np.concatenate(lines)) for sp, (members, lines) in groups.items()]


_LOOKS = 8                  # lines of a piece sniffed to see whether it is mixed
_LOOK_FOR_LINE = 1 << 20     # how far from each eighth of the piece its next line is looked for


def looks_mixed(piece: bytes | memoryview) -> bool:
    """Whether lines spread over the piece (its first, and the first after each eighth of it) show different
    spellings: a field two of them both show, spelt two ways (``Spelling.clues``). Such a piece is cut by spelling
    before any parse: a whole parse of it fails, often only after it has cost as much as one that succeeds (its rows
    parse, some without resourceSpans), which the pieces parsed before the file was known to be mixed paid. A line
    that shows no kind, say, conflicts with none (protobuf's writer leaves a default value out, and a file in its
    spelling is parsed whole); nor do ids of two forms (hex and base64: both are text to the parser, and the decoding
    reads each form at once). A piece mixed only between the lines looked at is still found out by that failure."""
    size = len(piece)
    whole, base = _searchable(piece)
    view = memoryview(piece)
    seen: list[tuple[bool | None, ...]] = []
    for k in range(_LOOKS):
        start = 0
        if k:
            at = size * k // _LOOKS
            nl = whole.find(b"\n", base + at, base + min(size, at + _LOOK_FOR_LINE))
            if nl < 0:
                continue                    # (within a long line)
            start = nl - base + 1
        head = _line_head(whole, base, view, start)
        if head.isspace() or not head:
            continue
        shows = Spelling.clues(head)
        if any(not _compatible(shows, other) for other in seen):
            return True
        seen.append(shows)
    return False


def _compatible(a: Sequence[bool | None], b: Sequence[bool | None]) -> bool:
    """Whether two lines may be in one spelling: no field that both show is spelt two ways."""
    return all(x is None or y is None or x == y for x, y in zip(a, b, strict=True))


def runs_by_spelling(piece: bytes | memoryview, first_line: int) -> list[Run]:
    """The piece cut into runs of consecutive lines of one spelling (``_runs_by_spelling``), from a view too."""
    return _runs_by_spelling(piece, first_line)


def parse_groups(runs: list[Run], max_block: int, source: str, spare: Buffers | None = None) -> Groups:
    """The runs' lines parsed one spelling at a time, then decoded at once (``decode_tables``), on the calling
    thread: a parser thread of the loader, beside the other one that parses the next piece (threads of its own per
    piece cost more in switching between them than they overlapped). Each group's lines are put together in a buffer
    of ``spare``, used again from group to group and piece to piece (a parsed table holds none of its text): a fresh
    copy of each group cost more in fresh memory than the copy."""
    buffers = spare or Buffers()
    tables: list[ParsedTable] = []
    for sp, members, lines in _members(runs):
        size = sum(len(m) for m in members)
        buf = buffers.take(size)
        try:
            text = memoryview(buf)
            at = 0
            for member in members:
                text[at:at + len(member)] = member
                at += len(member)
            got = parse(text[:size], max_block, sp, one_thread=True)
        finally:
            buffers.give_back(buf)          # (never resized: a view still held elsewhere does not matter)
        if isinstance(got, ParseFailure) or got[0].num_rows != len(lines):
            return Groups(reason=got.reason if isinstance(got, ParseFailure) else "lines of different shapes",
                          found=Parsed(),
                          quality=DataQuality())
        tables.append(ParsedTable(table=got[0], sp=got[1], row_lines=lines))
    q, found = DataQuality(), Parsed()
    saved = q.snapshot()
    try:
        part = decode_tables(tables, source, q, pivot=False)
    except DECODE_ERRORS as exc:
        q.restore(saved)
        return Groups(reason=_reason(f"{type(exc).__name__}: {exc}"), found=Parsed(), quality=DataQuality())
    for t in tables:
        found.parsed(t.sp, t.table.num_rows)
    if part is not None:
        found.parts.append(part)
    return Groups(reason=None, found=found, quality=q)


def decode_groups(groups: Groups, source: str, q: DataQuality, out: Parsed) -> bool:
    """Puts the decoded groups of a piece in file order: what they counted, and their spans, events and links back in
    file order (by their request's line), the attributes of spans and of events pivoted once for all groups,
    straight into file order (a pivot per group, then reordering every attribute column, was most of a piece of lines
    in several spellings). False, with nothing kept or counted, when a group did not take the fast path whole: the
    piece's runs are then read one by one."""
    if groups.reason is not None:
        return False
    saved = q.snapshot()
    q.extend(groups.quality)
    try:
        merged = _merged(groups.found.parts[0], source, q) if groups.found.parts else None
    except DECODE_ERRORS:
        q.restore(saved)
        return False
    if merged is not None:
        out.parts.append(merged)
    out.took(groups.found)
    return True


def _merged(part: Decoded, source: str, q: DataQuality) -> Decoded:
    """The groups' spans, events and links in file order (a stable sort by line: the rows of one line keep their
    order), the attributes of spans and of events pivoted once each, straight into that order."""
    spans, at = _in_line_order(part.spans)
    spans = _with_attributes(spans, part.attrs, at, source, q)
    events = links = None
    if part.events is not None:
        events, at = _in_line_order(part.events)
        events = _with_attributes(events, part.event_attrs, at, source, q)
    if part.links is not None:
        links, _ = _in_line_order(part.links)
    return Decoded(spans, events, links)


def _in_line_order(table: pa.Table) -> tuple[pa.Table, np.ndarray]:
    """The table's rows in the order of their ``_line`` (a stable sort: rows of one line keep theirs), and the place
    in that order of each of its rows."""
    order = np.argsort(table.column("_line").to_numpy(), kind="stable")
    at = np.empty(len(order), dtype=np.int64)
    at[order] = np.arange(len(order))
    return table.take(pa.array(order)).drop_columns(["_line"]), at


def _with_attributes(table: pa.Table, parts: list[AttributePart], at: np.ndarray, source: str,
                     q: DataQuality) -> pa.Table:
    """``table`` (the decoded rows in file order, ``at``: the place of each decoded row) with the parts' attributes
    pivoted into it, once over all parts (each part's owners: decoded rows, -1 for a dropped one)."""
    placed = [replace(a, owners=np.where(a.owners >= 0, at[np.maximum(a.owners, 0)], -1))
              for a in parts if a.owners is not None]
    cols = dict(zip(table.column_names, table.columns, strict=True))
    for name, col in pivot_parts(placed, table.num_rows, source, q).items():
        cols[f"attr:{name}" if name in table.column_names else name] = col
    return pa.table(cols)          # (appending the columns one by one copies the list of columns each time)


def _screen(piece: bytes, first_line: int) -> tuple[list[tuple[bytes, int]], list[tuple[int, bytes, str]]]:
    """The piece's lines read one by one with ``json``: runs of consecutive lines that are OTLP requests (to parse
    again, with their first line numbers), and the lines that are not (blank lines dropped), with the reason."""
    runs: list[tuple[bytes, int]] = []
    rejected: list[tuple[int, bytes, str]] = []
    start, line, run_start, run_line = 0, first_line, -1, first_line
    while start < len(piece):
        end = piece.find(b"\n", start)
        end = len(piece) if end < 0 else end + 1
        raw = piece[start:end]
        reason = None if raw.isspace() else _not_a_request(raw)
        if reason is None and run_start < 0 and not raw.isspace():
            run_start, run_line = start, line
        elif reason is not None:
            if run_start >= 0:
                runs.append((piece[run_start:start], run_line))
                run_start = -1
            rejected.append((line, raw, reason))
        start, line = end, line + 1
    if run_start >= 0:
        runs.append((piece[run_start:], run_line))
    return runs, rejected


def _not_a_request(raw: bytes) -> str | None:
    """Why a line cannot be an OTLP request (not JSON, no resourceSpans), or None."""
    if len(raw) > WHOLE_LINE:
        why: list[str] = []
        for _ in resource_lines(raw, why):
            pass
        return why[0] if why else None
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        return _reason(f"not JSON: {exc}")
    if isinstance(obj, dict) and isinstance(obj.get("result"), dict):
        obj = obj["result"]
    if not isinstance(obj, dict) or ("resourceSpans" not in obj and "resource_spans" not in obj):
        return "no resourceSpans"
    return None


@dataclass(frozen=True, kw_only=True, slots=True)
class Run:
    """Consecutive lines of a piece of one spelling (as their first bytes show it)."""
    text: bytes | memoryview            # a view of the piece, not a copy
    first: int                          # the file line of its first line
    spelling: Spelling
    lines: np.ndarray                   # the file line of each of its lines that is not blank (a row of the parse)


def _searchable(piece: bytes | memoryview) -> tuple[bytes | bytearray, int]:
    """The object whose memory the piece is, searchable (``find``), and where the piece starts in it: a view of the
    reader's buffer is searched there, as a copy of it costs more in fresh memory than the search (and a regular
    expression searches a view at a third of ``find``'s speed)."""
    if isinstance(piece, memoryview) and len(piece) and isinstance(piece.obj, (bytes, bytearray)) \
            and piece.contiguous and piece.itemsize == 1:
        start = np.frombuffer(piece, dtype=np.uint8).ctypes.data
        return piece.obj, start - np.frombuffer(piece.obj, dtype=np.uint8).ctypes.data
    return bytes(piece), 0


def _line_head(whole: bytes | bytearray, base: int, view: memoryview, start: int) -> bytes:
    """The first bytes of the line of ``view`` (at ``base`` in ``whole``, ``_searchable``) that starts at ``start``,
    its line break included: what a line's spelling is sniffed from."""
    nl = whole.find(b"\n", base + start, base + min(len(view), start + _SNIFF_BYTES))
    return bytes(view[start:start + _SNIFF_BYTES] if nl < 0 else view[start:nl - base + 1])


def _runs_by_spelling(piece: bytes | memoryview, first_line: int) -> list[Run]:
    """The piece cut into runs of consecutive lines of one spelling, each line's spelling seen once from its first
    bytes (``Spelling.clues``): a line joins the first spelling of the piece that it may be in (a field it does not
    show, say a kind, conflicts with none; what it shows adds to that spelling), so a line that leaves a field out
    costs no parse of its own. A blank line goes with the line before it. A view (of the reader's buffer) is read
    where it is: a copy of a piece costs more in fresh memory than finding its lines."""
    view = memoryview(piece)
    size = len(view)
    whole, at = _searchable(piece)
    known: list[list[bool | None]] = []          # what the lines of each spelling show of each field
    cuts: list[tuple[int, int, int, bool]] = []   # each line's start, line number, spelling and whether it is a row
    start, line, group = 0, first_line, -1
    while start < size:
        nl = whole.find(b"\n", at + start, at + size)
        end = size if nl < 0 else nl - at + 1
        head = bytes(view[start:min(end, start + _SNIFF_BYTES)])
        row = not head.isspace() or (end - start > len(head) and not bytes(view[start:end]).isspace())
        if row:
            shows = Spelling.clues(head)
            group = next((g for g, k in enumerate(known) if _compatible(k, shows)), len(known))
            if group == len(known):
                known.append(list(shows))
            else:
                known[group] = [x if x is not None else y for x, y in zip(known[group], shows, strict=True)]
        cuts.append((start, line, group, row))
        start, line = end, line + 1
    if not known:
        known.append([])
    spellings = [Spelling(*(shown is True for shown in k)) for k in known]
    first_group = next((g for _, _, g, _ in cuts if g >= 0), 0)
    runs: list[Run] = []
    i = 0
    while i < len(cuts):
        group = cuts[i][2] if cuts[i][2] >= 0 else first_group
        j = i + 1
        while j < len(cuts) and cuts[j][2] in (group, -1):
            j += 1
        end = cuts[j][0] if j < len(cuts) else size
        runs.append(Run(text=view[cuts[i][0]:end], first=cuts[i][1], spelling=spellings[group],
                        lines=np.asarray([n for _, n, _, row in cuts[i:j] if row], dtype=np.int64)))
        i = j
    return runs


class Layout(enum.Enum):
    """How the JSON values of an OTLP input are laid out: one per line (JSON lines, the collector's and ours), written
    over several lines each (a pretty-printed request, several one after another as ``jq .`` prints them), or the
    elements of one JSON array (``[request, request, ...]``, as a list of requests is saved), which is read as if
    each element were one line of JSON lines. The last two are read as one document."""
    LINES = ""
    MULTILINE = "multi-line JSON"
    ARRAY = "JSON array"


def layout(head: bytes) -> Layout:
    """The layout of an input from its first bytes. Written over several lines: it opens an object whose first line
    is not a whole value, and neither is the next line (JSON lines whose first line is cut short go on with a whole
    object). An array: it opens an array whose first element opens an object."""
    text = head.lstrip()
    if text.startswith(b"["):
        return Layout.ARRAY if text[1:].lstrip()[:1] in (b"{", b"]") else Layout.LINES
    nl = text.find(b"\n")
    if nl < 0 or not text.startswith(b"{") or _whole(text[:nl]):
        return Layout.LINES
    rest = text[nl + 1:].lstrip()
    nl = rest.find(b"\n")
    return Layout.LINES if rest.startswith(b"{") and nl >= 0 and _whole(rest[:nl]) else Layout.MULTILINE


def _whole(line: bytes) -> bool:
    try:
        json.loads(line)
    except (ValueError, RecursionError):
        return False
    return True


def parse_documents(data: bytes, how: Layout, source: str, q: DataQuality, out: Parsed) -> bool:
    """Decodes a document of JSON values (``how``: written over several lines each, or the elements of an array)
    into ``out``: values over several lines (or the elements of an indented array) all at once with pyarrow, or,
    when that fails, as JSON lines (each value on the line it starts on), so that a bad value costs what it costs in
    a JSON lines file. False, with nothing counted, when values said to be written over several lines are one per
    line after all (JSON lines whose first lines are cut short): the caller then reads it line by line."""
    values = data if how is Layout.MULTILINE else _indented_elements(data)
    if values is not None and _decoded(parse(values, len(values) + 1, out.spelling, multiline=True), source, q,
                                       out) is None:
        return True
    lines = values_as_lines(data, one_line_values=how is Layout.ARRAY)
    if lines is None:
        return False
    parse_piece(lines, 1, source, q=q, out=out, max_block=len(lines) + 1)
    return True


def _indented_elements(data: bytes) -> bytes | None:
    """The elements of an indented JSON array one after another (as ``jq .`` prints several values), its brackets
    and the commas between its elements made spaces, for pyarrow to parse at once; None when the array is not
    indented (on one line). An element's closing brace is the one at the indentation of its opening brace (as
    every pretty-printer writes them); were a comma taken away anywhere else, the text would not be JSON and pyarrow
    would say so."""
    start = len(data) - len(data.lstrip())
    first = data.find(b"{", start)
    nl = data.rfind(b"\n", start, first)
    end = len(data.rstrip())
    if data[start:start + 1] != b"[" or first < 0 or nl < 0 or data[end - 1:end] != b"]" \
            or data[nl + 1:first].strip(b" \t"):
        return None
    close = b"\n" + data[nl + 1:first] + b"}"
    return b"".join((data[:start], b" ", data[start + 1:end - 1].replace(close + b",", close + b" "), b" ",
                     data[end:]))


_SPACE = " \t\r\n"


def values_as_lines(data: bytes, *, one_line_values: bool) -> bytes | None:
    """The JSON values of the text as JSON lines, each value on the line it starts on (the line breaks inside a value
    move after it: JSON text never holds a raw line break inside a string). The elements of a top-level array are
    its values (its brackets and commas become spaces). Text that is not JSON (a value cut short, a corrupt one)
    becomes one line, up to the next line that starts a value as the first value did (at its indentation): it then
    costs one line (``invalid_json``), and the values after it are read. Without ``one_line_values``, None when a
    value (an object or array) is written on one line: the text is JSON lines."""
    text = data.decode("utf-8", "surrogateescape")
    decoder = json.JSONDecoder(strict=False)
    parts: list[str] = []
    pos, broken, in_array = 0, True, False          # broken: a line break since the last value
    resync: re.Pattern[str] | None = None           # where a value starts, as the first one did
    while True:
        gap = pos
        while pos < len(text) and (text[pos] in _SPACE or (text[pos] in "[]," and _separates(text, pos, in_array))):
            if text[pos] in "[]":
                in_array = text[pos] == "["
            pos += 1
        parts.append(_blank(text[gap:pos]))
        broken = broken or "\n" in text[gap:pos]
        if pos >= len(text):
            return "".join(parts).encode("utf-8", "surrogateescape")
        if resync is None:
            indent = text[text.rfind("\n", 0, pos) + 1:pos]
            resync = re.compile("\n" + re.escape(indent if indent.isspace() else "") + "[{\\[]")
        try:
            _, end = decoder.raw_decode(text, pos)
            whole = True
        except (ValueError, RecursionError):
            nxt = resync.search(text, pos + 1)
            end, whole = (nxt.start() if nxt is not None else len(text)), False
        if not broken:                      # two values on one line
            parts.append("\n")
        value = text[pos:end]
        breaks = value.count("\n")
        if whole and not breaks and not one_line_values and end - pos > 2 and text[pos] in "{[":
            return None
        parts.append(value.replace("\r", " ").replace("\n", " ") + "\n" * breaks)
        pos, broken = end, breaks > 0


def _separates(text: str, pos: int, in_array: bool) -> bool:
    """Whether the bracket or comma at ``pos`` is the punctuation of a top-level array (not the start of a value)."""
    if text[pos] == "[":
        return not in_array                 # an array opens; inside one, a "[" starts an element
    return in_array                         # "," between elements, "]" closing


def _blank(gap: str) -> str:
    return gap if not gap or gap.isspace() else "".join(c if c in _SPACE else " " for c in gap)


def parse(piece: bytes | memoryview, max_block: int, start: Spelling, *, multiline: bool = False,
          one_thread: bool = False, rare: bool = False) -> Parse:
    """Parses the piece with ``start``'s spelling, or one pyarrow points to. Touches nothing but the piece: a
    parser thread may call it while the caller decodes the piece before. ``multiline``: the piece is JSON values
    written over several lines each (pretty-printed), not one per line. ``one_thread``: the piece is parsed as one
    block on the calling thread (the parser threads parse two pieces at once that way: pyarrow's reader splits a
    piece into blocks for its own threads, and the blocks' tables had to be put together again, a copy of the whole
    piece), not in blocks on pyarrow's threads. ``rare``: parsed with the rare value fields (``Spelling.schema``) from
    the start; else (for a piece of ``_LEAN_FROM`` bytes or more) without them first, and again with them when an
    attribute value holds none of the others (``needed_rare`` tells whether the piece needed them)."""
    if has_null_line(piece):            # once per piece, not per spelling
        return ParseFailure(reason=_reason("JSON parse error: a line is null or not JSON"))
    sp = start
    tried = {sp}
    rare = rare or len(piece) < _LEAN_FROM
    while True:
        try:
            table = _read(piece, sp, max_block, multiline=multiline, one_thread=one_thread, rare=rare)
        except pa.ArrowInvalid as exc:
            learnt = sp.learn(str(exc))
            if learnt is not None and learnt not in tried:
                tried.add(learnt)
                sp = learnt
                continue
            return ParseFailure(reason=_reason(str(exc)))
        except (pa.ArrowException, OSError) as exc:
            return ParseFailure(reason=_reason(str(exc)))
        missing = _rows_without_spans(table, sp)
        if missing and missing == table.num_rows:
            nxt = next((a for a in sp.alternatives() if a not in tried), None)
            if nxt is not None:
                tried.add(nxt)
                sp = nxt
                continue
            return ParseFailure(reason="no resourceSpans")
        if missing:
            return ParseFailure(reason="lines of different shapes")
        if not rare and _may_hold_rare(table, sp):
            rare = True
            continue
        return table, sp


# a smaller piece is parsed with the rare value fields at once: checking that a parse without them missed nothing
# costs about a millisecond and a half whatever the size, more than leaving them out saves below about 2 MiB
_LEAN_FROM = 1 << 21


def needed_rare(piece: bytes | memoryview, got: Parse) -> bool:
    """Whether the piece needed the rare value fields (``parse``): the file's next pieces had better start with
    them. A piece parsed with them only for its size teaches nothing."""
    return len(piece) >= _LEAN_FROM and isinstance(got, tuple) and got[0].schema.equals(got[1].schema(rare=True))


def _may_hold_rare(table: pa.Table, sp: Spelling) -> bool:
    """Whether an attribute value (or an element of an array value) of a table parsed without the rare value fields
    holds none of the others: it may hold a rare one, which that parse left out. (A value holding a rare field
    beside another is not a valid OTLP value, whose fields are a oneof; it keeps the other.) Only the paths of the
    schema that lead to values are walked (``_value_paths``), and the values' fields are read on their validity
    bitmaps (``_all_held``): a spelling group of a few lines pays the fixed cost of every Arrow call."""
    paths = _value_paths(sp)

    def unread(arr: pa.Array, path: tuple[str, ...]) -> bool:
        if len(arr) == 0:
            return False
        is_value, steps = paths[path]
        if is_value and not _all_held(arr):
            return True
        return any(unread(pc.list_flatten(arr) if step == "[]" else field_of(arr, step), (*path, step))
                   for step in steps)

    return any(unread(chunk, (name,)) for name, column in zip(table.column_names, table.columns, strict=True)
               if (name,) in paths for chunk in column.chunks)


@cache
def _value_paths(sp: Spelling) -> dict[tuple[str, ...], tuple[bool, tuple[str, ...]]]:
    """The paths of the spelling's schema without the rare value fields that hold attribute values (a field name, or
    "[]" for a list's elements, at each step): whether each is a value, and its steps that lead to values."""
    values = sp.value_types(rare=False)
    paths: dict[tuple[str, ...], tuple[bool, tuple[str, ...]]] = {}

    def visit(typ: pa.DataType, path: tuple[str, ...]) -> bool:
        if pa.types.is_struct(typ):
            steps = tuple(typ.field(i).name for i in range(typ.num_fields)
                          if visit(typ.field(i).type, (*path, typ.field(i).name)))
        elif pa.types.is_list(typ):
            steps = ("[]",) if visit(typ.value_type, (*path, "[]")) else ()
        else:
            steps = ()
        is_value = typ in values
        if is_value or steps:
            paths[path] = (is_value, steps)
        return is_value or bool(steps)

    for f in sp.schema(rare=False):
        visit(f.type, (f.name,))
    return paths


def _all_held(arr: pa.Array) -> bool:
    """Whether every value of a struct array that is not null holds one of its fields at least: the validity bitmaps
    of its fields or'd, with its own nulls (no Arrow call; an array at an offset is read by Arrow)."""
    n = len(arr)
    fields = [arr.field(i) for i in range(arr.type.num_fields)] if isinstance(arr, pa.StructArray) else []
    if not fields or arr.offset or any(f.offset for f in fields):
        held = arr.is_null()
        for i in range(arr.type.num_fields):
            held = pc.or_(held, field_of(arr, arr.type.field(i).name).is_valid())
        return bool(pc.all(held, min_count=0).as_py())
    size = (n + 7) // 8
    held = np.zeros(size, dtype=np.uint8)
    if arr.null_count:
        held |= ~np.frombuffer(arr.buffers()[0], dtype=np.uint8, count=size)
    for f in fields:
        if f.null_count == 0:
            return True                 # a field every value holds
        if f.null_count < n:
            held |= np.frombuffer(f.buffers()[0], dtype=np.uint8, count=size)
    whole, rest = divmod(n, 8)
    mask = (1 << rest) - 1
    return bool((held[:whole] == 0xFF).all()) and (not rest or int(held[whole]) & mask == mask)


def _decode(table: pa.Table, sp: Spelling, source: str, *, q: DataQuality, out: Parsed,
            row_lines: np.ndarray | None = None, pivot: bool = True) -> str | None:
    """Decodes a parsed piece into ``out``; the reason it could not (what it counted is then taken back).
    ``row_lines``, ``pivot``: as ``decode_arrow`` takes them."""
    saved = q.snapshot()
    try:
        part = decode_arrow(table, source, q, sp, row_lines=row_lines, pivot=pivot)
    except DECODE_ERRORS as exc:
        q.restore(saved)
        return _reason(f"{type(exc).__name__}: {exc}")
    out.parsed(sp, table.num_rows)
    if part is not None:
        out.parts.append(part)
    return None


def _decoded(got: Parse, source: str, q: DataQuality, out: Parsed) -> str | None:
    """Decodes what ``parse`` made of a piece into ``out``; the reason it could not."""
    return got.reason if isinstance(got, ParseFailure) else _decode(got[0], got[1], source, q=q, out=out)


def _fast(piece: bytes | memoryview, source: str, q: DataQuality, *, out: Parsed, max_block: int,
          start: Spelling) -> str | None:
    """Parses and decodes the piece; the reason it could not."""
    return _decoded(parse(piece, max_block, start), source, q, out)


# a line that starts with "n" (after white space) is null, or not JSON: pyarrow's reader (26.0.1) crashes the
# process on a null that starts one of its blocks, so such a piece is never given to it (``parse``: its lines go the
# careful path)


def _read(piece: bytes | memoryview, sp: Spelling, max_block: int, *, multiline: bool = False,
          one_thread: bool = False, rare: bool = True) -> pa.Table:
    block = len(piece) + 1 if one_thread else min(_BLOCK, len(piece) + 1)
    options = sp.parse_options(multiline, rare)
    while True:
        try:
            return pj.read_json(pa.BufferReader(piece), parse_options=options,
                                read_options=pj.ReadOptions(block_size=block, use_threads=not one_thread))
        except pa.ArrowInvalid as exc:
            if "straddl" in str(exc) and block < min(len(piece) + 1, max_block + 1):
                block = min(block * 4, len(piece) + 1, max_block + 1)
                continue
            raise


def _rows_without_spans(table: pa.Table, sp: Spelling) -> int:
    if table.num_rows == 0:
        return 0
    if sp.wrapped:
        col = table.column("result")
        inner = pa.chunked_array([field_of(c, sp.name_of("resourceSpans")) for c in col.chunks],
                                 type=col.type.field(sp.name_of("resourceSpans")).type)
        return inner.null_count
    return table.column(sp.name_of("resourceSpans")).null_count


def _reason(message: str) -> str:
    text = " ".join(message.split())
    for prefix in ("JSON parse error: ",):
        text = text.replace(prefix, "")
    return text[:120]


# a line longer than this is never parsed whole with json (its objects take 20 to 50 times its size): its resources
# are read one at a time and taken as lines of their own (``resource_lines``)
WHOLE_LINE = 4 << 20


def resource_lines(raw: bytes | bytearray | memoryview, why: list[str]) -> Iterator[bytes]:
    """A request (or a saved Jaeger answer) read a resource at a time: a request of each of its resources, as a
    line of JSON (``b"null"`` for one ``json`` cannot write again). Once they are read, ``why`` holds why the text
    is not a request, if it is not (what came before a break is yielded)."""
    r = Reader(raw)
    found = False
    try:
        if r.kind() != "{":
            why.append("no resourceSpans")
            return
        for key in r.members():
            if key == "result" and r.kind() == "{":
                for inner in r.members():
                    if inner in _RESOURCE_KEYS and r.kind() == "[":
                        found = True
                        yield from _resources(r, inner)
            elif key in _RESOURCE_KEYS and r.kind() == "[":
                found = True
                yield from _resources(r, key)
        if not r.at_end():
            raise Broken("more text after the request", r.line)
    except Broken as exc:
        why.append(_reason(f"not JSON: {exc.reason}"))
        return
    if not found:
        why.append("no resourceSpans")


_RESOURCE_KEYS = ("resourceSpans", "resource_spans")


def _resources(r: Reader, key: str) -> Iterator[bytes]:
    for _ in r.elements():
        rs = r.value()
        try:
            yield json.dumps({key: [rs]}, separators=(",", ":")).encode()
        except (ValueError, RecursionError):
            yield b"null"


def _careful(lines: list[tuple[int, bytes, str]], source: str, q: DataQuality, out: Parsed,
             by_resource: bool = True) -> None:
    good: list[tuple[int, str]] = []
    for n, raw, reason in lines:
        q.add("careful_path", source, example=f"line {n}: {reason}")
        if by_resource and len(raw) > WHOLE_LINE:
            _careful_resources(n, raw, source, q, out)
            continue
        obj = _json(raw, n, source, q)
        if obj is _NOT_JSON:
            continue
        req = sanitize_request(obj, source, q)
        if req is None:
            q.add("not_otlp", source, example=f"line {n}")
            continue
        good.append((n, json.dumps(req)))
    if not good:
        return
    sub = Parsed(spelling=Spelling())
    if _fast(("\n".join(text for _, text in good) + "\n").encode(), source, q, out=sub, max_block=1 << 62,
             start=sub.spelling) is not None:
        for n, text in good:                    # one by one: what still fails is dropped, counted
            if _fast((text + "\n").encode(), source, q, out=sub, max_block=1 << 62, start=sub.spelling) is not None:
                q.add("bad_line", source, example=f"line {n}")
    out.parts.extend(sub.parts)
    out.rows += sub.rows


def _careful_resources(n: int, raw: bytes, source: str, q: DataQuality, out: Parsed) -> None:
    """A long line the fast path could not take, its resources taken one by one (each a line of its own: the fast
    path for the good ones, the careful path for the others; about ``WHOLE_LINE`` bytes of them at a time), never
    parsed whole."""
    why: list[str] = []
    held: list[bytes] = []
    size = unwritable = 0
    sub = Parsed(spelling=out.spelling)
    for line in [*resource_lines(raw, why), b""]:
        if line == b"null":
            unwritable += 1
            continue
        if line:
            held.append(line)
            size += len(line) + 1
        if held and (size >= WHOLE_LINE or not line):
            piece = b"\n".join(held) + b"\n"
            held, size = [], 0
            parse_piece(piece, n, source, q=q, out=sub, max_block=len(piece) + 1, by_resource=False)
    if why:
        q.add("invalid_json" if why[0].startswith("not JSON") else "not_otlp", source, example=f"line {n}: {why[0]}")
    if unwritable:
        q.add("invalid_json", source, count=unwritable, example=f"line {n}: a resource nested too deeply")
    out.parts.extend(sub.parts)
    out.took(sub)


_NOT_JSON = object()


def _json(raw: bytes, n: int, source: str, q: DataQuality) -> object:
    """The line's JSON value (None for null), or ``_NOT_JSON`` (counted)."""
    text = raw.decode("utf-8", "replace")
    if "\ufffd" in text and b"\xef\xbf\xbd" not in raw:
        q.add("bad_value", source, example=f"line {n}: invalid UTF-8 (replaced)")
    try:
        return json.loads(text, strict=False)
    except RecursionError:
        q.add("invalid_json", source, example=f"line {n}: nested too deeply")
    except ValueError:
        q.add("invalid_json", source, example=f"line {n}: {text[:60]}")
    return _NOT_JSON
