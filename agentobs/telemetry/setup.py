"""Configure the OpenTelemetry SDK for agentobs: the only module that touches the SDK and exporters.

Configuration is resolved in one place (``resolve``): explicit argument, then the standard
``OTEL_*`` / ``AGENTOBS_*`` environment variables, then the default. An application may
inject its own tracer and meter providers; a global provider the application already set
is used and never replaced; agentobs never sets a global provider itself.

Exporters: the embedded default is a local file of OTLP JSON lines (the collector file
exporter's format); OTLP over gRPC or HTTP when an endpoint is configured; the console.
Every exporter sits behind a batch processor (``delivery.BoundedWaitSpanProcessor``): the loop does not wait on
export, except for room in a full queue, a bounded time (``AGENTOBS_EXPORT_WAIT_MS``), so a burst of runs loses no
span to an exporter that keeps answering; spans delivered, failed and dropped are counted (``Telemetry.report()``,
and ``Telemetry.shutdown()`` at the end).
"""
from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.metrics import MeterProvider, NoOpMeterProvider
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SpanExporter
from opentelemetry.trace import ProxyTracerProvider

from ..contract import semconv as sc
from ..contract.files import FileInUse
from ..errors import ConfigError
from .content import Capture, Redactor, capture_from
from .delivery import BoundedWaitSpanProcessor, CountingExporter, EndCounter, ExportReport
from .instruments import Instruments
from .lifecycle import shutdown_and_log
from .links import ResumeLinks
from .observer import OTelObserver
from .otlp_json import OtlpJsonFileExporter

log = logging.getLogger("agentobs.telemetry")

ENV_TRACES_OUT = "AGENTOBS_TRACES_OUT"
ENV_CALL_METRICS = "AGENTOBS_CALL_METRICS"
ENV_EXPORT_WAIT_MS = "AGENTOBS_EXPORT_WAIT_MS"
DEFAULT_EXPORT_WAIT_MS = 2_000


_GRACE_S = 0.25        # past the shutdown deadline, for an exporter just shut down to stop


class CallMetrics(StrEnum):
    """Who records the per-call metrics (token usage, model and tool call durations).

    ``SDK`` (default): this process, through the OpenTelemetry SDK, as the conventions name them.
    ``COLLECTOR``: the collector's span metrics connector, from the chat and execute_tool spans; this
    process then records only the per-run metrics, which costs less per run (see docs/telemetry.md for what
    is lost: per-call token histograms, and durations get the connector's buckets and names)."""
    SDK = "sdk"
    COLLECTOR = "collector"


@dataclass(frozen=True, kw_only=True)
class TelemetryConfig:
    service_name: str
    traces_out: Path | None
    otlp_endpoint: str | None          # None: no OTLP export
    otlp_protocol: str                 # "grpc" | "http/protobuf"
    console: bool
    capture: Capture
    redact_keys: tuple[str, ...] | None
    redact_patterns: bool                # mask secret-looking values (API keys, e-mails, cards) too
    metric_interval_ms: int
    queue_size: int
    shutdown_timeout_ms: int
    export_wait_ms: int = DEFAULT_EXPORT_WAIT_MS   # how long a span may wait for room in a full queue (0: drop)
    export_batch_size: int = 512
    call_metrics: CallMetrics = CallMetrics.SDK
    replace_traces: bool = False         # traces_out is emptied when opened (the CLI's), else appended to


