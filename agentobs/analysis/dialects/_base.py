"""What a dialect is: how it classifies a span, and where it keeps each normalized value."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ._fields import code_of, json_numbers, num, prefer, text

# what a span is, once classified (int8 codes in the spans frame's ``_kind``)
OTHER, AGENT, STEP, CHAT, TOOL, CHAIN = 0, 1, 2, 3, 4, 5
KIND_NAMES = np.array(["other", "agent", "step", "chat", "tool", "chain"], dtype=object)

# the normalized values every dialect may fill (``Fields``): text as Arrow string arrays, numbers as float64
# with NaN for unknown, flags as bool
TEXT_FIELDS = ("agent", "model", "provider", "tool", "args", "error_type", "finish")
NUMBER_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens",
                 "reasoning_tokens", "cost")
Fields = dict[str, Any]


@dataclass(frozen=True)
class Dialect:
    """One span dialect, declared: its marker attribute, what each marker value means, and its keys.

    ``kinds`` maps the lower-cased marker value to a kind. Text and number fields name the
    attribute keys to read, first present wins; ``usage_json`` reads numbers from a JSON text
    attribute (key -> {field: [paths]}). ``refine`` adjusts the kinds the marker gave (e.g. a graph
    node that the instrumentation calls an agent), and ``extra`` adds or overrides fields.
    """
    name: str
    marker: str | None
    kinds: Mapping[str, int]
    text: Mapping[str, tuple[str, ...]]
    numbers: Mapping[str, tuple[str, ...]]
    usage_json: Mapping[str, Mapping[str, Iterable[tuple[str, ...]]]] | None = None
    refine: Callable[[pd.DataFrame, np.ndarray], np.ndarray] | None = None
    extra: Callable[[pd.DataFrame, Fields], None] | None = None
    claim_rows: Callable[[pd.DataFrame], np.ndarray | None] | None = None
    extra_columns: tuple[str, ...] = ()

    @property
    def columns(self) -> set[str]:
        """The span columns this dialect reads (the marker, its keys, ``name``) beyond what ``extra`` reads."""
        cols = {"name", *(k for keys in self.text.values() for k in keys),
                *(k for keys in self.numbers.values() for k in keys), *(self.usage_json or {})}
        if self.marker:
            cols.add(self.marker)
        return cols | set(self.extra_columns)

    def present(self, spans: pd.DataFrame) -> bool:
        if self.claim_rows is not None:
            return True
        return self.marker is not None and self.marker in spans.columns and bool(spans[self.marker].notna().any())

    def claim(self, spans: pd.DataFrame) -> np.ndarray | None:
        """The kind of each span this dialect classifies, -1 elsewhere; None when it classifies none."""
        if self.claim_rows is not None:
            out = self.claim_rows(spans)
        elif not self.present(spans):
            return None
        else:
            out = code_of(text(spans, (self.marker,)), dict(self.kinds), OTHER)       # type: ignore[arg-type]
        if out is None or not (out >= 0).any():
            return None
        if self.refine is not None:
            out = self.refine(spans, out)
        return out

    def fields(self, spans: pd.DataFrame) -> Fields:
        out: Fields = {}
        for f, keys in self.text.items():
            out[f] = text(spans, keys)
        for f, keys in self.numbers.items():
            out[f] = num(spans, keys)
        for key, paths in (self.usage_json or {}).items():
            got = json_numbers(text(spans, (key,)), paths)
            for f, v in got.items():
                out[f] = prefer(out[f], v) if f in out else v
        if self.extra is not None:
            self.extra(spans, out)
        return out
