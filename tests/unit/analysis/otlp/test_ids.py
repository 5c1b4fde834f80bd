"""Trace and span ids in every spelling become the same lower-case hex (``otlp.ids``): the bulk paths on the raw
buffers (a whole column of padded base64 at once; a column of mixed spellings by length) give what converting
each id by itself with Python's own ``re`` and ``base64`` gives."""
import base64
import re

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from agentobs.analysis.otlp.ids import _convert, normalize_ids


def _one(v, nbytes):
    """One id by itself: hex of either case, or base64 of either alphabet with or without its padding."""
    if v is None:
        return None
    sig, padded = (8 * nbytes + 5) // 6, 4 * ((nbytes + 2) // 3)
    if re.fullmatch(f"[0-9a-fA-F]{{{2 * nbytes}}}", v, re.ASCII):
        return v.lower()
    if re.fullmatch(f"[A-Za-z0-9+/_-]{{{sig}}}={{0,{padded - sig}}}", v, re.ASCII):
        raw = base64.b64decode(v.rstrip("=").replace("-", "+").replace("_", "/") + "=" * (padded - sig))
        return raw[:nbytes].hex()
    return None

_IDS = st.integers(min_value=0, max_value=6).flatmap(lambda kind: st.lists(st.one_of(
    st.binary(min_size=16, max_size=16).map(lambda b: base64.b64encode(b).decode()),
    st.binary(min_size=16, max_size=16).map(lambda b: base64.urlsafe_b64encode(b).decode()),
    st.binary(min_size=16, max_size=16).map(lambda b: base64.b64encode(b).decode().rstrip("=")),
    st.binary(min_size=16, max_size=16).map(lambda b: b.hex().upper()),
    st.just(None), st.just(""), st.just("A" * 22 + "=="), st.just("A" * 24), st.just("!" * 22 + "=="),
    st.text(min_size=20, max_size=26), st.text(alphabet="0123456789abcdefABCDEFgG=-_+/", min_size=10, max_size=33),
    st.binary(min_size=8, max_size=8).map(lambda b: base64.urlsafe_b64encode(b).decode().rstrip("=")),
    st.binary(min_size=8, max_size=8).map(lambda b: b.hex().upper()),
) if kind == 0 else st.one_of(st.binary(min_size=16, max_size=16).map(lambda b: base64.b64encode(b).decode()),
                              st.just(None)), max_size=30))


@given(_IDS)
def test_base64_ids_in_bulk_are_what_each_id_gives(ids):
    arr = pa.array(ids, type=pa.string())
    got, bad = normalize_ids(arr, 16, empty_is_null=True)
    s = pa.array([None if v == "" else v for v in ids], type=pa.string())
    want = _convert(s, 16)
    assert want.to_pylist() == [_one(v, 16) for v in s.to_pylist()]
    zero = "0" * 32
    assert got.to_pylist() == [None if v == zero else v for v in want.to_pylist()]
    pairs = zip(s.to_pylist(), want.to_pylist(), strict=True)
    assert bad.tolist() == [v is not None and w in (None, zero) for v, w in pairs]


def test_protobuf_base64_ids_become_hex():
    raw = [bytes(range(i, i + 16)) for i in range(3)]
    got, bad = normalize_ids(pa.array([base64.b64encode(b).decode() for b in raw] + [None]), 16, empty_is_null=True)
    assert got.to_pylist() == [b.hex() for b in raw] + [None] and not bad.any()
    spans = [bytes(range(i, i + 8)) for i in range(3)]
    got, bad = normalize_ids(pa.array([base64.b64encode(b).decode() for b in spans]), 8)
    assert got.to_pylist() == [b.hex() for b in spans] and not bad.any()


@given(_IDS, st.integers(0, 3), st.sampled_from([8, 16]))
def test_ids_of_mixed_spellings_convert_as_each_id_alone(ids, head, nbytes):
    arr = pa.array(ids, type=pa.string())
    arr = arr.slice(min(head, len(arr)))
    got = _convert(arr, nbytes)
    assert got.to_pylist() == [_one(v, nbytes) for v in arr.to_pylist()]
    assert got.null_count == sum(1 for v in arr.to_pylist() if _one(v, nbytes) is None)


def test_upper_case_hex_with_nulls_that_hold_bytes():
    """Upper-case hex ids are read as one slice of the data when every present id has a hex id's length; a null
    may still hold bytes (Arrow allows it), and then each id is gathered on its own."""
    import numpy as np
    data = b"ABCDEF0123456789" + b"zz" + b"0123456789ABCDEF"
    offsets = np.array([0, 16, 18, 34], dtype=np.int32)
    validity = pa.py_buffer(np.packbits(np.array([1, 0, 1], dtype=bool), bitorder="little"))
    arr = pa.Array.from_buffers(pa.string(), 3, [validity, pa.py_buffer(offsets), pa.py_buffer(data)], 1)
    ids, bad = normalize_ids(arr, 8)
    assert ids.to_pylist() == ["abcdef0123456789", None, "0123456789abcdef"]
    assert list(bad) == [False, True, False]
    plain = pa.array(["ABCDEF0123456789", None, "0123456789ABCDEF", "0123456789abcdeX"])
    ids, bad = normalize_ids(plain, 8)
    assert ids.to_pylist() == ["abcdef0123456789", None, "0123456789abcdef", None]
    assert list(bad) == [False, True, False, True]