def resolve(*, service_name: str | None = None, traces_out: str | os.PathLike[str] | None = None,
            otlp_endpoint: str | None = None, otlp_protocol: str | None = None, console: bool = False,
            capture: str | Capture | None = None, redact_keys: Sequence[str] | None = None,
            redact_patterns: bool | None = None, call_metrics: str | CallMetrics | None = None,
            replace_traces: bool = False, export_wait_ms: int | None = None,
            env: Mapping[str, str] | None = None) -> TelemetryConfig:
    """Explicit argument > environment variable > default, for every telemetry setting."""
    env = os.environ if env is None else env
    endpoint = otlp_endpoint or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    protocol = (otlp_protocol or env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
                or "http/protobuf").strip().lower()
    if protocol == "http/json":
        log.warning("OTLP http/json is not supported by the Python exporter; using http/protobuf")
        protocol = "http/protobuf"
    if protocol not in ("grpc", "http/protobuf"):
        raise ConfigError(f"OTLP protocol {protocol!r} is not one of grpc, http/protobuf (OTEL_EXPORTER_OTLP_PROTOCOL)")
    out = traces_out if traces_out is not None else env.get(ENV_TRACES_OUT)
    return TelemetryConfig(
        service_name=service_name or env.get("OTEL_SERVICE_NAME") or "agentobs",
        traces_out=Path(out) if out else None,
        otlp_endpoint=endpoint or None,
        otlp_protocol=protocol,
        console=console,
        capture=capture_from(capture, env),
        redact_keys=tuple(redact_keys) if redact_keys is not None else None,
        redact_patterns=redact_patterns if redact_patterns is not None else
        env.get("AGENTOBS_REDACT_PATTERNS", "1").strip().lower() not in ("0", "false", "no", "off"),
        metric_interval_ms=_int_env(env, "OTEL_METRIC_EXPORT_INTERVAL", 10_000),
        queue_size=_int_env(env, "OTEL_BSP_MAX_QUEUE_SIZE", 2048),
        shutdown_timeout_ms=_int_env(env, "AGENTOBS_SHUTDOWN_TIMEOUT_MS", 5_000),
        export_wait_ms=_export_wait_ms(export_wait_ms, env),
        export_batch_size=_int_env(env, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512),
        call_metrics=_call_metrics(call_metrics, env),
        replace_traces=replace_traces,
    )


def _call_metrics(value: str | CallMetrics | None, env: Mapping[str, str]) -> CallMetrics:
    source = "call_metrics" if value is not None else ENV_CALL_METRICS
    raw = value if value is not None else env.get(ENV_CALL_METRICS) or CallMetrics.SDK.value
    try:
        return CallMetrics(str(raw).strip().lower())
    except ValueError:
        raise ConfigError(f"{source}={raw!r} must be one of {', '.join(m.value for m in CallMetrics)}") from None


def _export_wait_ms(value: int | None, env: Mapping[str, str]) -> int:
    if value is None:
        return _int_env(env, ENV_EXPORT_WAIT_MS, DEFAULT_EXPORT_WAIT_MS, zero_ok=True)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"export_wait_ms={value!r} must be a whole number of milliseconds, 0 or more")
    return value


def _int_env(env: Mapping[str, str], name: str, default: int, *, zero_ok: bool = False) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} must be an integer") from None
    if value < 0 or (value == 0 and not zero_ok):
        raise ConfigError(f"{name}={raw!r} must be {'0 or more' if zero_ok else 'positive'}")
    return value


