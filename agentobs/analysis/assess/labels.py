"""Success labels: from the stop reason (default), a span attribute, or an external labels file.

A labels file is CSV (``run_id,success``) or JSON (a list of ``{"run_id", "success"}`` or an
object ``{run_id: success}``). A label's id is matched against the trace id, the
``gen_ai.conversation.id`` and the ``agentobs.task.id`` of each run; ids that match no run
and runs without a label are reported in the data quality. Hex ids (a trace id, ``<trace id>:<span id>``)
match in any case, as ``agentobs trace`` takes them. An id given both true and false is a conflict: it is
counted (``conflicting_label``) and labels nothing, so its run is unlabelled; repeating the same label is fine.
"""
from __future__ import annotations

import csv
import io
import itertools
import re
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...errors import InputError
from ..input.json_stream import Broken, Reader
from ..input.json_text import encodes
from ..input.limits import InputLimits
from ..input.read import Document
from ..spans.attrs import as_bool, column_of, equals
from ..spans.quality import DataQuality, Note, NoteKind

_HEX_ID = re.compile(r"[0-9a-fA-F]{32}(?::[0-9a-fA-F]{16})?")     # a trace id, or <trace id>:<span id>
# the columns (or JSON keys) that may name a run, in the order they are looked for; a trace id with the run's root
# span id (two columns: trace_id and root_span_id or span_id) names the run rooted at that span
_ID_KEYS = ("run_id", "id", "conversation_id", "session_id", "task_id", "trace_id")
_SPAN_KEYS = ("root_span_id", "span_id")
_ROW_KEYS = {*_ID_KEYS, *_SPAN_KEYS, "success", "label"}
_SHAPES = ('give a list of {"run_id": ..., "success": ...} objects, or one {"run_id": success, ...} object, '
           "or a CSV of run_id,success")
_SEPARATORS = ((";", "semicolons"), ("\t", "tabs"), ("|", "bars"))


def fold(key: str) -> str:
    """A label key or run key as compared: hex ids (stored in lower case) in lower case, any other id as it is."""
    return key.lower() if _HEX_ID.fullmatch(key) else key


def _fold(keys: pd.Series) -> pd.Series:
    """``fold`` on a column of ids (nulls kept)."""
    keys = keys.astype("string")
    hex_id = keys.str.fullmatch(_HEX_ID.pattern).fillna(False).astype(bool)
    return keys.str.lower().where(hex_id, keys)


_bool = as_bool


def read_labels(path: str | Path, limits: InputLimits | None = None
                ) -> tuple[dict[str, bool], list[str], list[str]]:
    """Returns (run id -> success, problems, conflicts): unusable rows, and the ids labelled both true and false
    (left out of the labels, each as an example naming it). An unreadable or shapeless file is an InputError; so is
    one larger than the document limit (``AGENTOBS_MAX_DOCUMENT_BYTES``). The file is read a row (a JSON value) at
    a time: what is held is the labels, never the file as text or Python objects."""
    p = Path(path)
    lim = limits or InputLimits.resolve()
    found = _Found()
    try:
        with Document(p, lim) as f:
            head = f.read(_HEAD)
            first = head.lstrip()[:1]
            rest = _Again(head, f)
            if first in (b"[", b"{"):
                _json_rows(p, rest, found)
            else:
                _csv_rows(p, rest, found)
    except InputError as exc:
        if str(exc).startswith(f"labels file {p}"):
            raise
        raise InputError(f"labels file {exc}") from None
    except UnicodeDecodeError:
        raise InputError(f"labels file {p}: not UTF-8 text (UTF-16, or binary?): save it as UTF-8") from None
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"labels file {p}: cannot be read ({exc})") from None
    both = [rid for rid, v in found.values.items() if v == _BOTH]
    conflicts = [f"{rid}: labelled both true and false (left unlabelled)" for rid in both]
    labels: dict[str, Any] = found.values              # made the labels in place: a second dict of every id is not
    for rid in both:                                   # held
        del labels[rid]
    for rid, v in labels.items():
        labels[rid] = v == 1
    if not labels:
        more = f" ({conflicts[0].split(': ')[0]} is labelled both true and false)" if len(conflicts) == 1 else \
            f" ({len(conflicts)} run ids are labelled both true and false)" if conflicts else ""
        raise InputError(f"labels file {p}: no usable run_id,success pair{more}")
    return labels, found.problems, conflicts


