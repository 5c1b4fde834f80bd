"""Where Arrow's memory comes from while a file loads.

A load parses and decodes one piece after another, each of the same size: the memory one piece frees is what the
next one needs. Arrow's default pool (mimalloc) gives freed memory back to the system within milliseconds, so
every piece maps and zero-fills its pages again: a sixth of the load's CPU time went to the kernel. Arrow's
jemalloc pool keeps freed pages for a second, long enough for the next piece, and packs what is kept more
tightly (the report that follows peaks lower). The system allocator (glibc) would keep them too, but what the
reader thread frees stays with that thread's arena and the report's peak grows.

``load_pool()`` makes jemalloc Arrow's default while loads run, and when the last of them ends puts back the pool
it found (unless someone changed it meanwhile) and purges what the pieces freed. Where pyarrow was built without
jemalloc it changes nothing.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pyarrow as pa

_lock = threading.Lock()
_active = 0
_saved: pa.MemoryPool | None = None


@contextmanager
def load_pool() -> Iterator[None]:
    global _active, _saved
    pool = _jemalloc()
    if pool is None:
        yield
        return
    with _lock:
        if _active == 0:
            _saved = pa.default_memory_pool()
            pa.set_memory_pool(pool)
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                if _saved is not None and pa.default_memory_pool().backend_name == pool.backend_name:
                    pa.set_memory_pool(_saved)
                _saved = None
                pool.release_unused()


def _jemalloc() -> pa.MemoryPool | None:
    try:
        return pa.jemalloc_memory_pool()
    except NotImplementedError:                 # a pyarrow built without jemalloc
        return None