class Telemetry:
    """Providers, exporters and instruments for one process. One observer (``observer()``) serves every run of
    the process, one after another or at once, in threads or asyncio tasks."""

    def __init__(self, config: TelemetryConfig, *, tracer_provider: Any = None, meter_provider: Any = None,
                 extra_exporters: Sequence[tuple[str, SpanExporter]] = ()):
        self.config = config
        self.capture = config.capture
        self.redactor = Redactor(config.redact_keys, patterns=config.redact_patterns)
        self.links = ResumeLinks()          # the last suspended segment of each task, for its resume to link to
        self.exporters: list[CountingExporter] = []
        self._processors: list[BoundedWaitSpanProcessor] = []
        self._end_counter = EndCounter()
        self._report: ExportReport | None = None          # set by shutdown
        self._owns_tracer_provider = False
        self._owns_meter_provider = False
        global_tp = trace.get_tracer_provider()
        if tracer_provider is None and not isinstance(global_tp, ProxyTracerProvider):
            tracer_provider = global_tp      # the application set one: use it, never replace it
        if tracer_provider is None:
            tracer_provider = TracerProvider(resource=self.resource())
            self._owns_tracer_provider = True
        self.tracer_provider = tracer_provider
        if self._owns_tracer_provider:
            exporters: list[tuple[str, SpanExporter]] = list(extra_exporters)
            if config.traces_out is not None:
                try:
                    file_exporter = OtlpJsonFileExporter(config.traces_out, replace=config.replace_traces)
                except FileInUse as exc:
                    raise ConfigError(f"traces file {config.traces_out} is {exc.strerror}: give each process its "
                                      "own file (traces_out, AGENTOBS_TRACES_OUT or --traces-out)") from None
                except (OSError, ValueError) as exc:
                    raise ConfigError(f"traces file {config.traces_out} cannot be written ({exc}): check the path "
                                      "(traces_out or AGENTOBS_TRACES_OUT) and its permissions") from None
                exporters.append((f"file {config.traces_out}", file_exporter))
            if config.otlp_endpoint:
                exporters.append((f"otlp {config.otlp_protocol} {config.otlp_endpoint}", self._otlp_spans()))
            if config.console:
                exporters.append(("console", ConsoleSpanExporter()))
            tracer_provider.add_span_processor(self._end_counter)
            if exporters:
                _quiet_sdk_queue_warning()
            for name, exporter in exporters:
                bsp = BoundedWaitSpanProcessor(exporter, name=name, max_queue_size=config.queue_size,
                                               wait_s=config.export_wait_ms / 1000,
                                               max_export_batch_size=config.export_batch_size)
                tracer_provider.add_span_processor(bsp)
                self.exporters.append(bsp.exporter)
                self._processors.append(bsp)
        if meter_provider is None:
            global_mp = metrics.get_meter_provider()
            if not type(global_mp).__name__.startswith("_Proxy") and not isinstance(global_mp, NoOpMeterProvider):
                meter_provider = global_mp
        if meter_provider is None:
            meter_provider = self._own_meter_provider()
        self.meter_provider: MeterProvider = meter_provider
        self.tracer = tracer_provider.get_tracer(sc.SCOPE, _version(), schema_url=sc.SCHEMA_URL)
        self.meter = meter_provider.get_meter(sc.SCOPE, _version(), schema_url=sc.SCHEMA_URL)
        self.instruments = Instruments(self.meter)

    def resource(self) -> Resource:
        return Resource.create({"service.name": self.config.service_name}, schema_url=sc.SCHEMA_URL)

    def observer(self, *, resumed_from: str | None = None) -> OTelObserver:
        """An observer. One serves any number of runs, concurrent or not (make it once, give it to the kernel).
        ``resumed_from``: the traceparent of the suspended segment a resume continues, when that segment ran in
        another process (``OTelObserver.trace_context()`` then): every resumed run of that observer links to it,
        so make one for that resume; within one process a resumed run finds its segment by its task id."""
        return OTelObserver(self.tracer, capture=self.capture, redactor=self.redactor, instruments=self.instruments,
                            links=self.links, resumed_from=resumed_from,
                            call_metrics=self.config.call_metrics is CallMetrics.SDK)

    def flush(self) -> None:
        for p in self._processors:
            p.force_flush()

    def report(self) -> ExportReport:
        """What has become of the spans so far, per exporter (exported, failed, dropped, queued, and how long
        runs waited for room in the queue); after ``shutdown``, its final report."""
        if self._report is not None:
            return self._report
        return self._counts(final=False)

    def _counts(self, *, final: bool) -> ExportReport:
        ended = self._end_counter.ended
        return ExportReport(ended=ended, exporters={p.exporter.name: p.counts(ended, final=final)
                                                    for p in self._processors})

    def __enter__(self) -> Telemetry:
        return self

    def __exit__(self, *exc: object) -> None:
        """``with configure(...) as telemetry:`` shuts down at the end of the block, however it ends, and logs
        the report (a warning when spans were lost)."""
        shutdown_and_log(self)

    def shutdown(self) -> ExportReport:
        """Flushes and closes what agentobs created, within ``shutdown_timeout_ms``; returns what was delivered
        and what was lost. An exporter that cannot finish in time (an unreachable collector retrying) is shut
        down: what it still holds is counted as lost. A second call returns the first one's report."""
        if self._report is not None:
            return self._report
        timeout = self.config.shutdown_timeout_ms
        deadline = time.monotonic() + timeout / 1000

        def close(p: BoundedWaitSpanProcessor) -> None:
            try:
                p.force_flush(timeout)       # the SDK ignores this timeout: bounded below by the deadline
                p.shutdown()
            except Exception:
                log.warning("span processor failed to shut down", exc_info=True)
        closers = [threading.Thread(target=close, args=(p,), name="agentobs-shutdown", daemon=True)
                   for p in self._processors]
        for t in closers:
            t.start()
        for t in closers:
            t.join(max(0.0, deadline - time.monotonic()))
        for e, t in zip(self.exporters, closers, strict=True):
            if t.is_alive():
                log.warning("exporter %s did not finish within %d ms; what it still holds is lost", e.name, timeout)
                e.shutdown()
        # a short grace for the threads of exporters just shut down: the deadline is the caller's (waiting 5 s here
        # overran it), and what a thread still running holds is counted as lost
        for t in closers:
            t.join(_GRACE_S)
        if self._owns_meter_provider:
            try:
                remaining = max(0.0, deadline - time.monotonic()) * 1000
                self.meter_provider.shutdown(timeout_millis=remaining)  # type: ignore[attr-defined]
            except Exception as exc:            # (the SDK's own message: one line, no traceback)
                log.warning("meter provider did not shut down within %d ms; its last metrics are lost: %s", timeout,
                            " ".join(str(exc).split()))
        self._report = self._counts(final=True)
        return self._report

    # -- OTLP ----------------------------------------------------------------------------------

    def _otlp_spans(self) -> SpanExporter:
        endpoint, proto = self.config.otlp_endpoint or "", self.config.otlp_protocol
        if proto == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as Grpc
            return Grpc(endpoint=_grpc_endpoint(endpoint), insecure=_insecure(endpoint))
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as Http
        return Http(endpoint=_http_endpoint(endpoint, "traces"))

    def _own_meter_provider(self) -> MeterProvider:
        if not self.config.otlp_endpoint:
            return NoOpMeterProvider()
        from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        endpoint, proto = self.config.otlp_endpoint, self.config.otlp_protocol
        if proto == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as GrpcM
            exporter: Any = GrpcM(endpoint=_grpc_endpoint(endpoint), insecure=_insecure(endpoint))
        else:
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter as HttpM
            exporter = HttpM(endpoint=_http_endpoint(endpoint, "metrics"))
        reader = PeriodicExportingMetricReader(exporter, export_interval_millis=self.config.metric_interval_ms)
        self._owns_meter_provider = True
        return SdkMeterProvider(metric_readers=[reader], resource=self.resource())


