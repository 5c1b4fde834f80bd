"""Which runs a report is about: a time window, services, agents, models and attributes, resolved once
(``Selection.resolve``) and applied to the runs table (``select_runs``).

A run is in the window when its start is (the runs table's ``start``: the start of its first segment): ``since``
included, ``until`` excluded. A run matches ``--service``, ``--agent`` and ``--model`` by its runs-table values
(``service``, ``agent``, ``model``; several values of one option: any of them; a value with ``*``, ``?`` or
``[...]`` is a shell-style pattern, case-sensitive), and ``--where KEY=VALUE`` when its root span (of any segment)
or one of its model or tool call spans carries attribute KEY equal to VALUE, compared in the attribute's type as
``--success-attr`` compares (``attrs.equals``). Options of different kinds must all match.

The same selection is pushed into the loading where a source allows it (``prune``): a Jaeger query asks only for the
window and the services, and the traces that can hold no selected run are set aside before the runs table is built.
"""
from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from ...errors import InputError
from ..input.timespec import iso, parse_time
from ..spans.attrs import column_of, equals

_PATTERN = frozenset("*?[")


@dataclass(frozen=True, kw_only=True)
class Selection:
    since: datetime | None = None           # UTC, included
    until: datetime | None = None           # UTC, excluded
    services: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    where: tuple[tuple[str, str], ...] = ()     # (attribute, value as given)

    @classmethod
    def resolve(cls, *, since: str | datetime | None = None, until: str | datetime | None = None,
                services: Iterable[str] = (), agents: Iterable[str] = (), models: Iterable[str] = (),
                where: Iterable[str | tuple[str, str]] = (), now: datetime | None = None,
                prefix: str = "") -> Selection:
        """The selection the options describe (``prefix``: ``before-``/``after-`` in messages). Relative times count
        back from ``now`` (default: the current time), so the two windows of a comparison share one now."""
        now = now or datetime.now(UTC)
        lo = _when(since, now, f"--{prefix}since")
        hi = _when(until, now, f"--{prefix}until")
        if lo is not None and hi is not None and lo >= hi:
            raise InputError(f"--{prefix}since ({iso(lo)}) must be before --{prefix}until ({iso(hi)})")
        return cls(since=lo, until=hi, services=_values(services, "--service"), agents=_values(agents, "--agent"),
                   models=_values(models, "--model"), where=tuple(_pair(w) for w in where))

    def __bool__(self) -> bool:
        return bool(self.since or self.until or self.services or self.agents or self.models or self.where)

    @property
    def window_ns(self) -> tuple[int | None, int | None]:
        """(since, until) in nanoseconds since the epoch (None: open)."""
        return _ns(self.since), _ns(self.until)

    def to_dict(self) -> dict[str, Any]:
        return {"since": iso(self.since) if self.since else None, "until": iso(self.until) if self.until else None,
                "service": list(self.services), "agent": list(self.agents), "model": list(self.models),
                "where": [f"{k}={v}" for k, v in self.where]}

    def describe(self) -> str:
        """The selection as options, for messages: ``--since 2026-12-05T10:00:00Z --service billing``."""
        parts = [f"--since {iso(self.since)}" if self.since else "", f"--until {iso(self.until)}" if self.until else ""]
        for option, values in (("--service", self.services), ("--agent", self.agents), ("--model", self.models)):
            parts += [f"{option} {v}" for v in values]
        parts += [f"--where {k}={v}" for k, v in self.where]
        return " ".join(p for p in parts if p)


def _when(value: str | datetime | None, now: datetime, option: str) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC)
    return parse_time(value, now, what=option)


def _values(values: Iterable[str], option: str) -> tuple[str, ...]:
    out = tuple(dict.fromkeys(v.strip() for v in values))
    if any(not v for v in out):
        raise InputError(f"{option}: an empty value; name one (e.g. {option} billing-agent)")
    return out


def _pair(text: str | tuple[str, str]) -> tuple[str, str]:
    if isinstance(text, tuple):
        key, value = text
    else:
        if "=" not in text:
            raise InputError(f"--where {text!r}: use KEY=VALUE, e.g. --where app.tenant=acme")
        key, value = text.split("=", 1)
    key = key.strip()
    if not key:
        raise InputError(f"--where {text!r}: the attribute name is empty; use KEY=VALUE, e.g. --where app.tenant=acme")
    column_of(key, "--where")              # a field every span has (name, status_code) is no attribute
    return key, value.strip()


def _ns(t: datetime | None) -> int | None:
    if t is None:
        return None
    delta = t - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 10**9 + delta.microseconds * 1000


