"""OpenTelemetry for agentobs: an observer for the kernel, SDK setup, OTLP JSON files, an instrumentation API."""
from .content import Capture, Redactor, capture_from
from .observer import Instruments, OTelObserver
from .otlp_json import OtlpJsonFileExporter, encode_request
from .setup import ExportReport, Telemetry, TelemetryConfig, configure, resolve

__all__ = ["Capture", "ExportReport", "Instruments", "OTelObserver", "OtlpJsonFileExporter", "Redactor", "Telemetry",
           "TelemetryConfig", "capture_from", "configure", "encode_request", "resolve"]
