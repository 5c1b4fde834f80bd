"""The Dask engine's steps, from the client: scan, place, move, derive per partition, merge, summarize.

    1. scan      one task per input (small files in a row: up to a batch, 32 MiB, per task): load it as locally,
                 bucket its rows by a hash of each trace's task id (of its trace id when it has none), compress
                 them and keep them on the worker; return a summary (task ids and span links per trace, column
                 types, data quality).
    2. place     on the client: traces joined by a task id or a link form a group; a group goes to one partition.
    3. move      for the inputs holding rows the scan put in another bucket than their group's: copy those rows
                 out, by partition (on the worker holding the input); the buckets stay as they are.
    4. derive    one task per partition: bucket k of every input without the rows that moved away, with the rows
                 that moved in, in input order; check, derive_runs, labels.
    5. merge     on the client: runs rows, data quality, derivation; ``report.summarize_runs`` as locally.

Exact by construction: every check and every runs column of the local engine depends only on the spans of one
trace, or of the traces of one task, and those always meet in one partition with the rows in input order.
"""
from __future__ import annotations

import math
import os
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from ....errors import AgentobsError, ConfigError, InputError
from ...assess.labels import read_label_files
from ...input import remote
from ...input.limits import human
from ...jaeger.query import is_jaeger_url
from ...load.sources import STDIN, batchable, expand_sources, is_stream, printable_source, total_bytes
from ...otlp import batch
from ...spans.quality import DataQuality, Finding
from ..summary import Loaded, Options, Report, summarize_runs
from . import merge
from .cluster import client_for, require
from .partition import PartResult, Request, Schema
from .partition import run as run_partition
from .placement import bucket, extract_moves, moved_in, place
from .scan import Summary, scan, summary_of
from .settings import GZIP_EXPANSION, MEMORY_ENV, PARTITION_ENV, DaskSettings

Advance = Callable[[int], None]


def analyze_dask(sources: Iterable[str], options: Options | None = None, *, scheduler: str | None = None,
                 progress: Advance | None = None, settings: DaskSettings | None = None,
                 partitions: int | None = None) -> Report:
    """The report on SOURCES computed on a Dask cluster; equal to ``analyze(sources, options)`` field for field.

    ``progress(n)`` is called as work completes, with input bytes: each input's size once scanned, then the same
    total again in equal shares as partitions finish (twice the input's size in all)."""
    require()
    opt = options or Options()
    sources = list(sources)
    found = expand_sources(sources)
    streams = [u for u in found.paths if u == STDIN or (not is_jaeger_url(u) and is_stream(u))]
    if streams:
        raise InputError(f"{printable_source(streams[0])}: a pipe or standard input cannot be read by a Dask "
                         "cluster's workers; "
                         "save it to a file, or use --engine local")
    labels = read_label_files(opt.labels_files).labels if opt.labels_files else None   # a bad one fails first
    units = [_absolute(p) for p in found.paths]     # the workers may run in another folder
    typed = dict(zip(units, found.paths, strict=True))
    listed = {a for a, given in typed.items() if given in found.listed}
    st = settings or DaskSettings.resolve(scheduler=scheduler)
    sizes = [0 if is_jaeger_url(u) else total_bytes([u]) for u in units]
    expanded = sum(size * GZIP_EXPANSION if u.endswith(".gz") else size for u, size in zip(units, sizes, strict=True))
    groups, sizes = _units(units, sizes)
    with client_for(st) as client:
        n = partitions or max(_threads(client), math.ceil(expanded / st.partition_bytes), 1)
        try:
            parts, summaries, schema = _compute(client, groups, sizes, n=n, opt=opt, labels=labels,
                                                advance=progress or _quiet, listed=listed)
        except AgentobsError:
            raise
        except Exception as exc:  # the cluster's failures, said in one line
            raise _cluster_error(exc, st) from None
    _unseen(summaries, typed)
    sources_shown = [printable_source(s) for s in sources] if sources else \
        [typed.get(s, s) for x in summaries for s in x.sources]
    spellings: dict[str, dict[str, int]] = {}
    for s in summaries:
        spellings.update({typed.get(k, k): v for k, v in s.spellings.items()})
    quality = found.quality                 # what could not be listed first, as load_sources puts it
    quality.extend(_as_given(merge.quality(summaries, parts), typed))
    derivation = merge.derivation(parts)
    derivation.roles = {typed.get(src, src): c for src, c in derivation.roles.items()}   # (named as given)
    loaded = Loaded(sources=sources_shown, spellings=spellings, n_spans=sum(p.n_spans for p in parts))
    return summarize_runs(merge.runs(parts), merge.lookup(parts, schema), quality, derivation, opt, loaded=loaded)


def _absolute(path: str) -> str:
    """An input as the workers get it: a local path made absolute (an existing cluster's workers run in their own
    folder: a relative path failed there with "No such file or directory"); a URL or a Jaeger query as it is. (A
    worker on another machine still needs the file at that path: a shared disk, or an object store URL.)"""
    return path if is_jaeger_url(path) or remote.is_url(path) or path == STDIN else os.path.abspath(path)


