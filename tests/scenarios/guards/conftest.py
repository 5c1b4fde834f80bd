"""The guard suites' drivers: ``driver`` runs a test once per guarded framework (``guard_drivers.DRIVERS``)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from guard_drivers import DRIVERS


@pytest.fixture(params=list(DRIVERS))
def driver(request: pytest.FixtureRequest):
    """A framework's driver; its tests are skipped when the framework is not installed."""
    chosen = DRIVERS[request.param]
    for module in chosen.requires:
        pytest.importorskip(module)
    return chosen
