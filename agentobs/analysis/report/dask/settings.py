"""What the Dask engine may use, resolved in one place: explicit argument, then environment variable, then default.

    --scheduler / DASK_SCHEDULER_ADDRESS   an existing cluster (Dask's own variable, read through dask.config)
    AGENTOBS_DASK_WORKERS                  workers of the local cluster started otherwise      the machine's cores
    AGENTOBS_DASK_MEMORY                   memory limit of each of its workers                 machine memory / workers
    AGENTOBS_DASK_PARTITION_BYTES          input bytes per partition (of spans, as JSON)       256M

Sizes take a plain number of bytes or a number with K, M or G (binary units), as the input limits do.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from ....errors import ConfigError
from ...input.limits import size_setting

WORKERS_ENV = "AGENTOBS_DASK_WORKERS"
MEMORY_ENV = "AGENTOBS_DASK_MEMORY"
PARTITION_ENV = "AGENTOBS_DASK_PARTITION_BYTES"
MIB = 1 << 20
# a gzip file is counted as this many times its size on disk when partitions are sized (OTLP JSON compresses ~10x)
GZIP_EXPANSION = 10


@dataclass(frozen=True, kw_only=True)
class DaskSettings:
    scheduler: str | None = None         # address of an existing scheduler; None: start a local cluster
    workers: int = 1
    memory_per_worker: int = 0           # bytes; the local cluster's per-worker limit
    partition_bytes: int = 256 * MIB

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ConfigError(f"{WORKERS_ENV}: at least 1 worker, got {self.workers}")
        if self.partition_bytes < 1 or self.memory_per_worker < 0:
            raise ConfigError("the Dask partition size and memory limit must be positive")

    @classmethod
    def resolve(cls, *, scheduler: str | None = None, workers: int | None = None,
                memory_per_worker: int | None = None, partition_bytes: int | None = None,
                env: Mapping[str, str] | None = None) -> DaskSettings:
        environ = os.environ if env is None else env
        if scheduler is None:
            import dask.config
            scheduler = dask.config.get("scheduler-address", None) or None    # DASK_SCHEDULER_ADDRESS
        if workers is None:
            raw = environ.get(WORKERS_ENV, "").strip()
            if raw:
                try:
                    workers = int(raw)
                except ValueError:
                    raise ConfigError(f"{WORKERS_ENV}={raw!r}: use a whole number of workers, e.g. 2") from None
            else:
                workers = os.cpu_count() or 1
        if memory_per_worker is None:
            memory_per_worker = size_setting(environ.get(MEMORY_ENV), MEMORY_ENV) or _machine_memory() // workers
        if partition_bytes is None:
            partition_bytes = size_setting(environ.get(PARTITION_ENV), PARTITION_ENV) or 256 * MIB
        return cls(scheduler=scheduler, workers=workers, memory_per_worker=memory_per_worker,
                   partition_bytes=partition_bytes)


def _machine_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 4 << 30