def _version() -> str:
    from .. import __version__
    return __version__


SDK_QUEUE_LOGGER = "opentelemetry.sdk._shared_internal"


def _quiet_sdk_queue_warning() -> None:
    """The SDK logs "Queue full, dropping Span." at WARNING for every dropped span, in the thread that ends the
    span (~10 us per span on the agent's hot path). agentobs counts drops itself (ExportReport), so the message
    is raised to ERROR unless the application set that logger's level itself."""
    logger = logging.getLogger(SDK_QUEUE_LOGGER)
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.ERROR)


def _grpc_endpoint(endpoint: str) -> str:
    return endpoint.split("://", 1)[-1].rstrip("/")


def _insecure(endpoint: str) -> bool:
    return not endpoint[:8].lower().startswith("https://")          # (a URL scheme has any case, RFC 3986)


def _http_endpoint(endpoint: str, signal: str) -> str:
    base = endpoint if "://" in endpoint else f"http://{endpoint}"
    base = base.rstrip("/")
    return base if base.endswith(f"/v1/{signal}") else f"{base}/v1/{signal}"


def configure(*, tracer_provider: Any = None, meter_provider: Any = None,
              extra_exporters: Sequence[tuple[str, SpanExporter]] = (), **settings: Any) -> Telemetry:
    """Sets up telemetry. ``settings`` are those of ``resolve`` (service_name, traces_out, otlp_endpoint...)."""
    return Telemetry(resolve(**settings), tracer_provider=tracer_provider, meter_provider=meter_provider,
                     extra_exporters=extra_exporters)