def matches(values: pd.Series, patterns: tuple[str, ...]) -> np.ndarray:
    """Which values equal one of ``patterns`` (a pattern with ``*``, ``?`` or ``[...]``: shell-style, whole value,
    case-sensitive); a missing value matches none."""
    text = values.astype("string")
    hit = text.isin([p for p in patterns if not _PATTERN & set(p)]).fillna(False).to_numpy(dtype=bool, copy=True)
    globs = [p for p in patterns if _PATTERN & set(p)]
    if globs:
        codes, uniques = pd.factorize(text, use_na_sentinel=True)
        ok = np.array([any(fnmatch.fnmatchcase(str(u), g) for g in globs) for u in uniques] + [False], dtype=bool)
        hit |= ok[np.where(codes >= 0, codes, len(ok) - 1)]
    return hit


def in_window(starts_ns: np.ndarray, sel: Selection) -> np.ndarray:
    """Which start times (ns, int64) lie in the selection's window."""
    lo, hi = sel.window_ns
    ok = np.ones(len(starts_ns), dtype=bool)
    if lo is not None:
        ok &= starts_ns >= lo
    if hi is not None:
        ok &= starts_ns < hi
    return ok


def carrying(spans: pd.DataFrame, key: str, value: str) -> np.ndarray:
    """Which spans carry attribute ``key`` equal to ``value`` (in the attribute's type)."""
    column = column_of(key, "--where")
    if column not in spans.columns:
        return np.zeros(len(spans), dtype=bool)
    return equals(spans[column], value)


def select_runs(runs: pd.DataFrame, spans: pd.DataFrame, sel: Selection) -> pd.DataFrame:
    """The runs of ``runs`` the selection selects (``spans``: with the runs table's ``run_id``, ``_run_root`` and
    ``_kind``, for ``--where``)."""
    if not sel or runs.empty:
        return runs
    keep = np.ones(len(runs), dtype=bool)
    if sel.since is not None or sel.until is not None:
        start = pd.DatetimeIndex(runs["start"]).as_unit("ns")
        keep &= in_window(start.asi8, sel) & start.notna()
    for column, patterns in (("service", sel.services), ("agent", sel.agents), ("model", sel.models)):
        if patterns:
            keep &= matches(runs[column], patterns)
    if sel.where:
        own = spans["run_id"].notna().to_numpy() & (spans["_run_root"].to_numpy(dtype=bool)
                                                    | spans["_kind"].isin(["chat", "tool"]).to_numpy())
        for key, value in sel.where:
            hit = own & carrying(spans, key, value)
            ids = set(spans.loc[hit, "run_id"].astype(str))
            keep &= runs["run_id"].astype(str).isin(ids).to_numpy()
    return runs[keep].reset_index(drop=True)


def unmatched(sel: Selection, spans: pd.DataFrame, runs: pd.DataFrame | None = None) -> tuple[str, ...]:
    """Per option of ``sel`` that nothing read meets on its own, what the input holds instead: the runs' values of
    ``--service``/``--agent``/``--model`` (with ``runs``; else the spans' services), the values of a ``--where``
    attribute or that no span carries it. For the message of a selection that leaves no run."""
    out = []
    columns = (("service", sel.services), ("agent", sel.agents), ("model", sel.models)) if runs is not None \
        else (("service_name", sel.services),)
    frame = runs if runs is not None else spans
    for column, patterns in columns:
        if patterns and column in frame.columns and not matches(frame[column], patterns).any():
            name = column.split("_")[0]
            out.append(f"--{name}: the {'runs' if runs is not None else 'spans'} read are of {name} "
                       f"{_most(frame[column])}")
    for key, value in sel.where:
        column = column_of(key, "--where")
        if column not in spans.columns or not spans[column].notna().any():
            out.append(f"--where: no span read carries {key}")
        elif not carrying(spans, key, value).any():
            out.append(f"--where: {key} is {_most(spans[column])}")
    return tuple(out)


def _most(values: pd.Series, n: int = 5) -> str:
    """The most common values, with their counts: ``a (12), b (3)``, and how many there are past ``n``."""
    counts = values.dropna().astype(str).value_counts()
    if counts.empty:
        return "never given"
    shown = ", ".join(f"{v!r} ({k:,})" for v, k in counts.head(n).items())
    return shown + (f" and {len(counts) - n:,} more" if len(counts) > n else "")


def spans_of(spans: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """The spans of ``runs`` (what a report on a selection shows and counts), with their index in ``spans``."""
    ids = runs["run_id"].astype(str)
    return spans[spans["run_id"].astype("string").isin(ids).fillna(False).to_numpy(dtype=bool)]


__all__ = ["Selection", "carrying", "in_window", "matches", "select_runs", "spans_of"]
