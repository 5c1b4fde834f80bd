"""How the spans of each source got their roles: by a dialect, by structure, or not at all.

A framework no dialect describes shows here first: its spans are read by structure, or not classified, and the
most frequent names of the spans left without a role say what to look at (``agentobs trace ID SOURCE --roles``
shows a trace span by span). Counts add (``Classified.__add__``), so the Dask engine's partitions sum.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..spans.dialects import STRUCTURE, Normalized

TOP_NAMES = 20              # unclassified span names kept per source (the report shows the first few)


@dataclass(kw_only=True)
class Classified:
    """Spans of one source: given a role by a dialect, by structure, or by nothing; the names of the last."""
    dialect: int = 0
    structure: int = 0
    unclassified: int = 0
    names: Counter[str] = field(default_factory=Counter)

    def __add__(self, other: Classified) -> Classified:
        names = self.names + other.names
        return Classified(dialect=self.dialect + other.dialect, structure=self.structure + other.structure,
                          unclassified=self.unclassified + other.unclassified,
                          names=Counter(dict(_top(names, TOP_NAMES))))

    def top(self, k: int = 5) -> list[tuple[str, int]]:
        return _top(self.names, k)

    def to_dict(self) -> dict[str, object]:
        return {"dialect": self.dialect, "structure": self.structure, "unclassified": self.unclassified,
                "unclassified_names": [[n, c] for n, c in self.top()]}


def _top(names: Counter[str], k: int) -> list[tuple[str, int]]:
    return sorted(names.items(), key=lambda kv: (-kv[1], kv[0]))[:k]


def classified(spans: pd.DataFrame, norm: Normalized) -> dict[str, Classified]:
    """Per source (in name order), how its spans got their roles."""
    if spans.empty:
        return {}
    src = spans["source"].astype(str).to_numpy() if "source" in spans.columns else np.full(len(spans), "")
    how = np.where(norm.dialect == STRUCTURE, 1, np.where(norm.dialect >= 0, 0, 2))
    frame = pd.DataFrame({"src": src, "how": how})
    counts = frame.groupby(["src", "how"], sort=False).size()
    out: dict[str, Classified] = {}
    for s in sorted(set(src.tolist())):
        c = counts.get(s)
        got = [int(c.get(k, 0)) if c is not None else 0 for k in (0, 1, 2)]
        out[s] = Classified(dialect=got[0], structure=got[1], unclassified=got[2])
    none = how == 2
    if none.any():
        names = pd.DataFrame({"src": src[none], "name": spans["name"].astype(str).to_numpy()[none]})
        per = names.groupby(["src", "name"], sort=False).size()
        for (s, name), n in per.items():
            out[str(s)].names[str(name)] = int(n)
        for c in out.values():
            c.names = Counter(dict(_top(c.names, TOP_NAMES)))
    return out
