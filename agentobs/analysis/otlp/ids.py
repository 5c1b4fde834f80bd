"""Trace and span ids to one form: lower-case hex of the right length, vectorized.

OTLP/JSON writes ids as hex (either case); protobuf's generic JSON mapping writes the same bytes as
base64 (standard or URL-safe alphabet, padded or not). Both become lower-case hex, so ids, parent
links, span links and ``agentobs trace <id>`` agree whatever wrote the file. Anything else (wrong
length, other characters, all zeros) is invalid.
"""
from __future__ import annotations

import base64
import binascii

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_LOWER_HEX_BYTES = b"0123456789abcdef"
_TO_LOWER = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz")
_AS_STANDARD = bytes.maketrans(b"-_=", b"+/A")       # URL-safe base64 as standard, padding as zero bits
_LOWER_HEX = np.zeros(256, dtype=bool)
_LOWER_HEX[np.frombuffer(_LOWER_HEX_BYTES, dtype=np.uint8)] = True
_B64 = np.full(256, 255, dtype=np.uint8)
_B64[np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", dtype=np.uint8)] = \
    np.arange(64, dtype=np.uint8)
_B64[ord("-")], _B64[ord("_")] = 62, 63          # the URL-safe alphabet
_B64[ord("=")] = 0
_B64_CHAR = (_B64 != 255) & (np.arange(256) != ord("="))     # a character of either alphabet, not padding
_HEX_DIGITS = np.frombuffer(_LOWER_HEX_BYTES, dtype=np.uint8)
_LOWER = np.arange(256, dtype=np.uint8)                       # ASCII upper-case letters to lower case
_LOWER[ord("A"):ord("Z") + 1] += 32


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
    at_once = _at_once(s, nbytes, missing)
    s = at_once if at_once is not None else _convert(s, nbytes)
    bad = s.is_null().to_numpy(zero_copy_only=False) & ~missing
    zero = pc.fill_null(pc.equal(s, "0" * width), False)
    if pc.any(zero).as_py():
        s = pc.if_else(zero, pa.scalar(None, pa.string()), s)
        if not zero_is_null:
            bad |= zero.to_numpy(zero_copy_only=False)
    if not empty_is_null:
        bad |= missing
    return s, bad


_HEX_CHARS = frozenset("0123456789abcdef")


def trace_id_of(text: str) -> str | None:
    """A trace id as a user types it, written as the loader writes ids (32 lower-case hex digits), or None when the
    text is no trace id: hex of either case, ``0x`` or not, its leading zeros left out or not (a 64-bit Zipkin or
    Jaeger id of 16 digits, which the loader pads), or base64 (as protobuf's JSON writes ids, as the loader reads
    them); white space around it ignored (copied from a page or a log)."""
    t = text.strip()
    digits = t.lower().removeprefix("0x")
    if 0 < len(digits) <= 32 and _HEX_CHARS.issuperset(digits):
        return digits.zfill(32)
    ids, bad = normalize_ids(pa.array([t], pa.string()), 16)
    return None if bad[0] else str(ids[0].as_py())


def _at_once(s: pa.Array, nbytes: int, missing: np.ndarray) -> pa.Array | None:
    """The ids converted a whole form at a time, by the lengths of the present ones (``missing``: the nulls): hex,
    padded base64, or both (lines of several spellings decoded at once); None when an id is of another length or
    not of its form (``_convert`` then sorts them out one by one)."""
    width, padded = 2 * nbytes, 4 * ((nbytes + 2) // 3)
    m = len(s)
    if s.null_count == m:
        return s
    bufs = s.buffers()
    lengths = np.diff(np.frombuffer(bufs[1], dtype=np.int32, count=s.offset + m + 1)[s.offset:])
    hexed = lengths == width
    if s.null_count:
        hexed &= ~missing
    n_hex = int(hexed.sum())
    if n_hex == m - s.null_count:
        return _hex_lowered(s, width)
    based = lengths == padded
    if s.null_count:
        based &= ~missing
    n_b64 = int(based.sum())
    if n_b64 == m - s.null_count:
        return _all_padded_base64(s, nbytes)
    if n_hex + n_b64 == m - s.null_count:
        return _hex_or_padded_base64(s, nbytes, np.flatnonzero(hexed), np.flatnonzero(based))
    return None


def _hex_lowered(s: pa.Array, width: int) -> pa.Array | None:
    """The ids as they are when every present one has the canonical form, lower-cased when every present one is
    hex of the right width in either case (checked and lowered on the raw buffers); else None."""
    if s.null_count == len(s):
        return s
    got = _present_bytes(s, width)
    if got is None:
        return None
    raw, m = got
    # every byte a lower-case hex digit: deleting those leaves nothing (bytes.translate: a third of the time of a
    # table lookup over the bytes, which made a bool per byte)
    if not raw.translate(None, _LOWER_HEX_BYTES):
        return s
    raw = raw.translate(_TO_LOWER)
    if raw.translate(None, _LOWER_HEX_BYTES):
        return None
    return _in_place_of(s, _fixed_width(raw, m, width))


def _present_bytes(s: pa.Array, width: int) -> tuple[bytes, int] | None:
    """(the bytes of the present ids back to back, how many) when every present id is ``width`` bytes long, else
    None (read on the raw buffers)."""
    present = (s.drop_null() if s.null_count else s).cast(pa.string())
    m = len(present)
    _, offsets_buf, data_buf = present.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int32)[present.offset:present.offset + m + 1]
    if not (np.diff(offsets) == width).all():
        return None
    return bytes(memoryview(data_buf)[int(offsets[0]):int(offsets[-1])]), m


def _fixed_width(data: bytes, m: int, width: int) -> pa.Array:
    """``m`` strings of ``width`` bytes each, back to back in ``data``."""
    offsets = np.arange(m + 1, dtype=np.int32) * width
    return pa.Array.from_buffers(pa.string(), m, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _in_place_of(s: pa.Array, present: pa.Array) -> pa.Array:
    """``present`` (one value per present entry of ``s``, in order) with the nulls of ``s`` where they were."""
    if not s.null_count:
        return present
    valid = s.is_valid().to_numpy(zero_copy_only=False)
    pos = np.cumsum(valid) - 1
    return pc.take(present, pa.array(pos, mask=~valid))


def _all_padded_base64(s: pa.Array, nbytes: int) -> pa.Array | None:
    """The ids as lower-case hex when every present one is padded base64 (as protobuf's JSON writer spells them),
    checked and decoded on the raw buffers; else None (``_convert`` then sorts them out one by one)."""
    sig, padded = (8 * nbytes + 5) // 6, 4 * ((nbytes + 2) // 3)
    got = _present_bytes(s, padded) if s.null_count < len(s) else None
    if got is None:
        return None
    raw, m = got
    chars = np.frombuffer(raw, dtype=np.uint8).reshape(m, padded)
    # the padding where it belongs, and nowhere else
    if not ((chars[:, sig:] == ord("=")).all() and raw.count(b"=") == m * (padded - sig)):
        return None
    hexed = _decoded_at_once(raw, m, nbytes, padded)
    return None if hexed is None else _in_place_of(s, hexed)


def _hex_or_padded_base64(s: pa.Array, nbytes: int, hex_rows: np.ndarray, b64_rows: np.ndarray) -> pa.Array | None:
    """The ids as lower-case hex, ``hex_rows`` hex of the right width and ``b64_rows`` padded base64 (the rows of the
    present ids), each form converted at once as above and the two put back in place; else None."""
    got_hex = _hex_lowered(s.take(pa.array(hex_rows)), 2 * nbytes)
    got_b64 = _all_padded_base64(s.take(pa.array(b64_rows)), nbytes)
    if got_hex is None or got_b64 is None:
        return None
    pos = np.full(len(s), -1, dtype=np.int64)
    pos[hex_rows] = np.arange(len(hex_rows))
    pos[b64_rows] = len(hex_rows) + np.arange(len(b64_rows))
    return pc.take(pa.concat_arrays([got_hex, got_b64]), pa.array(pos, mask=pos < 0))


def _decoded_at_once(raw: bytes, m: int, nbytes: int, padded: int) -> pa.Array | None:
    """``m`` ids of ``padded`` base64 characters each, their padding checked, as lower-case hex: the padding read as
    zero bits ("A"), the URL-safe alphabet as the standard one, then one decode of all of them and one hex of the
    bytes (a sixteenth of the time of decoding the characters with numpy); None when a character is in neither
    alphabet."""
    if m * 2 * nbytes >= 2 ** 31:
        return None                                  # (32-bit offsets: never for a piece of a file)
    try:
        decoded = base64.b64decode(raw.translate(_AS_STANDARD), validate=True)
    except binascii.Error:
        return None
    ids = np.frombuffer(decoded, dtype=np.uint8).reshape(m, padded // 4 * 3)[:, :nbytes]
    return _fixed_width(binascii.hexlify(ids.tobytes()), m, 2 * nbytes)


def _convert(s: pa.Array, nbytes: int) -> pa.Array:
    """Hex of any case and base64 (either alphabet, padded or not) to lower-case hex; anything else null.

    Vectorized on the raw buffers: the ids of each length a valid id can have (hex, base64 with 0, 1 or 2 padding
    characters) are gathered as a matrix of bytes, checked and converted at once."""
    width, sig, padded = 2 * nbytes, (8 * nbytes + 5) // 6, 4 * ((nbytes + 2) // 3)
    s = s.cast(pa.string())
    m = len(s)
    out = np.zeros((m, width), dtype=np.uint8)
    ok = np.zeros(m, dtype=bool)
    bufs = s.buffers()
    if m and bufs[2] is not None:
        offsets = np.frombuffer(bufs[1], dtype=np.int32, count=s.offset + m + 1)[s.offset:]
        data = np.frombuffer(bufs[2], dtype=np.uint8)
        lengths = np.diff(offsets)
        if s.null_count:
            lengths = np.where(s.is_valid().to_numpy(zero_copy_only=False), lengths, -1)
        rows = np.flatnonzero(lengths == width)
        if len(rows):
            if len(rows) == m - s.null_count and offsets[-1] - offsets[0] == len(rows) * width:
                # every present id has a hex id's length and the nulls hold no bytes: the ids are one slice
                chars = _LOWER.take(data[offsets[0]:offsets[-1]]).reshape(len(rows), width)
            else:
                chars = _LOWER[data[offsets[rows, None] + np.arange(width)]]
            good = _LOWER_HEX.take(chars).all(axis=1)
            out[rows[good]] = chars[good]
            ok[rows[good]] = True
        for length in range(sig, padded + 1):
            rows = np.flatnonzero(lengths == length)
            if not len(rows):
                continue
            chars = data[offsets[rows, None] + np.arange(length)]
            good = _B64_CHAR.take(chars[:, :sig]).all(axis=1) & (chars[:, sig:] == ord("=")).all(axis=1)
            rows, chars = rows[good], chars[good]
            if len(rows):
                full = np.full((len(rows), padded), ord("="), dtype=np.uint8)
                full[:, :length] = chars
                out[rows] = _b64_bytes_to_hex(full, nbytes)
                ok[rows] = True
    data_out = out[ok].reshape(-1)
    offsets_out = np.zeros(m + 1, dtype=np.int32)
    np.cumsum(ok * width, out=offsets_out[1:])
    validity = None if ok.all() else pa.py_buffer(np.packbits(ok, bitorder="little"))
    return pa.Array.from_buffers(pa.string(), m, [validity, pa.py_buffer(offsets_out), pa.py_buffer(data_out)],
                                 m - int(ok.sum()))


def _b64_bytes_to_hex(chars: np.ndarray, nbytes: int) -> np.ndarray:
    """Rows of padded base64 characters (a matrix of bytes, width a multiple of 4) to rows of the lower-case hex
    of their first ``nbytes`` bytes (characters outside the alphabet read as 0: the caller checks them)."""
    m, width = chars.shape
    quads = _B64[chars].astype(np.uint32).reshape(m, width // 4, 4) & 63
    bits = (quads[..., 0] << 18) | (quads[..., 1] << 12) | (quads[..., 2] << 6) | quads[..., 3]
    raw = np.stack([(bits >> 16) & 255, (bits >> 8) & 255, bits & 255], axis=-1).reshape(m, -1)[:, :nbytes]
    raw = raw.astype(np.uint8)
    hexed = np.empty((m, 2 * nbytes), dtype=np.uint8)
    hexed[:, 0::2] = _HEX_DIGITS[raw >> 4]
    hexed[:, 1::2] = _HEX_DIGITS[raw & 15]
    return hexed
