"""How many attribute columns a load keeps. Every attribute key becomes a column as long as the table (one cell per
span and key, most of them null), so keys that each sit on a few spans cost spans x keys: a 4 MB file of 4,000
spans with ten keys of their own each took 3 GB. The columns kept are bounded by what the input holds: the keys of
the contract always, then the others from the most spans to the fewest, while the table stays within
``CELLS_PER_ENTRY`` cells per attribute entry read (or ``FLOOR_CELLS``, for small inputs) and ``MAX_KEYS`` columns.
The keys left out are counted (``too_many_keys``); their values are not read.
"""
from __future__ import annotations

from collections.abc import Iterable

import pandas as pd
import pyarrow as pa

from ...contract.semconv import ATTRIBUTE_TYPES
from .attrs import NOT_ATTRIBUTES

MAX_KEYS = 2048                 # attribute columns besides the contract's
CELLS_PER_ENTRY = 16            # table cells (8 or 9 bytes each) per attribute entry of the input
FLOOR_CELLS = 1 << 22           # what any input may take, however few its entries


def always(name: str) -> bool:
    """Whether a column is kept whatever the input: the span's own fields and the contract's attributes."""
    return name in ATTRIBUTE_TYPES or name in NOT_ATTRIBUTES or name.startswith("_") or name == "service_name"


def left_out(counts: Iterable[tuple[str, int]], rows: int, entries: int) -> list[str]:
    """The keys (with how many rows hold each) whose columns would take the table past its bound, the rarest
    first to go; [] when all fit."""
    others = [(name, held) for name, held in counts if held > 0 and not always(name)]
    budget = max(FLOOR_CELLS, CELLS_PER_ENTRY * entries) // max(rows, 1)
    room = min(MAX_KEYS, budget)
    if len(others) <= room:
        return []
    others.sort(key=lambda kv: -kv[1])              # (stable: keys held as often keep their order)
    return [name for name, _ in others[room:]]


def example(dropped: list[str]) -> str:
    """The finding's example: how many keys, the bound, and a few of them."""
    shown = ", ".join(repr(k[:40]) for k in dropped[:3])
    return (f"{len(dropped):,} attribute keys left out (at most {MAX_KEYS:,} besides the contract's, and no more "
            f"than {CELLS_PER_ENTRY} table cells per attribute entry): {shown}")


def held_over_bound(held: dict[str, int], rows: int) -> list[str]:
    """``left_out`` for a table made of others (pieces of a file, files of a folder): ``held`` the values each column
    holds (the entries read), ``rows`` the rows of the whole."""
    return left_out(held.items(), rows, sum(held.values()))


def bounded_tables(tables: list[pa.Table]) -> tuple[list[pa.Table], list[str]]:
    """The Arrow tables to concatenate, without the columns that would take the whole past its bound."""
    held: dict[str, int] = {}
    for t in tables:
        for name, col in zip(t.column_names, t.columns, strict=True):
            held[name] = held.get(name, 0) + len(col) - col.null_count
    dropped = held_over_bound(held, sum(t.num_rows for t in tables))
    if not dropped:
        return tables, []
    gone = set(dropped)
    return [t.select([i for i, c in enumerate(t.column_names) if c not in gone]) for t in tables], dropped


def bounded_frames(frames: list[pd.DataFrame]) -> tuple[list[pd.DataFrame], list[str]]:
    """``bounded_tables`` for pandas frames."""
    held: dict[str, int] = {}
    for f in frames:
        for name, count in f.count().items():
            held[str(name)] = held.get(str(name), 0) + int(count)
    dropped = held_over_bound(held, sum(len(f) for f in frames))
    if not dropped:
        return frames, []
    gone = set(dropped)
    return [f[[c for c in f.columns if c not in gone]] for f in frames], dropped
