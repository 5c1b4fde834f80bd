"""Trace and span ids to one form: lower-case hex of the right length, vectorized.

OTLP/JSON writes ids as hex (either case); protobuf's generic JSON mapping writes the same bytes as
base64 (standard or URL-safe alphabet, padded or not). Both become lower-case hex, so ids, parent
links, span links and ``agentobs trace <id>`` agree whatever wrote the file. Anything else (wrong
length, other characters, all zeros) is invalid.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_LOWER_HEX = np.zeros(256, dtype=bool)
_LOWER_HEX[np.frombuffer(b"0123456789abcdef", dtype=np.uint8)] = True
_B64 = np.full(256, 255, dtype=np.uint8)
_B64[np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", dtype=np.uint8)] = \
    np.arange(64, dtype=np.uint8)
_B64[ord("-")], _B64[ord("_")] = 62, 63          # the URL-safe alphabet
_B64[ord("=")] = 0
_B64_CHAR = (_B64 != 255) & (np.arange(256) != ord("="))     # a character of either alphabet, not padding
_HEX_DIGITS = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


def normalize_ids(arr: pa.Array, nbytes: int, *, zero_is_null: bool = False,
                  empty_is_null: bool = False) -> tuple[pa.Array, np.ndarray]:
    """(ids as lower-case hex strings, mask of the invalid ones).

    Missing ids are invalid unless ``empty_is_null`` (a parent id: absent or "" means a root), and an id
    of all zeros is invalid unless ``zero_is_null`` (some exporters write zeros for "no parent").
    Invalid ids come out null.
    """
    width = 2 * nbytes
    s = arr if pa.types.is_string(arr.type) else pc.cast(arr, pa.string())
    n = len(s)
    if empty_is_null and s.null_count < n:
        empty = pc.equal(s, "")
        if pc.any(empty).as_py():
            s = pc.if_else(empty, pa.scalar(None, pa.string()), s)
    missing = s.is_null().to_numpy(zero_copy_only=False)
    if not _all_lower_hex(s, width):
        b64 = _all_padded_base64(s, nbytes)
        s = b64 if b64 is not None else _convert(s, nbytes)
    bad = s.is_null().to_numpy(zero_copy_only=False) & ~missing
    zero = pc.fill_null(pc.equal(s, "0" * width), False)
    if pc.any(zero).as_py():
        s = pc.if_else(zero, pa.scalar(None, pa.string()), s)
        if not zero_is_null:
            bad |= zero.to_numpy(zero_copy_only=False)
    if not empty_is_null:
        bad |= missing
    return s, bad


def _all_lower_hex(s: pa.Array, width: int) -> bool:
    """True when every present id already has the canonical form (checked on the raw buffers)."""
    present = s.drop_null() if s.null_count else s
    if len(present) == 0:
        return True
    present = present.cast(pa.string())
    _, offsets_buf, data_buf = present.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int32)[present.offset:present.offset + len(present) + 1]
    if not (np.diff(offsets) == width).all():
        return False
    data = np.frombuffer(data_buf, dtype=np.uint8)[offsets[0]:offsets[-1]]
    return bool(_LOWER_HEX.take(data).all())        # (take: half the time of indexing with the bytes)


def _all_padded_base64(s: pa.Array, nbytes: int) -> pa.Array | None:
    """The ids as lower-case hex when every present one is padded base64 (as protobuf's JSON writer spells them),
    checked and decoded on the raw buffers; else None (``_convert`` then sorts them out one by one)."""
    present = s.drop_null() if s.null_count else s
    m = len(present)
    if m == 0:
        return None
    sig, padded = (8 * nbytes + 5) // 6, 4 * ((nbytes + 2) // 3)
    _, offsets_buf, data_buf = present.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int32)[present.offset:present.offset + m + 1]
    if not (np.diff(offsets) == padded).all():
        return None
    chars = np.frombuffer(data_buf, dtype=np.uint8)[offsets[0]:offsets[-1]].reshape(m, padded)
    if not (_B64_CHAR[chars[:, :sig]].all() and (chars[:, sig:] == ord("=")).all()):
        return None
    hexed = _b64_to_hex(present, nbytes)
    if not s.null_count:
        return hexed
    valid = s.is_valid().to_numpy(zero_copy_only=False)
    pos = np.cumsum(valid) - 1
    return pc.take(hexed, pa.array(pos, mask=~valid))


def _convert(s: pa.Array, nbytes: int) -> pa.Array:
    """Hex of any case and base64 to lower-case hex; anything else null."""
    width = 2 * nbytes
    lower = pc.utf8_lower(s)
    hex_ok = pc.fill_null(pc.match_substring_regex(lower, f"^[0-9a-f]{{{width}}}$"), False)
    padded = 4 * ((nbytes + 2) // 3)
    b64_ok = pc.fill_null(pc.and_(
        pc.greater_equal(pc.utf8_length(s), (8 * nbytes + 5) // 6),
        pc.match_substring_regex(s, f"^[A-Za-z0-9+/_-]{{{(8 * nbytes + 5) // 6}}}={{0,{padded - (8 * nbytes + 5) // 6}}}$")),
        False)
    out = pc.if_else(hex_ok, lower, pa.scalar(None, pa.string()))
    rows = np.nonzero(b64_ok.to_numpy(zero_copy_only=False))[0]
    if len(rows):
        cand = pc.utf8_rpad(pc.take(s, pa.array(rows)), width=padded, padding="=")
        decoded = _b64_to_hex(cand, nbytes)
        pos = np.full(len(s), -1, dtype=np.int64)
        pos[rows] = np.arange(len(rows))
        from_b64 = pc.take(decoded, pa.array(pos, mask=pos < 0))
        out = pc.coalesce(out, from_b64)
    return out


def _b64_to_hex(cand: pa.Array, nbytes: int) -> pa.Array:
    """Fixed-width base64 strings (padded) to lower-case hex; a character outside the alphabet gives null."""
    cand = cand.cast(pa.string())
    m = len(cand)
    _, offsets_buf, data_buf = cand.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int32)[cand.offset:cand.offset + m + 1]
    width = int(offsets[1] - offsets[0]) if m else 0
    chars = np.frombuffer(data_buf, dtype=np.uint8)[offsets[0]:offsets[-1]].reshape(m, width)
    six = _B64[chars]
    bad = (six == 255).any(axis=1)
    quads = six.astype(np.uint32).reshape(m, width // 4, 4)
    bits = (quads[..., 0] << 18) | (quads[..., 1] << 12) | (quads[..., 2] << 6) | quads[..., 3]
    raw = np.stack([(bits >> 16) & 255, (bits >> 8) & 255, bits & 255], axis=-1).reshape(m, -1)[:, :nbytes]
    raw = raw.astype(np.uint8)
    hexed = np.empty((m, 2 * nbytes), dtype=np.uint8)
    hexed[:, 0::2] = _HEX_DIGITS[raw >> 4]
    hexed[:, 1::2] = _HEX_DIGITS[raw & 15]
    out = pa.array(hexed.reshape(-1).view(f"S{2 * nbytes}")).cast(pa.string())
    if bad.any():
        out = pc.if_else(pa.array(bad), pa.scalar(None, pa.string()), out)
    return out
