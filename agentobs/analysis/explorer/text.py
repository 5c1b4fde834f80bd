"""Text from traces, made safe to show in the explorer.

Every text a page or the server sends goes through ``safe``: secrets masked as everywhere agentobs shows text
(``contract.redaction.secrets_masked``), control and bidirectional override characters replaced by a space, at most
``TEXT_CHARS`` characters. ``Strings`` is a page's string table: each distinct text once, cells hold its index.
The browser writes every text with ``textContent`` (or DataTables' text renderer), never as markup, and the
data travels in ``<script type="application/json">`` islands whose ``<``, ``>`` and ``&`` are ``\\u`` escapes
(``island``), so no text can end the element.

``label`` and ``labels`` make chart labels: shorter, and distinct where a chart's categories must be
(``labels`` is linear in the number of labels, however many share a prefix).
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from ...contract.redaction import secrets_masked

TEXT_CHARS = 2_000                    # one value in a page (an attribute holding a document is cut here)
LABEL_CHARS = 60                      # a chart label
UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# a trace id as the loader writes it (32 lower-case hex digits), or a run id made of one and a span id: no secret,
# and masking each would cost more than the rest of a large page (the runs CSV makes the same exception)
_TRACE_ID = re.compile(r"[0-9a-f]{32}(?::[0-9a-f]{16})?")
_PLOTLY_MARKUP = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def safe(value: Any, limit: int = TEXT_CHARS, *, mask: bool = True) -> str:
    """``value`` as one line of plain text: secrets masked (unless ``mask`` is off: a number, an id the loader
    wrote), no control characters, at most ``limit`` characters."""
    s = value if isinstance(value, str) else str(value)
    if mask and not _TRACE_ID.fullmatch(s):
        s = secrets_masked(s)
    if not s.isprintable():
        s = UNPRINTABLE.sub(" ", s)
    return s if len(s) <= limit else s[: limit - 1] + "…"


def label(value: Any) -> str:
    """A chart label: ``safe`` and at most LABEL_CHARS characters."""
    return safe(value, LABEL_CHARS)


def labels(values: Iterable[Any]) -> list[str]:
    """Distinct chart labels for categories (a shortened label must not merge two bars): a label already taken
    gets the first free `` (k)`` suffix, k counted per label, so the whole list costs time linear in its length
    (4,000 stop reasons sharing their first 60 characters made the old helper cubic)."""
    out: list[str] = []
    taken: set[str] = set()
    next_k: dict[str, int] = {}
    for v in values:
        s = base = label(v)
        if s in taken:
            k = next_k.get(base, 2)
            while (s := f"{base} ({k})") in taken:
                k += 1
            next_k[base] = k + 1
        taken.add(s)
        out.append(s)
    return out


def plotly_text(s: str) -> str:
    """A label as Plotly shows it literally: Plotly reads a few HTML tags and entities in its texts."""
    return s.translate(_PLOTLY_MARKUP)


class Strings:
    """A page's string table: ``code`` gives the index of a value's safe text (the same text, the same index);
    missing values are -1."""

    def __init__(self) -> None:
        self.values: list[str] = []
        self._index: dict[str, int] = {}
        self._raw: dict[str, int] = {}
        self._unmasked: dict[str, int] = {}

    def code(self, value: Any, *, mask: bool = True) -> int:
        """The code of ``value``: text masked (unless ``mask`` is off: numbers the page writes out, ids the loader
        wrote), control characters replaced, cut at TEXT_CHARS."""
        if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
            return -1
        raw = value if isinstance(value, str) else str(value)
        seen = self._raw if mask else self._unmasked
        got = seen.get(raw)
        if got is None:
            got = seen[raw] = self.text_code(safe(raw, mask=mask))
        return got

    def text_code(self, text: str) -> int:
        """The index of a text that is already safe (our own words, a REDACTED mark)."""
        got = self._index.get(text)
        if got is None:
            got = self._index[text] = len(self.values)
            self.values.append(text)
        return got

    def codes(self, values: pd.Series | np.ndarray | list[Any], *, mask: bool = True) -> np.ndarray:
        """``code`` of each value (int32), each distinct value made safe once."""
        codes, uniques = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=True)
        mapped = np.array([self.code(u, mask=mask) for u in uniques] + [-1], dtype=np.int32)
        return mapped[codes]            # (-1 indexes the sentinel at the end)


def jsonable(o: Any) -> Any:
    """Plain JSON values: numpy numbers and arrays as Python ones, NaN and infinities as null."""
    if isinstance(o, dict):
        return {str(k): jsonable(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [jsonable(v) for v in o]
    if isinstance(o, np.ndarray):
        return jsonable(o.tolist())
    if isinstance(o, (bool, np.bool_)):
        return bool(o)
    if isinstance(o, (int, np.integer)):
        return int(o)
    if isinstance(o, (float, np.floating)):
        return float(o) if math.isfinite(o) else None
    return o


def _plain(o: Any) -> Any:
    """A numpy value as a plain one (``json.dumps``'s ``default``: called only for what it cannot write)."""
    if isinstance(o, (np.ndarray, np.generic)):
        return jsonable(o)
    raise TypeError(f"{type(o).__name__} is not JSON")


def dumps(o: Any) -> str:
    """JSON (ASCII) for a page or an answer of the server: ``<``, ``>`` and ``&`` written as ``\\u`` escapes, so
    the text can sit inside a ``<script>`` element and no browser takes it for markup. NaN and infinities are
    written as null (a value the builders missed costs a second pass, never invalid JSON)."""
    try:
        text = json.dumps(o, ensure_ascii=True, allow_nan=False, separators=(",", ":"), default=_plain)
    except ValueError:
        text = json.dumps(jsonable(o), ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
