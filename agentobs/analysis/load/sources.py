"""Resolve the SOURCES a user names (files, folders, globs, Jaeger URLs, object-store URLs, ``-`` for standard
input, pipes) into one SpanSet.

A file is read by the reader its first bytes choose (``formats.registry``): OTLP JSON (JSON lines: our traces, a
collector archive, a saved Jaeger answer; pretty-printed; a JSON array of requests), another trace format (Jaeger's
own JSON, Zipkin JSON, the OpenTelemetry SDK's console output, the collector's protobuf and zstd files) or a
chat-transcript file (tau2-bench results, a list of OpenAI-style runs). gzip is read transparently. Nothing here
raises for bad content: problems land in the data quality.
Files may also live in an object store or any fsspec filesystem (``s3://bucket/archive/``,
``gs://...``, ``file://...``, globs in them): ``remote`` names and opens them. A stream (standard input, a
named pipe) is copied once into a temporary file, within the document limit, and read from there under its name.
"""
from __future__ import annotations

import errno
import glob
import os
import stat
import sys
import tempfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import pandas as pd

from ...errors import AgentobsError, InputError
from ..formats.registry import OTLP, reader_for, reader_of
from ..input import remote
from ..input.limits import DOCUMENT_ENV, InputLimits, human
from ..input.read import GZIP_MAGIC, broken_by, open_stream, stored_size
from ..jaeger.query import JaegerSource, fetch, fetch_linked, fetch_trace, is_jaeger_url, parse_url, redact
from ..otlp import batch as otlp_batch
from ..select.prune import narrow, prune
from ..select.selection import Selection
from ..spans.checks import check
from ..spans.quality import DataQuality
from ..spans.spanset import SpanSet

STDIN = "-"          # a source naming standard input


def printable_source(source: str) -> str:
    """A source as it may be printed (messages, reports, data-quality notes): a Jaeger URL redacted, an object-store
    URL without its credentials, anything else as given."""
    if is_jaeger_url(source):
        return redact(source)
    return remote.redacted_url(source) if remote.is_url(source) else source


@dataclass(kw_only=True)
class Expanded:
    """What SOURCES name: the inputs to read, in a stable order, and what could not be listed (``source_error``:
    an unreadable folder, a dangling symbolic link). ``listed``: the inputs found in a folder or by a pattern, not
    named one by one (one of them over an input limit is counted, not fatal: ``load_unit``)."""
    paths: list[str]
    quality: DataQuality
    listed: set[str] = field(default_factory=set)


def expand(sources: Iterable[str]) -> list[str]:
    """Files, folders (recursively), globs and URLs, in a stable order; a missing path is an InputError. What
    cannot be listed is left out (``expand_sources`` says what)."""
    return expand_sources(sources).paths


def expand_sources(sources: Iterable[str]) -> Expanded:
    """``expand``, with the folders and links that could not be read counted as ``source_error``."""
    out: list[str] = []
    listed: set[str] = set()
    q = DataQuality()
    for s in sources:
        if not s:                      # Path("") is ".": an empty argument (an unset variable) would read the folder
            raise InputError("an empty source: name a file, folder, glob or URL (or '.' for the current folder)")
        if s == STDIN or is_jaeger_url(s):
            out.append(s)
            continue
        if remote.is_url(s):
            found = remote.expand(s)
            out.extend(found)
            listed.update(x for x in found if x != s)
            continue
        if any(ch in s for ch in "*?[") and not _exists(Path(s)):    # a file may be named runs[1].jsonl
            hits = sorted(glob.glob(s, recursive=True))
            if not hits:
                raise InputError(f"{s}: the pattern matches no file")
            files = [str(p) for h in hits for p in _walk(Path(h), q)]
            out.extend(files)
            listed.update(files)
            continue
        p = Path(s)
        try:
            p.stat()
        except (FileNotFoundError, NotADirectoryError):
            raise InputError(f"{s}: no such file or folder") from None
        except OSError as exc:                 # a folder on the way that may not be searched, a loop of links
            _cannot_read(q, s, exc)
            continue
        files = [str(x) for x in _walk(p, q)]
        out.extend(files)
        listed.update(x for x in files if x != s)
    return Expanded(paths=out, quality=q, listed=listed)


