"""The attribute pivot: attribute lists (key and value entries per span or event) scattered into one Arrow column
per key, aligned with their owners. The entries of all parts are grouped by key once; a key whose entries all hold
one value field, as the contract says, is taken straight (a few keys at once, or spread from its own values), the
others are typed by ``_arrow_attribute_values``. Message content over indexed keys is left out.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..spans import key_bound
from ..spans.quality import DataQuality
from ._arrow_attribute_values import _FIELDS, _KIND_OF, _canonical_values, _convert_field, _typed
from ._arrow_values import _text, field_of
from ._spelling import CANONICAL, Spelling


def pivot_attributes(attrs: pa.Array, n: int, source: str, *, q: DataQuality,
                     sp: Spelling = CANONICAL, mixed: set[str] | None = None) -> dict[str, pa.Array]:
    """One Arrow column per attribute key, aligned with the n owners of ``attrs``.

    Each value field is extracted (and intValue parsed) once for all entries; per key, one scatter
    of entry indices and one ``take`` build the column. A key whose values come in several kinds,
    or in another kind than the contract says, goes through ``_typed`` and is counted as wrong_type; a key of
    several kinds joins ``mixed``.
    """
    return pivot_parts([AttributePart(attrs=attrs, sp=sp)], n, source, q, mixed)


@dataclass(frozen=True, kw_only=True)
class AttributePart:
    """The attribute lists of some owners, in one spelling; ``owners``: the output row of each list (-1: the
    owner was dropped, its entries join no column), None for the rows in order (the usual case)."""
    attrs: pa.Array
    sp: Spelling
    owners: np.ndarray | None = None


def pivot_parts(parts: list[AttributePart], n: int, source: str, q: DataQuality,
                mixed: set[str] | None = None) -> dict[str, pa.Array]:
    """``pivot_attributes`` over the attribute lists of several parts at once (the spelling groups of a piece,
    whose spans are put in file order by ``owners``): one column per key over all of them, so a piece of lines
    in several spellings pays the per-key work once, not once per spelling."""
    from ...contract.semconv import ATTRIBUTE_TYPES

    got = [g for p in parts if (g := _entries(p, q, source)) is not None]
    if not got:
        return {}
    if len(got) == 1:
        parent, keys_text = got[0].parent, got[0].keys
    else:
        parent = np.concatenate([g.parent for g in got])
        keys_text = pa.concat_arrays([g.keys for g in got])
    keys = pc.dictionary_encode(keys_text)
    names = keys.dictionary.to_pylist()
    # an entry without a key (malformed input) gets -1: sorted before every key, it joins no column; so does an
    # entry of a dropped owner
    codes = pc.fill_null(keys.indices, -1).to_numpy(zero_copy_only=False)
    if len(names) < 32768:
        codes = codes.astype(np.int16)      # numpy sorts 16-bit keys with a radix sort
    if len(got) == 1 and got[0].in_order:
        order = np.argsort(codes, kind="stable")        # entries come in owner order already
    else:
        codes = np.where(parent < 0, -1, codes).astype(codes.dtype)
        order = np.lexsort((parent, codes))             # by key, then owner (stable: a key twice on one owner
                                                        # keeps its entries' order)
    bounds = np.searchsorted(codes[order], np.arange(len(names) + 1))
    fields_of = [g.fields for g in got]
    # which entries hold each value field (a field no part holds is left out)
    valid = {f: np.concatenate([fs[f].is_valid().to_numpy(zero_copy_only=False) if f in fs else
                                np.zeros(len(g.keys), dtype=np.bool_) for fs, g in zip(fields_of, got, strict=True)])
             for f in (*_FIELDS, "arrayValue", "kvlistValue") if any(f in fs for fs in fields_of)}
    # per key, how many of its entries hold each value field (a count per code: -1, no key, counts for none)
    shifted = codes.astype(np.int32) + 1
    held = {f: np.bincount(shifted[m], minlength=len(names) + 1)[1:] for f, m in valid.items()}
    converted: dict[str, pa.Array] = {}
    null_at = len(parent)           # the converted fields end with one null: an index without a value points there

    def field(f: str) -> pa.Array:
        if f not in converted:
            pieces = [_convert_field(f, fs[f], q, source) if f in fs else None for fs in fields_of]
            typ = next(x.type for x in pieces if x is not None)
            whole = [x if x is not None else pa.nulls(len(g.keys), typ) for x, g in zip(pieces, got, strict=True)]
            converted[f] = pa.concat_arrays([*whole, pa.nulls(1, typ)])
        return converted[f]

    skip = _left_out(names, bounds, n, entries=len(parent), source=source, q=q)
    out: dict[str, pa.Array | None] = {}
    plain: dict[str, list[int]] = {}        # value field -> the keys whose entries all hold it, as the contract says
    for k, name in enumerate(names):
        sel = order[bounds[k]:bounds[k + 1]]
        if len(sel) == 0 or name is None or _is_content(name) or name in skip:
            continue
        present = [f for f, count in held.items() if count[k]]
        expected = ATTRIBUTE_TYPES.get(name)
        kinds = {_KIND_OF[f] for f in present}
        if len(present) == 1 and (expected is None or kinds == {expected}):
            plain.setdefault(present[0], []).append(k)
            out[name] = None                # filled below: the columns keep the keys' order
        elif not present:
            out[name] = pa.nulls(n, pa.string())
        else:
            if mixed is not None and len(present) > 1:
                mixed.add(name)
            local = np.full(n, -1, dtype=np.int64)
            local[parent[sel]] = np.arange(len(sel))
            col = _typed({f: pc.take(field(f), pa.array(sel)) for f in present}, name, expected, source, q)
            out[name] = pc.take(col, pa.array(local, mask=local < 0))
    for f, ks in plain.items():
        for name, col in _columns(field(f), ks, names, order=order, bounds=bounds, parent=parent, n=n, null_at=null_at):
            out[name] = col
    return {name: col for name, col in out.items() if col is not None}


def _left_out(names: list[str | None], bounds: np.ndarray, n: int, *, entries: int, source: str,
              q: DataQuality) -> frozenset[str]:
    """The keys whose columns would take the table past its bound (``spans.key_bound``), counted."""
    held = np.diff(bounds)
    dropped = key_bound.left_out(((name, int(held[k])) for k, name in enumerate(names)
                                    if name is not None and not _is_content(name)), n, entries)
    if dropped:
        q.add("too_many_keys", source, len(dropped), key_bound.example(dropped))
    return frozenset(dropped)


@dataclass
class _Entries:
    """One part's attribute entries: each one's owner, key, and value fields (those some entry holds)."""
    parent: np.ndarray
    keys: pa.Array
    fields: dict[str, pa.Array]
    in_order: bool                  # the owners are the lists' rows: entries come sorted by owner


def _entries(part: AttributePart, q: DataQuality, source: str) -> _Entries | None:
    parent = pc.list_parent_indices(part.attrs).to_numpy()
    if part.owners is not None:
        parent = part.owners[parent]
    flat = pc.list_flatten(part.attrs)
    if len(flat) == 0:
        return None
    keys = _text(field_of(flat, "key"), q, source, "attribute key")
    values = _canonical_values(field_of(flat, "value"), part.sp)
    held = {values.type.field(i).name for i in range(values.type.num_fields)}    # (a parse may leave the rare ones out)
    raw = {f: field_of(values, f) for f in _FIELDS if f in held}
    for f in ("arrayValue", "kvlistValue"):
        if f in held:
            raw[f] = field_of(field_of(values, f), "values")
    fields = {f: a for f, a in raw.items() if a.null_count < len(a)}
    return _Entries(parent=parent, keys=keys, fields=fields, in_order=part.owners is None)


_TAKE_CELLS = 1 << 22       # cells (keys x owners) per take: the index array costs 8 bytes a cell
# keys are taken together only for pieces of fewer owners; with more, each key's column is built from its own
# values (``_spread``): a take of n owners per key cost about 7 ns a cell even where most of them are null
_BATCH_BELOW = 8192


def _columns(values: pa.Array, keys: list[int], names: list[str | None], *, order: np.ndarray, bounds: np.ndarray,
             parent: np.ndarray, n: int, null_at: int) -> Iterator[tuple[str, pa.Array]]:
    """The columns of ``keys`` (codes of attribute keys whose entries all hold ``values``' field; ``order`` the
    entries sorted by key, ``bounds`` each key's range in it), n owners each.

    When the owners are few, a few keys at a time: one ``take`` for all of them, cut into columns (slices, no
    copy); a take per key made the fixed cost of a call most of the pivot when a piece holds many keys and few
    owners (a piece of lines in several spellings is decoded a group at a time). Otherwise one column per key,
    taking only the key's own entries and spreading them over the n owners (``_spread``): most keys of a piece
    of several dialects are on a few of its spans."""
    if n >= _BATCH_BELOW:
        for k in keys:
            sel = order[bounds[k]:bounds[k + 1]]
            owners = parent[sel]
            if len(owners) > 1:
                last = np.empty(len(owners), dtype=bool)        # a key twice on one owner: its last entry
                np.not_equal(owners[1:], owners[:-1], out=last[:-1])
                last[-1] = True
                if not last.all():
                    sel, owners = sel[last], owners[last]
            taken = pc.take(values, pa.array(sel))
            col = _spread(taken, owners, n)
            if col is None:
                pos = np.full(n, null_at, dtype=np.int64)
                pos[owners] = sel
                col = pc.take(values, pa.array(pos))
            yield str(names[k]), col
        return
    per = max(1, _TAKE_CELLS // max(n, 1))
    for start in range(0, len(keys), per):
        chunk = keys[start:start + per]
        sels = [order[bounds[k]:bounds[k + 1]] for k in chunk]
        entries = np.concatenate(sels)
        at = np.repeat(np.arange(len(chunk), dtype=np.int64), [len(x) for x in sels])
        pos = np.full(len(chunk) * n, null_at, dtype=np.int64)
        pos[at * n + parent[entries]] = entries         # a key twice on one owner: its last entry, as before
        taken = pc.take(values, pa.array(pos))
        if pa.types.is_string(taken.type):
            taken = taken.cast(pa.large_string())       # as ``_spread`` gives text
        for i, k in enumerate(chunk):
            yield str(names[k]), taken.slice(i * n, n)


_FIXED = {pa.int64(): np.int64, pa.float64(): np.float64}


def _spread(taken: pa.Array, owners: np.ndarray, n: int) -> pa.Array | None:
    """An array of n values: ``taken[i]`` at ``owners[i]`` (distinct, ascending), null elsewhere; built from
    ``taken``'s buffers (the values of strings and lists are shared, not copied). None for a type it does not
    build (the caller takes)."""
    typ = taken.type
    m = len(taken)
    if taken.offset:
        return None
    valid = np.zeros(n, dtype=bool)
    if taken.null_count:
        valid[owners] = taken.is_valid().to_numpy(zero_copy_only=False)
    else:
        valid[owners] = True
    nulls = n - (m - taken.null_count)
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    bufs = taken.buffers()
    dtype = _FIXED.get(typ)
    if dtype is not None:
        out = np.zeros(n, dtype=dtype)
        out[owners] = np.frombuffer(bufs[1], dtype=dtype, count=m)
        return pa.Array.from_buffers(typ, n, [bitmap, pa.py_buffer(out)], nulls)
    if pa.types.is_boolean(typ):
        bits = np.zeros(n, dtype=bool)
        bits[owners] = np.unpackbits(np.frombuffer(bufs[1], dtype=np.uint8), count=m, bitorder="little")
        return pa.Array.from_buffers(typ, n, [bitmap, pa.py_buffer(np.packbits(bits, bitorder="little"))], nulls)
    string, listed = pa.types.is_string(typ), pa.types.is_list(typ)
    if not (string or listed or pa.types.is_large_string(typ)):
        return None
    width = np.int32 if string or listed else np.int64
    # owner i's value starts at the offset of the first taken value whose owner is i or after: each taken offset
    # repeated over the owners up to its own (one pass over the n owners, not a scatter and a running sum)
    offsets = np.frombuffer(bufs[1], dtype=width, count=m + 1)
    counts = np.diff(owners, prepend=-1, append=n)
    if listed:
        spread = pa.py_buffer(np.repeat(offsets, counts))
        return pa.Array.from_buffers(typ, n, [bitmap, spread], nulls, children=[taken.values])
    # text as large_string, the type pandas keeps its strings in: widened here, on the m taken offsets, instead of
    # the cast of the n spread ones that converting to pandas makes (a fresh 8 bytes an owner, per key)
    spread = pa.py_buffer(np.repeat(offsets.astype(np.int64), counts))
    return pa.Array.from_buffers(pa.large_string(), n, [bitmap, spread, bufs[2]], nulls)


_INDEXED = re.compile(r"\.\d+(\.|$)")
# indexed keys that stay: the first tool offered to a model call, and the first tool call in its answer (whether it
# was offered any, whether it asked for one: the analysis tells a framework's turn limit from them)
_KEPT_INDEXED = frozenset({"llm.tools.0.tool.json_schema", "llm.request.functions.0.name",
                           "llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
                           "gen_ai.completion.0.tool_calls.0.name"})


def _is_content(key: str) -> bool:
    """Message content spread over indexed keys (``llm.input_messages.3.message.content``): one column per
    index would be thousands of columns the analysis never reads. The first completion's finish reason stays, and
    the first tool offered to a model call."""
    return _INDEXED.search(key) is not None and not key.endswith("finish_reason") and key not in _KEPT_INDEXED