@given(st.sampled_from([8, 16]), st.data())
def test_a_column_of_padded_base64_in_either_alphabet_decodes_at_once_as_each_id_alone(nbytes, data):
    """The bulk decode (all ids at once: padding read as zero bits, the URL-safe alphabet as the standard one) gives
    each id's own decoding; a padding character where a digit belongs, or a character of neither alphabet, is no
    id, as it is alone."""
    sig, padded = (8 * nbytes + 5) // 6, 4 * ((nbytes + 2) // 3)
    one = st.binary(min_size=nbytes, max_size=nbytes)
    good = st.one_of(one.map(lambda b: base64.b64encode(b).decode()),
                     one.map(lambda b: base64.urlsafe_b64encode(b).decode()))
    odd = st.one_of(good, st.just("=" * sig + "=" * (padded - sig)),
                    st.just("A" * (sig - 1) + "!" + "=" * (padded - sig)),
                    st.just("=" + "A" * (sig - 1) + "=" * (padded - sig)), st.just(None))
    ids = data.draw(st.lists(st.one_of(good, good, odd), min_size=1, max_size=40))
    got, _ = normalize_ids(pa.array(ids, type=pa.string()), nbytes, zero_is_null=True, empty_is_null=True)
    want = [_one(v, nbytes) for v in ids]
    assert got.to_pylist() == [None if w == "0" * (2 * nbytes) else w for w in want]


@given(st.sampled_from([8, 16]), st.integers(0, 3), st.data())
def test_a_column_of_hex_ids_in_either_case_is_lowered_at_once_as_each_id_alone(nbytes, head, data):
    """Hex ids of mixed case (lines of upper- and lower-case ids parsed as one group) are lowered on the raw buffers
    in one pass; nulls stay where they were (a sliced column too), and a character that is not a hex digit sends the
    column the id-by-id way, where only that id is lost."""
    one = st.binary(min_size=nbytes, max_size=nbytes)
    hexed = st.one_of(one.map(bytes.hex), one.map(lambda b: b.hex().upper()),
                      one.map(lambda b: "".join(c.upper() if i % 3 else c for i, c in enumerate(b.hex()))))
    odd = st.one_of(st.just(None), st.just("g" * (2 * nbytes)), st.just("0" * (2 * nbytes)))
    ids = data.draw(st.lists(st.one_of(hexed, hexed, hexed, odd), min_size=1, max_size=40))
    arr = pa.array(ids, type=pa.string()).slice(min(head, len(ids) - 1))
    got, bad = normalize_ids(arr, nbytes, zero_is_null=True)
    want = [_one(v, nbytes) for v in arr.to_pylist()]
    assert got.to_pylist() == [None if w == "0" * (2 * nbytes) else w for w in want]
    assert bad.tolist() == [v is None or (w is None) for v, w in zip(arr.to_pylist(), want, strict=True)]


@given(st.sampled_from([8, 16]), st.integers(0, 3), st.data())
def test_a_column_of_hex_and_padded_base64_ids_converts_each_form_at_once_as_each_id_alone(nbytes, head, data):
    """Hex ids beside padded base64 ids (lines of several spellings decoded at once): each form is converted at once
    and put back in place, a sliced column and nulls too, without the id-by-id way; an id of neither form (or a bad
    character in one) sends the column that way, where only that id is lost."""
    import agentobs.analysis.otlp.ids as ids_module
    one = st.binary(min_size=nbytes, max_size=nbytes)
    good = st.one_of(one.map(bytes.hex), one.map(lambda b: b.hex().upper()),
                     one.map(lambda b: base64.b64encode(b).decode()),
                     one.map(lambda b: base64.urlsafe_b64encode(b).decode()),
                     st.just(None))
    odd = st.one_of(st.just("g" * (2 * nbytes)), st.just("A" * (2 * nbytes - 1)), st.just("0" * (2 * nbytes)))
    ids = data.draw(st.lists(st.one_of(good, good, good, good, odd), min_size=1, max_size=40))
    arr = pa.array(ids, type=pa.string()).slice(min(head, len(ids) - 1))
    slow, real = [], ids_module._convert
    ids_module._convert = lambda *a: slow.append(1) or real(*a)
    try:
        got, bad = normalize_ids(arr, nbytes, zero_is_null=True)
    finally:
        ids_module._convert = real
    want = [_one(v, nbytes) for v in arr.to_pylist()]
    assert got.to_pylist() == [None if w == "0" * (2 * nbytes) else w for w in want]
    assert bad.tolist() == [v is None or (w is None) for v, w in zip(arr.to_pylist(), want, strict=True)]
    shown = [v for v in arr.to_pylist() if v is not None]
    if all(_one(v, nbytes) is not None and len(v) in (2 * nbytes, 4 * ((nbytes + 2) // 3)) for v in shown) and \
            any(len(v) == 2 * nbytes for v in shown) and any(len(v) != 2 * nbytes for v in shown):
        assert slow == [], "hex and padded base64 ids went the id-by-id way"