def _exists(p: Path) -> bool:
    try:
        return p.exists()
    except OSError:                            # a folder on the way that may not be searched
        return False


def _walk(p: Path, q: DataQuality) -> list[Path]:
    """The regular files under a folder (links to files followed, links to folders not), hidden and temporary
    files left out; what cannot be read is counted against the folder named."""
    if not p.is_dir():
        return [p]
    found: list[Path] = []
    for root, _dirs, files in os.walk(p, onerror=lambda exc: _cannot_read(q, str(p), exc)):
        for name in files:
            if name.startswith(".") or name.endswith((".tmp", "-manifest.json")):
                continue
            x = Path(root, name)
            try:
                mode = x.stat().st_mode
            except OSError as exc:             # a dangling symbolic link, a loop of links
                _cannot_read(q, str(p), exc, link=x)
                continue
            if stat.S_ISREG(mode):
                found.append(x)
    return sorted(found)


def _cannot_read(q: DataQuality, source: str, exc: OSError, link: Path | None = None) -> None:
    where = exc.filename if exc.filename is not None else source
    why = exc.strerror or str(exc)
    if link is not None and link.is_symlink():
        try:
            why = f"a symbolic link to {os.readlink(link)}: {why}"
        except OSError:
            why = f"a symbolic link: {why}"
    q.add("source_error", source, example=f"{where}: {why}")


def load_sources(sources: Iterable[str], progress: Callable[[int], None] | None = None, *,
                 trace_id: str | None = None, selection: Selection | None = None) -> SpanSet:
    """The SpanSet of everything ``sources`` name, checked. Small OTLP JSON lines files in a row (a folder of
    per-trace files) are read in batches (``otlp.batch``): the same spans, sources and counts as one by one.
    ``trace_id``: only that trace is wanted, and a Jaeger source is asked for it alone (``jaeger.fetch_trace``).
    ``selection``: pushed into the loading (``prune``): a Jaeger query asks for its window and services only, and
    the traces that can hold no selected run are set aside before they are checked."""
    found = expand_sources(sources)
    out = SpanSet.concat(load_units(found.paths, found.listed, progress, trace_id=trace_id, selection=selection))
    found.quality.extend(out.quality)          # what could not be listed first, with all its examples
    out.quality = found.quality
    if selection:                  # (checked after: the checks look at one trace at a time, and cost as many)
        out = prune(out, selection)
    return check(out)


def load_units(units: Iterable[str], listed: set[str], progress: Callable[[int], None] | None = None, *,
               trace_id: str | None = None, selection: Selection | None = None) -> list[SpanSet]:
    """Expanded sources loaded, not checked: a Jaeger query, a stream (copied once), a file or object store URL
    (``load_unit``); small local OTLP JSON lines files in a row in batches. ``listed``: the units found in a folder
    or by a pattern. Both engines load with it (the Dask engine a few consecutive small files per task). A Jaeger
    query asks only for what ``selection`` can select (``prune.narrow``)."""
    limits = InputLimits.resolve()
    parts: list[SpanSet] = []
    batch: list[otlp_batch.Small] = []
    held = 0                                   # the batch's bytes

    def flush() -> None:
        nonlocal held
        parts.extend(otlp_batch.load_all(batch, lambda s: load_unit(s, progress, listed=s in listed),
                                          limits.max_line_bytes, progress))
        batch.clear()
        held = 0

    for s in units:
        if is_jaeger_url(s):
            flush()
            src = parse_url(s)
            one = fetch_trace(src, trace_id) if trace_id is not None else None
            parts.append(one if one is not None else _fetch(src, selection, progress))
        elif not remote.is_url(s) and is_stream(s):
            flush()
            parts.append(_load_stream(s))
        elif (member := _small(s, limits)) is not None:
            batch.append(member)
            held += len(member.data)
            if held >= otlp_batch.BATCH_BYTES:
                flush()
        else:
            flush()
            parts.append(load_unit(s, progress, listed=s in listed))
    flush()
    return parts


