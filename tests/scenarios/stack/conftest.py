"""The real collector, Jaeger and Prometheus, as started by ``eval "$(scripts/stack.sh up)"``.

The stack is found through the variables ``scripts/stack.sh up`` prints. Without them (or when a service does
not answer) every stack test is skipped, unless ``AGENTOBS_REQUIRE_STACK=1`` (scripts/test.sh sets it): then
they fail. Each test exports under its own service.name, so tests never see each other's data in the shared
Jaeger and Prometheus.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from stackutil import healthy, unique_service  # noqa: E402

REQUIRED = ("AGENTOBS_COLLECTOR_OTLP_GRPC", "AGENTOBS_COLLECTOR_OTLP_HTTP", "AGENTOBS_COLLECTOR_HEALTH_URL",
            "AGENTOBS_COLLECTOR_ARCHIVE", "AGENTOBS_COLLECTOR_PROMETHEUS_URL", "JAEGER_URL", "JAEGER_HEALTH_URL",
            "PROMETHEUS_URL")


@dataclass(frozen=True)
class Stack:
    otlp_grpc: str          # http://127.0.0.1:14317
    otlp_http: str          # http://127.0.0.1:14318
    archive: Path           # the collector's file exporter output (OTLP JSON lines)
    collector_metrics: str  # the collector's prometheus exporter (/metrics)
    jaeger: str             # http://127.0.0.1:16686
    prometheus: str         # http://127.0.0.1:19090
    env: dict[str, str]     # the variables as exported
    collector_telemetry: str = ""  # the collector's own metrics (/metrics: otelcol_*), when exported


def _required() -> bool:
    return os.environ.get("AGENTOBS_REQUIRE_STACK", "") not in ("", "0")


def _unavailable(reason: str) -> None:
    if _required():
        pytest.fail(f"the stack is required (AGENTOBS_REQUIRE_STACK=1) but {reason}", pytrace=False)
    pytest.skip(f"no stack: {reason} (run: eval \"$(scripts/stack.sh up)\")")


@pytest.fixture(scope="session")
def stack() -> Stack:
    missing = [k for k in REQUIRED if not os.environ.get(k)]
    if missing:
        _unavailable(f"{', '.join(missing)} not set")
    e = {k: os.environ[k] for k in REQUIRED}
    checks = {"collector": e["AGENTOBS_COLLECTOR_HEALTH_URL"], "jaeger": e["JAEGER_HEALTH_URL"],
              "prometheus": e["PROMETHEUS_URL"].rstrip("/") + "/-/ready"}
    down = [f"{name} ({url})" for name, url in checks.items() if not healthy(url)]
    if down:
        _unavailable(f"not healthy: {', '.join(down)}")
    grpc = e["AGENTOBS_COLLECTOR_OTLP_GRPC"]
    return Stack(otlp_grpc=grpc if "://" in grpc else f"http://{grpc}", otlp_http=e["AGENTOBS_COLLECTOR_OTLP_HTTP"],
                 archive=Path(e["AGENTOBS_COLLECTOR_ARCHIVE"]),
                 collector_metrics=e["AGENTOBS_COLLECTOR_PROMETHEUS_URL"],
                 jaeger=e["JAEGER_URL"].rstrip("/"), prometheus=e["PROMETHEUS_URL"].rstrip("/"), env=e,
                 collector_telemetry=os.environ.get("AGENTOBS_COLLECTOR_TELEMETRY_URL", ""))


@pytest.fixture
def service_name(request) -> str:
    return unique_service(request.node.name)


@pytest.fixture(autouse=True, scope="session")
def _metric_interval():
    """Metrics reach the collector within a second (the SDK's default interval is 60 s)."""
    old = os.environ.get("OTEL_METRIC_EXPORT_INTERVAL")
    os.environ["OTEL_METRIC_EXPORT_INTERVAL"] = "1000"
    yield
    if old is None:
        os.environ.pop("OTEL_METRIC_EXPORT_INTERVAL", None)
    else:
        os.environ["OTEL_METRIC_EXPORT_INTERVAL"] = old
