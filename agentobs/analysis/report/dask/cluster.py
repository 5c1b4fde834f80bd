"""A Dask client: to an existing scheduler, or to a local cluster started for one analysis and stopped after it.

An existing cluster's workers must have agentobs installed (the same version as the client) and see the sources
under the names given: absolute paths on a shared disk, or object-store URLs.
"""
from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from ....errors import ConfigError, InputError
from .settings import DaskSettings

CONNECT_TIMEOUT_S = 20


def require() -> None:
    """A one-line error when dask or distributed is missing."""
    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
    except ImportError as exc:
        raise ConfigError(f"the Dask engine needs dask and distributed ({exc.name} is missing): "
                          "pip install 'agentobs[dask]'") from None


@contextmanager
def client_for(settings: DaskSettings) -> Iterator[object]:
    require()
    from distributed import Client, LocalCluster
    if settings.scheduler:
        try:
            client = Client(settings.scheduler, timeout=CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError, ValueError) as exc:
            raise InputError(f"cannot reach the Dask scheduler at {settings.scheduler} ({_one_line(exc)}): check "
                             "--scheduler or DASK_SCHEDULER_ADDRESS, or leave both unset for a local cluster") from None
        try:
            yield client
        finally:
            client.close()
        return
    cluster = LocalCluster(n_workers=settings.workers, threads_per_worker=1, processes=True,
                           memory_limit=settings.memory_per_worker or "auto", host="127.0.0.1",
                           dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)
    try:
        with Client(cluster) as client:
            yield client
    finally:
        cluster.close()


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200] or type(exc).__name__