def _fetch(src: JaegerSource, selection: Selection | None, progress: Callable[[int], None] | None) -> SpanSet:
    """A Jaeger query; with a selection, asking only for what it can select (``prune.narrow``), then for the traces
    the answer links to from the URL's window, before the selection's start (``jaeger.fetch_linked``)."""
    if not selection:
        return fetch(src, progress)
    asked = narrow(src, selection)
    got = fetch(asked, progress)
    if asked.start > src.start and src.since_given:
        got = fetch_linked(src, got, src.start)
    return got


def batchable(source: str, size: int) -> bool:
    """Whether ``source`` of ``size`` bytes may be read in a batch with its neighbours (a small local file; whether
    it is OTLP JSON lines is seen when it is read)."""
    return not (is_jaeger_url(source) or remote.is_url(source)) and 0 < size <= otlp_batch.SMALL_BYTES


def _small(source: str, limits: InputLimits) -> otlp_batch.Small | None:
    """A small local OTLP JSON lines file as a batch member (its bytes read, decompressed if it is gzip), or None:
    batching is off, or the file is remote, large (on disk or decompressed), a gzip stream that is cut short,
    corrupt or refused, another format or not plain JSON lines (it is loaded on its own, which says why)."""
    if not otlp_batch.BATCH_BYTES or remote.is_url(source):
        return None
    most = min(otlp_batch.SMALL_BYTES, limits.chunk_bytes, limits.max_line_bytes)
    try:
        size = disk = os.stat(source).st_size
        if not 0 < size <= most:
            return None
        with open(source, "rb") as f:
            data = f.read(size + 1)
        if data[:2] == GZIP_MAGIC and len(data) == size:
            with open_stream(source, limits) as stream:
                data = stream.read(most + 1)
                if broken_by(stream) is not None or not 0 < len(data) <= most:
                    return None
                size = len(data)
    except (OSError, InputError, EOFError, zlib.error):
        return None                          # its own load says what is wrong
    if len(data) != size or reader_for(data) is not OTLP:
        return None
    return otlp_batch.small(source, data, disk_bytes=disk)


def load_unit(source: str, progress: Callable[[int], None] | None = None, *, listed: bool = False) -> SpanSet:
    """One expanded file or object store URL, loaded by ``load_one``. A file over an input limit (a likely
    decompression bomb, a document too large to read whole) is an InputError when it was named on its own; when it
    was ``listed`` (found in a folder or by a pattern), it is counted as ``unreadable``, saying which limit to raise,
    and the other files are read. Both engines load each input with it.

    One file never ends the report: an exception its content meets that nobody expected (a bug in agentobs, or a
    file that does not fit in memory) costs that file, counted as ``unreadable`` with the exception named."""
    name = remote.redacted_url(source) if remote.is_url(source) else source
    try:
        return load_one(source if remote.is_url(source) else Path(source), progress)
    except InputError as exc:
        if not listed:
            raise
        why = str(exc)       # named by its base name: the issue names the file, and a long path would crowd out the fix
        return _lost(name, why.replace(name, name.rstrip("/").rsplit("/", 1)[-1], 1))
    except AgentobsError:
        raise
    except Exception as exc:  # one file's content must not end the report: the file is counted
        return _lost(name, unexpected(exc))


def unexpected(exc: Exception) -> str:
    """What to say of an exception nobody expected while a file was read."""
    first = str(exc).splitlines()[0][:120] if str(exc) else ""
    return (f"an unexpected {type(exc).__name__}{': ' + first if first else ''} while reading it (a bug in agentobs, "
            "or the file does not fit in memory: please report it with the file)")


