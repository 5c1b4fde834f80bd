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
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import InputError
from ._json_text import encodes
from .quality import DataQuality

_TRUE = {"1", "true", "yes", "y", "success", "pass", "passed", "ok"}
_FALSE = {"0", "false", "no", "n", "failure", "fail", "failed"}
_HEX_ID = re.compile(r"[0-9a-fA-F]{32}(?::[0-9a-fA-F]{16})?")     # a trace id, or <trace id>:<span id>


def fold(key: str) -> str:
    """A label key or run key as compared: hex ids (stored in lower case) in lower case, any other id as it is."""
    return key.lower() if _HEX_ID.fullmatch(key) else key


def _fold(keys: pd.Series) -> pd.Series:
    """``fold`` on a column of ids (nulls kept)."""
    keys = keys.astype("string")
    hex_id = keys.str.fullmatch(_HEX_ID.pattern).fillna(False).astype(bool)
    return keys.str.lower().where(hex_id, keys)


class _Object(dict[str, Any]):
    """A JSON object that keeps its (key, value) pairs in order, repeated keys included."""
    pairs: list[tuple[str, Any]]


def _object(pairs: list[tuple[str, Any]]) -> _Object:
    obj = _Object(pairs)
    obj.pairs = pairs
    return obj


def _bool(v: Any) -> bool | None:
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)) and v in (0, 1):
        return bool(v)
    if isinstance(v, str) and v.strip().lower() in _TRUE | _FALSE:
        return v.strip().lower() in _TRUE
    return None


def read_labels(path: str | Path) -> tuple[dict[str, bool], list[str], list[str]]:
    """Returns (run id -> success, problems, conflicts): unusable rows, and the ids labelled both true and false
    (left out of the labels, each as an example naming it). An unreadable or shapeless file is an InputError."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"labels file {p}: cannot be read ({exc})") from None
    problems: list[str] = []
    seen: dict[str, set[bool]] = {}
    stripped = text.lstrip()
    if stripped.startswith(("[", "{")):
        try:
            data = json.loads(text, object_pairs_hook=_object)
        except json.JSONDecodeError as exc:
            raise InputError(f"labels file {p}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
        except RecursionError:
            raise InputError(f"labels file {p}: JSON nested too deeply (give a list of run_id/success objects)"
                             ) from None
        items = data.pairs if isinstance(data, _Object) else (
            ((d.get("run_id", d.get("id")), d.get("success", d.get("label"))) if isinstance(d, dict) else (None, None))
            for d in data)
        for rid, val in items:
            b = _bool(val)
            if rid is None or not str(rid).strip() or b is None or not encodes(str(rid)):
                problems.append(f"{rid!r}: {val!r}")
                continue
            seen.setdefault(fold(str(rid)), set()).add(b)
    else:
        rows = list(csv.reader(text.splitlines()))
        if not rows:
            raise InputError(f"labels file {p} is empty: give run_id,success rows")
        header = [h.strip().lower() for h in rows[0]]
        if "run_id" in header and "success" in header:
            ri, si, first = header.index("run_id"), header.index("success"), 1
        elif len(rows[0]) >= 2 and _bool(rows[0][1]) is not None:
            ri, si, first = 0, 1, 0
        else:
            raise InputError(f"labels file {p}: the CSV needs columns run_id,success")
        for n, r in enumerate(rows[first:], first + 1):        # n: the row's line (1-based)
            if not any(cell.strip() for cell in r):            # a blank line (a spreadsheet's trailing rows)
                continue
            if len(r) <= max(ri, si):
                problems.append(f"line {n}: {','.join(r)}")
                continue
            rid, b = r[ri].strip(), _bool(r[si])
            if not rid:
                problems.append(f"line {n}: no run_id")
                continue
            if b is None:
                problems.append(f"line {n}: success={r[si]!r}")
                continue
            seen.setdefault(fold(rid), set()).add(b)
    labels = {rid: values.pop() for rid, values in seen.items() if len(values) == 1}
    conflicts = [f"{rid}: labelled both true and false (left unlabelled)" for rid, values in seen.items()
                 if len(values) > 1]
    if not labels:
        more = f" ({conflicts[0].split(': ')[0]} is labelled both true and false)" if len(conflicts) == 1 else \
            f" ({len(conflicts)} run ids are labelled both true and false)" if conflicts else ""
        raise InputError(f"labels file {p}: no usable run_id,success pair{more}")
    return labels, problems, conflicts


def apply_labels(runs: pd.DataFrame, labels: dict[str, bool], source: str, q: DataQuality) -> pd.DataFrame:
    """Labels matched by run id, task id, conversation id, then by any segment's trace id.

    A trace id names a run only when its trace holds that one run: a label keyed by the id of a trace
    with several runs (two agents under one request) is ambiguous, counted, and not applied; key those
    by run id instead.
    """
    out = runs.copy()
    matched: set[str] = set()
    values = pd.Series(pd.NA, index=out.index, dtype="boolean")
    for col in ("run_id", "task_id", "conversation_id"):
        keys = _fold(out[col].astype("string"))
        hit = keys.isin(list(labels)) & values.isna()
        values[hit] = [labels[k] for k in keys[hit]]
        matched |= set(keys[hit].dropna())
    ex = _fold(out["trace_ids"].explode().dropna().astype(str)).astype(str).rename("trace").reset_index()
    ex["runs"] = ex["trace"].map(ex.drop_duplicates(["index", "trace"])["trace"].value_counts())
    cand = ex[ex["trace"].isin(list(labels)) & values.reindex(ex["index"]).isna().to_numpy()]
    ambiguous = set(cand.loc[cand["runs"] > 1, "trace"])
    use = cand[cand["runs"] == 1].drop_duplicates("index")       # any segment's trace id names its run
    values[use["index"].to_numpy()] = [labels[t] for t in use["trace"]]
    matched |= set(use["trace"])
    out["success"] = values
    out.loc[values.notna(), "label_source"] = "labels_file"
    q.add("ambiguous_label", source, len(ambiguous), sorted(ambiguous)[0] if ambiguous else None)
    unmatched = sorted(set(labels) - matched - ambiguous)
    q.add("unmatched_label", source, len(unmatched), unmatched[0] if unmatched else None)
    missing = out.loc[values.isna(), "run_id"]
    q.add("unlabelled_run", source, int(len(missing)), str(missing.iloc[0]) if len(missing) else None)
    return out


def label_by_attribute(runs: pd.DataFrame, spans: pd.DataFrame, key: str, value: str) -> pd.DataFrame:
    """success = the run's root span (an agent invocation, a chain, or the trace root) carries attribute ``key``
    equal to ``value`` (compared as text)."""
    if key not in spans.columns:
        raise InputError(f"no span carries the attribute {key!r}: check --success-attr KEY=VALUE")
    roots = spans[spans["_run_root"] & spans[key].notna()]
    got = roots.groupby("run_id")[key].last().astype(str).str.lower() == value.lower()
    out = runs.copy()
    mapped = out["run_id"].map(got)
    out["success"] = pd.array(mapped.where(mapped.notna(), False), dtype="boolean")
    out["label_source"] = "attribute"
    return out