def _unseen(summaries: list[Summary], typed: dict[str, str]) -> None:
    """A file this machine reads that a worker found missing: the workers do not share this machine's disk. Said as
    such (it was counted as an unreadable file, "No such file or directory", and the report ended with no run)."""
    for summary in summaries:
        for issue in summary.quality.issues:
            if issue.kind == "unreadable" and issue.source in typed and os.path.isfile(issue.source) and \
                    any("No such file or directory" in e for e in issue.examples):
                raise InputError(f"{printable_source(typed[issue.source])}: a Dask worker found no file at "
                                 f"{printable_source(issue.source)},"
                                 " which this machine reads: the workers must see local files at the same path (a "
                                 "shared disk), or name them by an object store URL; or use --engine local")


def _as_given(q: DataQuality, typed: dict[str, str]) -> DataQuality:
    """The data quality with each input named as it was given (as the local engine names it), not by the absolute
    path the workers read."""
    def as_given(f: Finding) -> Finding:
        given = typed.get(f.source)
        return f.renamed(f.source, given) if given is not None and given != f.source else f
    return q.replaced(as_given)


def _units(paths: list[str], sizes: list[int]) -> tuple[list[tuple[str, ...]], list[int]]:
    """The scan's units and their sizes: each input on its own, but small local files in a row together, up to the
    bytes of one batch (``sources.load_units`` reads them in batches): a task per file of a folder of thousands of
    small files cost more than reading them."""
    units: list[tuple[str, ...]] = []
    out: list[int] = []
    open_group = False
    for path, size in zip(paths, sizes, strict=True):
        small = batchable(path, size)
        if small and open_group and out[-1] + size <= batch.BATCH_BYTES:
            units[-1] += (path,)
            out[-1] += size
        else:
            units.append((path,))
            out.append(size)
        open_group = small
    return units, out


def _compute(client: Any, units: list[tuple[str, ...]], sizes: list[int], *, n: int, opt: Options,
             labels: dict[str, bool] | None, advance: Advance, listed: set[str]
             ) -> tuple[list[PartResult], list[Summary], Schema]:
    from distributed import as_completed
    tag = uuid.uuid4().hex[:12]
    scans = [client.submit(scan, u, i, n, listed & set(u), opt.selection, key=f"agentobs-scan-{tag}-{i}")
             for i, u in enumerate(units)]
    heads = [client.submit(summary_of, f, key=f"agentobs-summary-{tag}-{i}") for i, f in enumerate(scans)]
    summaries: list[Summary | None] = [None] * len(units)
    index = {f.key: i for i, f in enumerate(heads)}
    for f in as_completed(heads):
        i = index[f.key]
        summaries[i] = f.result()
        advance(sizes[i])
    done: list[Summary] = [s for s in summaries if s is not None]
    schema = Schema.of(done)
    plan = place(done, n)
    extracted: dict[int, tuple[Any, set[int]]] = {}
    for i, f in enumerate(scans):
        moves = plan.for_unit(i)
        if len(moves):
            extracted[i] = (client.submit(extract_moves, f, moves, key=f"agentobs-move-{tag}-{i}"),
                            set(moves["target"].tolist()))
    req = Request(success_attr=opt.success_attr, labels=None, labels_source=", ".join(opt.labels_files),
                  segments=tuple(opt.segments), examples=opt.examples, selection=opt.selection)
    shared = client.scatter([schema, labels or {}], broadcast=True, hash=False)
    derive = []
    for k in range(n):
        inputs = []
        for i, f in enumerate(scans):
            own = client.submit(bucket, f, k, key=f"agentobs-bucket-{tag}-{i}-{k}")
            ext, targets = extracted.get(i, (None, set()))
            inputs.append((own, client.submit(moved_in, ext, k, key=f"agentobs-in-{tag}-{i}-{k}")
                           if k in targets else None))
        away = plan.away(k)
        derive.append(client.submit(_derive, inputs, away, shared[0], shared[1], req, key=f"agentobs-part-{tag}-{k}"))
    del scans, heads, extracted
    parts: list[PartResult | None] = [None] * n
    index = {f.key: k for k, f in enumerate(derive)}
    total, told = sum(sizes), 0
    for done_parts, f in enumerate(as_completed(derive), 1):
        parts[index[f.key]] = f.result()
        f.release()
        share = total * done_parts // n - told
        told += share
        advance(share)
    return [p for p in parts if p is not None], done, schema


def _derive(inputs: list[tuple[bytes | None, bytes | None]], away: dict[int, set[str]], schema: Schema,
            labels: dict[str, bool], req: Request) -> PartResult:
    req.labels = labels or None
    return run_partition(inputs, away, schema, req)


def _quiet(_: int) -> None:
    return None


def _cluster_error(exc: Exception, st: DaskSettings) -> Exception:
    from distributed import KilledWorker
    from distributed.comm.core import CommClosedError
    what = " ".join(str(exc).split())[:200] or type(exc).__name__
    if isinstance(exc, KilledWorker):
        return ConfigError(f"a Dask worker died while running a task ({what}), most likely out of memory: give the "
                           f"workers more memory ({MEMORY_ENV}, now {human(st.memory_per_worker)} for a local cluster) "
                           f"or make partitions smaller ({PARTITION_ENV}, now {human(st.partition_bytes)})")
    if isinstance(exc, (CommClosedError, OSError, TimeoutError)):
        return InputError(f"lost the Dask cluster ({what}): check the scheduler and its workers")
    return exc


def _threads(client: Any) -> int:
    try:
        return max(sum(client.nthreads().values()), 1)
    except Exception:  # sizing only
        return 1


__all__ = ["analyze_dask"]