@dataclass(frozen=True, kw_only=True)
class LabelFiles:
    """The labels of one or several files (``--labels`` given more than once): each file labels the runs its ids
    match. An id two files label differently is a conflict, left out like an id one file labels both ways."""
    files: tuple[str, ...]
    labels: dict[str, bool]
    owner: dict[str, str]                     # with several files: id -> the file that gave it (one file: empty)
    problems: list[tuple[str, str]]           # (file, the row that could not be used)
    conflicts: list[tuple[str, str]]          # (file, the id labelled both ways)

    @property
    def source(self) -> str:
        """The files, as the data quality names them."""
        return ", ".join(self.files)

    def file_of(self, rid: str) -> str:
        return self.owner.get(rid, self.files[0])


def read_label_files(paths: Sequence[str | Path], limits: InputLimits | None = None) -> LabelFiles:
    """``read_labels`` of each file, merged (one file gives what ``read_labels`` gives)."""
    names = tuple(dict.fromkeys(str(p) for p in paths))
    if len(names) == 1:
        labels, problems, conflicts = read_labels(names[0], limits)
        return LabelFiles(files=names, labels=labels, owner={}, problems=[(names[0], p) for p in problems],
                          conflicts=[(names[0], c) for c in conflicts])
    merged: dict[str, bool] = {}
    owner: dict[str, str] = {}
    clash: set[str] = set()
    out_problems: list[tuple[str, str]] = []
    out_conflicts: list[tuple[str, str]] = []
    for name in names:
        labels, problems, conflicts = read_labels(name, limits)
        out_problems += [(name, p) for p in problems]
        out_conflicts += [(name, c) for c in conflicts]
        for rid, value in labels.items():
            if rid in clash:
                continue
            was = merged.get(rid)
            if was is None:
                merged[rid], owner[rid] = value, name
            elif was != value:
                clash.add(rid)
                out_conflicts.append((name, f"{rid}: labelled {str(was).lower()} in {owner.pop(rid)} and "
                                            f"{str(value).lower()} here (left unlabelled)"))
                del merged[rid]
    return LabelFiles(files=names, labels=merged, owner=owner, problems=out_problems, conflicts=out_conflicts)


_HEAD = 64
_BOTH = 2                       # an id labelled true and false


class _Found:
    """What the rows gave so far: each id's label (0, 1, or ``_BOTH``), in the order ids first came, and the
    problems."""

    def __init__(self) -> None:
        self.values: dict[str, int] = {}
        self.problems: list[str] = []

    def add(self, rid: str, b: bool) -> None:
        key = fold(rid)
        was = self.values.get(key)
        self.values[key] = int(b) if was is None or was == int(b) else _BOTH

    def problem(self, text: str) -> None:
        self.problems.append(text[:200])


