"""OpenTelemetry for agentobs: an observer for the kernel, SDK setup, OTLP JSON files, an instrumentation API."""
from .content import Capture, Redactor, capture_from
from .delivery import BoundedWaitSpanProcessor, ExportReport
from .instruments import Instruments
from .lifecycle import graceful_exit
from .links import ResumeLinks, format_traceparent, parse_traceparent
from .observer import OTelObserver
from .otlp_json import OtlpJsonFileExporter, encode_request
from .setup import CallMetrics, Telemetry, TelemetryConfig, configure, resolve

__all__ = [
    "BoundedWaitSpanProcessor", "CallMetrics", "Capture", "ExportReport", "Instruments", "OTelObserver",
    "OtlpJsonFileExporter", "Redactor", "ResumeLinks", "Telemetry", "TelemetryConfig", "capture_from", "configure",
    "encode_request", "format_traceparent", "graceful_exit", "parse_traceparent", "resolve",
]
