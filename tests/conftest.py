import os
import signal
import sys
from pathlib import Path

import pytest
from hypothesis import settings
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).parent))

# Ctrl-C reaches the processes the tests start and then stop with SIGINT (view, watch, the examples): a shell that
# starts `make test` in the background without job control (`make test &` in a script) has SIGINT ignored, and an
# ignored signal stays ignored in every child; Python's own handler is put back here, which children do not inherit
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Hypothesis is derandomized everywhere, so a CI run is repeatable: a property test's cases are the same on every
# machine and run (a test's own settings may add to this profile); cases found elsewhere go in as @example
settings.register_profile("agentobs", derandomize=True, database=None)
settings.load_profile("agentobs")


@pytest.fixture
def memory_tracing():
    """A tracer provider per test, with an in-memory exporter behind a simple processor."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


@pytest.fixture
def update_snapshots():
    return os.environ.get("UPDATE_SNAPSHOTS") == "1"