class _Again(io.RawIOBase):
    """A stream whose first bytes were read already: they come again first."""

    def __init__(self, head: bytes, rest: Any):
        self._head, self._rest = head, rest

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        if self._head:
            n = min(len(b), len(self._head))
            b[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        return int(self._rest.readinto(b))


def _json_rows(p: Path, f: io.RawIOBase, found: _Found) -> None:
    r = Reader(io.BufferedReader(f))
    try:
        if r.kind() == "{":
            row_keys, ids = True, False
            for key in r.members():
                val = r.value()
                row_keys, ids = row_keys and key in _ROW_KEYS, ids or key in _ID_KEYS
                _json_pair(key, val, found)
            if row_keys and ids:
                raise InputError(f"labels file {p}: one run_id/success object; {_SHAPES}")
        else:
            for _ in r.elements():
                d = r.value()
                rid, val = (_json_id(d), d.get("success", d.get("label"))) if isinstance(d, dict) else (None, None)
                _json_pair(rid, val, found)
        if not r.at_end():
            raise Broken("more text after the labels", r.line)
    except Broken as exc:
        if exc.reason == "not UTF-8 text":
            raise InputError(f"labels file {p}: not UTF-8 text (UTF-16, or binary?): save it as UTF-8") from None
        what = "not usable JSON" if exc.reason.startswith("Exceeds the limit") else "not valid JSON"
        raise InputError(f"labels file {p}: {what} ({exc.reason[:80]} at line {exc.line}); {_SHAPES}") from None


def _json_pair(rid: Any, val: Any, found: _Found) -> None:
    b = _bool(val)
    key = str(rid).strip() if rid is not None else ""
    if not key or b is None or not encodes(key):
        found.problem(f"{_shown(rid)}: {_shown(val)}")
        return
    found.add(key, b)


def _shown(v: Any) -> str:
    try:
        return repr(v)[:100]
    except ValueError:                      # an integer of more digits than Python writes out
        return f"an integer of {v.bit_length()} bits"


def _csv_rows(p: Path, f: io.RawIOBase, found: _Found) -> None:
    text = io.TextIOWrapper(io.BufferedReader(f), encoding="utf-8-sig", newline="")   # (a quoted field may hold a
    reader = csv.reader(text)                                                          # line break)
    try:
        head = next(reader, None)
        if head is None:
            raise InputError(f"labels file {p} is empty: give run_id,success rows")
        header = [h.strip().lower() for h in head]
        twice = next((h for h in ("run_id", "success") if header.count(h) > 1), None)
        if twice is not None:
            raise InputError(f"labels file {p}: the CSV has two {twice} columns; keep one")
        named = next((h for h in _ID_KEYS if h in header), None)
        span = next((h for h in _SPAN_KEYS if h in header), None) if "trace_id" in header else None
        pair: tuple[int, int] | None = None
        rows: Iterator[list[str]] = reader
        if "success" in header and span is not None:
            pair = (header.index("trace_id"), header.index(span))
            ri, si = pair[0], header.index("success")
        elif named is not None and "success" in header:
            ri, si = header.index(named), header.index("success")
        elif len(head) >= 2 and _bool(head[1]) is not None:
            ri, si = 0, 1
            rows = itertools.chain([head], reader)
        else:
            sep = next((f" (this file seems separated by {name}: use commas)" for c, name in _SEPARATORS
                        if c in head[0]), "") if head else ""
            raise InputError(f"labels file {p}: the CSV needs columns run_id,success{sep}")
        for r in rows:
            n = reader.line_num                                # the row's last line (1-based)
            if not any(cell.strip() for cell in r):            # a blank line (a spreadsheet's trailing rows)
                continue
            if len(r) <= max(ri, si, *(pair or ())):
                found.problem(f"line {n}: {','.join(r)}")
                continue
            rid, b = r[ri].strip(), _bool(r[si])
            if pair is not None:
                rid = f"{rid}:{r[pair[1]].strip()}" if rid and r[pair[1]].strip() else ""
            if not rid:
                found.problem(f"line {n}: no run_id")
                continue
            if b is None:
                found.problem(f"line {n}: success={r[si]!r}")
                continue
            found.add(rid, b)
    except csv.Error as exc:
        raise InputError(f"labels file {p}: line {reader.line_num}: {exc}; give run_id,success rows") from None
    finally:
        text.detach()


def _json_id(d: dict[str, Any]) -> Any:
    """The id a JSON label object names its run by: ``trace_id`` with ``root_span_id`` (or ``span_id``), else the
    first of the id keys present."""
    span = next((d[k] for k in _SPAN_KEYS if d.get(k) is not None), None)
    if d.get("trace_id") is not None and span is not None:
        return f"{str(d['trace_id']).strip()}:{str(span).strip()}"
    return next((d[k] for k in _ID_KEYS if d.get(k) is not None), None)


def apply_labels(runs: pd.DataFrame, labels: dict[str, bool], source: str, q: DataQuality, *,
                 file_of: Callable[[str], str] | None = None, matched: set[str] | None = None,
                 count_unmatched: bool = True) -> pd.DataFrame:
    """Labels matched by run id, task id, conversation (or session) id, ``<trace id>:<root span id>`` of the run's
    root span, and by any segment's trace id.

    A trace id names a run only when its trace holds that one run: a label keyed by the id of a trace
    with several runs (two agents under one request) is ambiguous, counted, and not applied; key those
    by run id instead. A run that labels under two of its ids give both true and false is a conflict: counted,
    and left unlabelled. Lookups go run by run (a dict lookup each), so a large labels file costs its reading.

    ``file_of``: the file each id came from (several labels files), which its ``unmatched_label`` names;
    ``matched``: filled with the ids that named a run (or were ambiguous); ``count_unmatched``: False when the ids
    may name runs that are not in ``runs`` (a selection of the input's runs).
    """
    out = runs.copy()
    hits = []                                         # (row, label key) of every label that names a run
    rooted = out["trace_ids"].map(lambda ts: ts[0] if isinstance(ts, list) and ts else None).astype("string")
    columns = {"run_id": out["run_id"], "task_id": out["task_id"], "conversation_id": out["conversation_id"],
               "root": rooted + ":" + out["root_span_id"].astype("string")}
    for col in columns.values():
        keys = _fold(col.astype("string")).astype(object)
        hit = keys.map(lambda k: isinstance(k, str) and k in labels).to_numpy(dtype=bool)
        hits.append(pd.DataFrame({"row": np.flatnonzero(hit), "key": keys[hit].to_numpy()}))
    ex = _fold(out["trace_ids"].explode().dropna().astype(str)).astype(str).rename("trace").reset_index(drop=False)
    ex["row"] = out.index.get_indexer(ex["index"])
    ex = ex[ex["trace"].map(labels.__contains__).to_numpy(dtype=bool)].drop_duplicates(["row", "trace"])
    runs_of = ex["trace"].map(ex["trace"].value_counts())
    ambiguous = set(ex.loc[runs_of > 1, "trace"])
    hits.append(ex.loc[runs_of == 1, ["row", "trace"]].rename(columns={"trace": "key"}))
    found = pd.concat(hits, ignore_index=True).drop_duplicates()
    found["value"] = found["key"].map(labels).astype(bool)
    per = found.groupby("row")["value"].agg(["min", "max"])
    agree = per[per["min"] == per["max"]]
    values = np.full(len(out), None, dtype=object)
    values[agree.index.to_numpy()] = agree["min"].to_numpy()
    out["success"] = pd.array(values, dtype="boolean")
    source_of = np.full(len(out), None, dtype=object)
    source_of[agree.index.to_numpy()] = "labels_file"
    out["label_source"] = pd.array(source_of, dtype="string")       # (a run left unlabelled has none)
    for row in per.index[per["min"] != per["max"]]:
        ids = sorted(found.loc[found["row"] == row, "key"].astype(str))
        q.add("conflicting_label", source, example=f"run {out['run_id'].iloc[row]}: labelled both true and false "
                                                   f"under {', '.join(ids[:3])} (left unlabelled)")
    q.add("ambiguous_label", source, len(ambiguous), sorted(ambiguous)[0] if ambiguous else None)
    if matched is not None:
        matched.update(found["key"].astype(str), ambiguous)
    unmatched = sorted(set(labels) - set(found["key"]) - ambiguous)
    if count_unmatched:
        _count_unmatched(q, source, unmatched, file_of)
    missing = out.loc[pd.isna(values), "run_id"]
    q.add("unlabelled_run", source, len(missing), str(missing.iloc[0]) if len(missing) else None)
    return out


def _count_unmatched(q: DataQuality, source: str, unmatched: list[str], file_of: Callable[[str], str] | None) -> None:
    """``unmatched_label`` of the labels file, or of each labels file an id came from (``file_of``)."""
    if file_of is None:
        q.add("unmatched_label", source, len(unmatched), unmatched[0] if unmatched else None)
        return
    by_file: dict[str, list[str]] = {}
    for rid in unmatched:
        by_file.setdefault(file_of(rid), []).append(rid)
    for name, ids in by_file.items():
        q.add("unmatched_label", name, len(ids), ids[0])


def label_by_attribute(runs: pd.DataFrame, spans: pd.DataFrame, key: str, value: str,
                       notes: list[Note] | None = None) -> pd.DataFrame:
    """success = the run's root span (an agent invocation, a chain, or the trace root) carries attribute ``key``
    equal to ``value``: as a number for a numeric attribute (``1`` equals ``1.0``), as true/false for a boolean
    one (``1``, ``yes``), else as text, case aside. ``service.name`` is the resource's service name. A run whose
    root span lacks the attribute is failed, and counted in ``notes`` (the derivation's notes) when given."""
    column = column_of(key, "--success-attr")
    if column not in spans.columns:
        raise InputError(f"no span carries the attribute {key!r}: check --success-attr KEY=VALUE")
    roots = spans[spans["_run_root"] & spans[column].notna()]
    last = roots.groupby("run_id", observed=True)[column].last()
    got = pd.Series(equals(last, value), index=last.index)
    out = runs.copy()
    mapped = out["run_id"].map(got)
    out["success"] = pd.array(mapped.where(mapped.notna(), False), dtype="boolean")
    out["label_source"] = "attribute"
    lacking = int(mapped.isna().sum())
    if notes is not None and lacking:
        notes.append(Note(kind=NoteKind.NO_SUCCESS_ATTRIBUTE, runs=lacking, attribute=key))
    return out


__all__ = ["apply_labels", "fold", "label_by_attribute", "read_labels"]
