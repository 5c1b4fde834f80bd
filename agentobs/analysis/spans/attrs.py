"""Span attributes named on the command line (``--success-attr KEY=VALUE``, ``--where KEY=VALUE``): which span
column a key names, and a value given as text compared in the attribute's own type."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ...errors import InputError

TRUE = frozenset({"1", "true", "yes", "y", "success", "pass", "passed", "ok"})
FALSE = frozenset({"0", "false", "no", "n", "failure", "fail", "failed"})
ATTRIBUTE_COLUMN = {"service.name": "service_name"}      # resource attributes kept as span columns
# fields agentobs keeps for every span: not attributes an instrumentation sets
NOT_ATTRIBUTES = frozenset({"trace_id", "span_id", "parent_span_id", "name", "kind", "start_ns", "end_ns",
                            "status_code", "status_message", "source", "run_id"})


def as_bool(v: Any) -> bool | None:
    """A label or attribute value as true/false (``1``, ``yes``, ``passed``...; ``0``, ``no``...), None when it is
    neither."""
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)) and v in (0, 1):
        return bool(v)
    if isinstance(v, str):
        word = v.strip().lower()
        return True if word in TRUE else False if word in FALSE else None
    return None


def column_of(key: str, option: str) -> str:
    """The span column of attribute ``key``; an InputError for a field every span has (not an attribute)."""
    column = ATTRIBUTE_COLUMN.get(key, key)
    if column in NOT_ATTRIBUTES or column.startswith("_"):
        raise InputError(f"{option} {key}: not a span attribute (a field agentobs keeps for every span); "
                         "name an attribute the instrumentation sets, e.g. eval.passed=true")
    return column


def equals(values: pd.Series, value: str) -> np.ndarray:
    """Which values equal ``value`` given as text, compared in the values' own type: as a number for a numeric
    attribute (``1`` equals ``1.0``), as true/false for a boolean one (``1``, ``yes``), else as text, case and
    surrounding spaces aside. A missing value equals nothing."""
    if pd.api.types.is_bool_dtype(values.dtype):
        want = as_bool(value)
        return np.zeros(len(values), bool) if want is None else (values == want).fillna(False).to_numpy(dtype=bool)
    if pd.api.types.is_numeric_dtype(values.dtype):
        try:
            number = float(value)
        except ValueError:
            return np.zeros(len(values), bool)
        return (values.astype("Float64") == number).fillna(False).to_numpy(dtype=bool)
    text = values.astype("string").str.strip().str.lower()
    return (text == value.strip().lower()).fillna(False).to_numpy(dtype=bool)


__all__ = ["ATTRIBUTE_COLUMN", "FALSE", "NOT_ATTRIBUTES", "TRUE", "as_bool", "column_of", "equals"]
