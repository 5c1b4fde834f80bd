"""A load allocates Arrow memory from jemalloc and leaves Arrow's default pool as it found it."""
from __future__ import annotations

import threading

import pyarrow as pa
import pytest

from agentobs.analysis.otlp import _arrow_memory
from agentobs.analysis.otlp import load as otlp

pytestmark = pytest.mark.skipif(_arrow_memory._jemalloc() is None, reason="pyarrow built without jemalloc")


def _spans_file(tmp_path, n: int = 50):
    line = ('{"resourceSpans":[{"resource":{"attributes":[]},"scopeSpans":[{"scope":{"name":"t"},"spans":['
            + ",".join(f'{{"traceId":"{"a" * 32}","spanId":"{i:016x}","name":"s","kind":1,'
                       f'"startTimeUnixNano":"1","endTimeUnixNano":"2"}}' for i in range(1, n + 1))
            + ']}]}]}\n')
    p = tmp_path / "spans.jsonl"
    p.write_text(line * 3)
    return p


def test_load_uses_jemalloc_and_restores_the_default(tmp_path, monkeypatch) -> None:
    before = pa.default_memory_pool().backend_name
    seen: list[str] = []
    real = otlp._finish

    def spy(*a, **k):
        seen.append(pa.default_memory_pool().backend_name)
        return real(*a, **k)
    monkeypatch.setattr(otlp, "_finish", spy)
    ss = otlp.load_file(_spans_file(tmp_path))
    assert len(ss.spans) == 150
    assert seen == ["jemalloc"]
    assert pa.default_memory_pool().backend_name == before


def test_overlapping_loads_restore_the_default_once_the_last_ends() -> None:
    before = pa.default_memory_pool().backend_name
    first_in, release = threading.Event(), threading.Event()

    def long_load() -> None:
        with _arrow_memory.load_pool():
            first_in.set()
            release.wait(10)
    t = threading.Thread(target=long_load)
    t.start()
    assert first_in.wait(10)
    with _arrow_memory.load_pool():
        assert pa.default_memory_pool().backend_name == "jemalloc"
    assert pa.default_memory_pool().backend_name == "jemalloc"     # the first load still runs
    release.set()
    t.join(10)
    assert pa.default_memory_pool().backend_name == before


def test_a_pool_chosen_during_a_load_is_kept() -> None:
    before = pa.default_memory_pool()
    try:
        with _arrow_memory.load_pool():
            pa.set_memory_pool(pa.system_memory_pool())
        assert pa.default_memory_pool().backend_name == "system"
    finally:
        pa.set_memory_pool(before)
