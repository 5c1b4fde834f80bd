"""Many small OTLP JSON lines files read as one: a folder of per-request or per-trace files (an exporter's, a
script's) is parsed and decoded in batches, each span keeping the file it came from.

Read one by one, each small file pays a parse, a decode and a conversion to pandas of its own, and the
concatenation pays for each frame: 2,000 one-trace files took about 20 times their spans in one file. A batch
joins the files' lines (up to ``BATCH_BYTES``), parses them at once with pyarrow and decodes them at once; each
row's source is its file.

A batch is only taken when it gives what the files give one by one, so the report does not depend on how files
were grouped: every file is sniffed in the spelling the batch parsed with, every line is a request the fast path
took, and nothing was counted against the data (no issue at all). (An attribute key of several kinds is one
column either way, its values written as text the same way: ``spanset.as_text``.) Otherwise the batch is cut
in halves, down to single files, which the caller loads on their own (a bad file costs a few extra parses of its
neighbours, and its issues name it and its lines as they always did).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..spans.quality import DataQuality
from ..spans.spanset import SpanSet
from ._arrow import decode_arrow
from ._parse import DECODE_ERRORS, Layout, ParseFailure, layout, parse
from ._spelling import Spelling
from .load import frames

BATCH_BYTES = 32 << 20      # the bytes of one batch; 0 reads every file on its own
SMALL_BYTES = 1 << 20       # a file up to this size may join a batch


@dataclass(kw_only=True, slots=True)
class Small:
    """A small file's bytes, as ``small`` checked them: plain JSON lines opening with an object."""
    source: str
    data: bytes              # decompressed, for a gzip file
    disk_bytes: int          # the file's size on disk (what a progress bar counts)
    rows: int                # lines that are not blank: pyarrow's rows
    lines: int               # lines, a last one without a line break counted
    spelling: Spelling       # sniffed from the file's first bytes, as its own load would start with


def small(source: str, data: bytes, *, disk_bytes: int | None = None) -> Small | None:
    """``data`` (the whole file ``source``, decompressed, already sniffed as OTLP JSON) as a batch member, or None
    when it is to be loaded on its own: not opening with an object, or written over several lines
    (pretty-printed). ``disk_bytes``: the file's size on disk, if not ``len(data)`` (a gzip file)."""
    if not data.startswith(b"{") or layout(data[:65536]) is not Layout.LINES:
        return None             # a byte order mark, leading space, an array, pretty-printed: its own load reads it
    rows = sum(1 for line in data.split(b"\n") if line.strip())
    return Small(source=source, data=data, disk_bytes=len(data) if disk_bytes is None else disk_bytes, rows=rows,
                 lines=data.count(b"\n") + (0 if data.endswith(b"\n") else 1), spelling=Spelling.sniff(data[:65536]))


def load_all(files: list[Small], alone: Callable[[str], SpanSet], max_block: int,
             progress: Callable[[int], None] | None = None) -> list[SpanSet]:
    """The files' SpanSets, in their order: batches where a batch gives what its files give alone, ``alone(source)``
    for the others."""
    if not files:
        return []
    if len(files) == 1:
        return [alone(files[0].source)]
    got = _batch(files, max_block)
    if got is not None:
        if progress:
            progress(sum(f.disk_bytes for f in files))
        return [got]
    mid = len(files) // 2
    return load_all(files[:mid], alone, max_block, progress) + load_all(files[mid:], alone, max_block, progress)


def _batch(files: list[Small], max_block: int) -> SpanSet | None:
    """The files parsed and decoded as one, or None when that would not give what each gives alone."""
    sp = files[0].spelling
    if any(f.spelling != sp for f in files):
        return None
    data = b"".join(f.data if f.data.endswith(b"\n") else f.data + b"\n" for f in files)
    got = parse(data, max_block, sp)
    if isinstance(got, ParseFailure) or got[1] != sp or got[0].num_rows != sum(f.rows for f in files):
        return None
    table = got[0]
    index = np.repeat(np.arange(len(files), dtype=np.int32), [f.rows for f in files])
    names = [f.source for f in files]
    q = DataQuality(files=len(files))
    try:
        part = decode_arrow(table, names[0], q, sp,
                            row_sources=pa.DictionaryArray.from_arrays(pa.array(index), pa.array(names)))
    except DECODE_ERRORS:
        return None
    if q.issues:                # an issue names the batch's first file
        return None
    out = frames([part] if part is not None else [], q)
    q.lines = sum(f.lines for f in files)
    out.quality, out.sources = q, names
    out.spellings = {f.source: {sp.label(): f.rows} for f in files}
    return out
