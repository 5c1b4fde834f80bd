"""``agentobs trace --format json``: a trace's span tree as nested JSON objects, written as it is built.

``{"trace_id": ..., "spans": N, "roots": [{<span>, "children": [{<span>, "children": [...]}, ...]}, ...]}``, one
object per span with the columns of ``trace_tree`` (``depth`` and ``parent`` are the nesting itself). The text is
built in one pass over the rows in tree order, closing each object when its subtree ends: no recursion and no tree
of Python objects, so a parent chain 200,000 deep is written like a flat trace (a reader that parses JSON
recursively may still refuse that depth). Strings are masked as every JSON agentobs writes (``render.json_text``).
"""
from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np
import pandas as pd

from ..contract.redaction import secrets_masked

FIELDS = ("span_id", "parent_span_id", "name", "role", "start_ms", "duration_ms", "input_tokens", "output_tokens",
          "cost_usd", "status", "error", "details", "orphan", "cycle")
EXTRA = {"_dialect": "dialect", "_role_evidence": "role_evidence", "_call": "call_id", "run_id": "run_id"}
IDS = ("span_id", "parent_span_id")        # hex, as the loader writes them: nothing to mask
_BATCH = 8192


def trace_json(tree: pd.DataFrame, trace_id: str) -> Iterator[str]:
    """Pieces of the JSON text, in order (joined, one document and a newline). Each column is encoded once (a text
    once per distinct value), each object joined from its columns' pieces."""
    names = [f for f in FIELDS if f in tree.columns] + [c for c in EXTRA if c in tree.columns]
    encoded = [_encoded(tree[c], mask=c not in IDS) for c in names]
    template = "{" + ", ".join(json.dumps(EXTRA.get(c, c)) + ": %s" for c in names) + ', "children": ['
    depth = tree["depth"].tolist() if len(tree) else []
    yield _escape(json.dumps({"trace_id": trace_id, "spans": len(tree)})[:-1]) + ', "roots": ['
    out: list[str] = []
    for i, parts in enumerate(zip(*encoded, strict=True)):
        if i:
            closing = depth[i - 1] - depth[i] + 1   # objects that end here (0: this span is the one before's child)
            out.append("]}" * closing + ("," if closing else ""))
        out.append(template % parts)
        if len(out) >= _BATCH:
            yield "".join(out)
            out.clear()
    if depth:
        out.append("]}" * (depth[-1] + 1))
    out.append("]}\n")
    yield "".join(out)


def _encoded(col: pd.Series, *, mask: bool) -> list[str]:
    """A column's values as JSON text: null for missing, NaN and infinities; numbers and flags as they are; text
    masked (``contract.redaction.secrets_masked``, not the hex ids the loader writes) and escaped, once per distinct
    value."""
    if pd.api.types.is_bool_dtype(col):
        return ["true" if v else "false" for v in col.tolist()]
    if pd.api.types.is_numeric_dtype(col):
        values = col.to_numpy(dtype=float, na_value=np.nan)
        text = values.astype(str)                   # numpy's shortest round-trip form: valid JSON numbers
        return np.where(np.isfinite(values), text, "null").tolist()
    codes, uniques = pd.factorize(col.astype(object), use_na_sentinel=True)
    texts = [str(v) for v in uniques]
    done = np.array([(f'"{v}"' if v.isascii() and v.isalnum() else _escape(json.dumps(v))) if not mask
                     else _escape(json.dumps(secrets_masked(v))) for v in texts] + ["null"], dtype=object)
    return done[codes].tolist()         # (a missing value's code is -1: the last, null)


def _escape(text: str) -> str:
    """``<``, ``>`` and ``&`` as ``\\u`` escapes (the same values), as ``render.json_text`` writes them."""
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