def _lost(name: str, why: str) -> SpanSet:
    q = DataQuality(files=1)
    q.add("unreadable", name, example=why)
    return SpanSet(quality=q, sources=[name])


def load_one(p: Path | str, progress: Callable[[int], None] | None = None, name: str | None = None) -> SpanSet:
    """One file (or object store URL) read by its reader (``formats.reader_of``: OTLP JSON, another trace format or
    chat transcripts); ``name``: the stream it was copied from. The Dask engine's scan loads each input with it too."""
    return reader_of(p).load(p, name=name, progress=progress)


# -- streams: standard input, a named pipe, a process substitution, a character device --------------------------


def is_stream(source: str) -> bool:
    """``-`` (standard input) or a local path that is not a regular file or a folder: its bytes can be read only
    once, so it is copied (``copied``) before it is sniffed and loaded."""
    if source == STDIN:
        return True
    try:
        mode = os.stat(source).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


@contextmanager
def copied(source: str, limits: InputLimits | None = None) -> Iterator[Path]:
    """A temporary file holding the bytes of the stream ``source`` (``-``: standard input), removed afterwards, even
    on error. A stream longer than ``max_document_bytes`` is an InputError (copying stops there)."""
    limit = (limits or InputLimits.resolve()).max_document_bytes
    fd, tmp = tempfile.mkstemp(prefix="agentobs-stream-")
    path = Path(tmp)
    try:
        with os.fdopen(fd, "wb") as out:
            if source == STDIN:
                stdin = getattr(sys.stdin, "buffer", None)
                if stdin is None:
                    raise OSError(errno.EBADF, "standard input is closed", STDIN)
                _copy(stdin, out, limit, source)
            else:
                with open(source, "rb") as f:
                    _copy(f, out, limit, source)
        yield path
    finally:
        path.unlink(missing_ok=True)


def _copy(src: BinaryIO, out: BinaryIO, limit: int, source: str) -> None:
    size = 0
    while block := src.read(min(_COPY_BLOCK, limit + 1 - size)):
        size += len(block)
        if size > limit:
            raise InputError(f"{source}: a stream (not a regular file) of more than {human(limit)}: a stream is "
                             f"copied whole before it is read, within {DOCUMENT_ENV}; save it to a file, or set "
                             f"{DOCUMENT_ENV} to raise the limit")
        out.write(block)


_COPY_BLOCK = 1 << 20


def _load_stream(source: str) -> SpanSet:
    """A stream read once into a temporary file, then loaded from there under its own name."""
    try:
        with copied(source) as path:
            return _renamed(load_one(path, None, source), str(path), source)
    except OSError as exc:              # cannot be opened (a socket, no permission), a full disk
        return _lost(source, str(exc))
    except AgentobsError:
        raise
    except Exception as exc:            # as for a file (``load_unit``)
        return _lost(source, unexpected(exc))


def _renamed(ss: SpanSet, old: str, new: str) -> SpanSet:
    """``ss`` with the source ``old`` (a temporary copy) named ``new`` wherever it is named."""
    ss.sources = [new if s == old else s for s in ss.sources]
    ss.spellings = {new if k == old else k: v for k, v in ss.spellings.items()}
    col = ss.spans.get("source")
    if col is not None and len(col):
        if isinstance(col.dtype, pd.CategoricalDtype):
            if old in col.cat.categories:
                ss.spans["source"] = col.cat.rename_categories({old: new})
        else:
            ss.spans["source"] = col.replace(old, new)
    ss.quality.restore(ss.quality.replaced(lambda f: f.renamed(old, new)))
    return ss


def total_bytes(sources: Iterable[str]) -> int:
    return sum(stored_size(s) for s in expand(sources) if not is_jaeger_url(s))
