"""Options and helpers shared by CLI commands."""
from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .outputs import refuse_overlap

if TYPE_CHECKING:
    from ..telemetry import Telemetry

DEFAULT_OUT = Path("agentobs-out")
JAEGER_ENV = "AGENTOBS_JAEGER_URL"


def telemetry_options(default_file: str, *, other_outputs: tuple[str, ...] = ()
                      ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--traces-out`` (the file replaced, held by this process until telemetry shuts down), ``--otlp-endpoint``
    and ``--service-name``; ``other_outputs`` names the command's other output options, which may not name the
    traces file."""
    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        @click.option("--traces-out", type=click.Path(dir_okay=False, path_type=Path),
                      default=DEFAULT_OUT / default_file, show_default=True,
                      help="OTLP JSON lines file to write (replaced; one process at a time). Also exported over "
                           "OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set.")
        @click.option("--otlp-endpoint", default=None, metavar="URL",
                      help="Export over OTLP to this endpoint (default: OTEL_EXPORTER_OTLP_ENDPOINT).")
        @click.option("--service-name", default=None, help="service.name (default: OTEL_SERVICE_NAME or agentobs).")
        @functools.wraps(fn)
        def wrapper(*args: Any, traces_out: Path, otlp_endpoint: str | None, service_name: str | None,
                    **kwargs: Any) -> Any:
            from ..telemetry import configure
            for name in other_outputs:
                if kwargs.get(name) is not None:
                    refuse_overlap(name, kwargs[name], [("the traces file (--traces-out)", traces_out)])
            tel = configure(traces_out=traces_out, otlp_endpoint=otlp_endpoint, service_name=service_name,
                            replace_traces=True)
            return fn(*args, telemetry=tel, **kwargs)
        return wrapper
    return deco


def jaeger_url() -> str | None:
    url = os.environ.get(JAEGER_ENV)
    return url.rstrip("/") if url else None


def jaeger_link(trace_id: str | None) -> str | None:
    base = jaeger_url()
    return f"{base}/trace/{trace_id}" if base and trace_id else None


def report_export(tel: Telemetry) -> list[str]:
    report = tel.shutdown()
    return report.lines()
