"""MLflow tracing (mlflow-tracing) exported over OTLP/HTTP to a receiver on 127.0.0.1: no tracking server.

The agent is a plain OpenAI-client tool loop: ``@mlflow.trace(span_type=AGENT)`` on the agent, ``span_type=TOOL``
on the tools, and MLflow's OpenAI autolog for the model calls. ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` points
MLflow's exporter at the receiver; the WSGI middleware's SERVER spans go to the same receiver through the
global tracer provider, which MLflow shares in its unified mode (``MLFLOW_USE_DEFAULT_TRACER_PROVIDER=false``).
Shapes: plain, http, two_runs, and the loop's extras (``openai_loop.EXTRAS``): retries, streaming, parallel, a
fatal tool error, the loop's turn limit, and multi_agent (a ``translator`` AGENT span called from a TOOL span).
"""
from __future__ import annotations

import os

import common
import openai_loop
from common import Recorder, Script, ScriptedServer, prompt
from receiver import OtlpReceiver

NAME = "mlflow"
PACKAGES = ("mlflow-tracing", "openai", "opentelemetry-sdk", "opentelemetry-exporter-otlp-proto-http",
            "opentelemetry-instrumentation-wsgi")


def main() -> None:
    common.quiet_environment()
    with OtlpReceiver() as rcv:
        os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = f"{rcv.endpoint}/v1/traces"
        os.environ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] = "http/protobuf"
        os.environ["OTEL_SERVICE_NAME"] = f"dialect-{NAME}"
        os.environ["MLFLOW_TRACKING_URI"] = "file:///nonexistent-mlflow-store"   # never used: OTLP-only export
        os.environ["MLFLOW_ENABLE_ASYNC_TRACE_LOGGING"] = "false"
        # unified mode: MLflow's spans go through the global provider, so they nest under the SERVER span
        os.environ["MLFLOW_USE_DEFAULT_TRACER_PROVIDER"] = "false"
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        app_provider = TracerProvider(resource=Resource.create({"service.name": f"dialect-{NAME}"}))
        trace.set_tracer_provider(app_provider)

        import mlflow
        from mlflow.entities import SpanType
        from openai import OpenAI
        mlflow.openai.autolog()
        if os.environ.get("DIALECT_APP_EXPORTER") == "1":
            app_provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{rcv.endpoint}/v1/traces")))

        def flush() -> None:
            app_provider.force_flush()
            mlflow_flush()
        rcv.use_flush(flush)
        script = Script({**common.standard_script(), **common.shape_script(),
                         **common.extra_script(*openai_loop.EXTRAS)})
        rec = Recorder(NAME, rcv, script, packages=PACKAGES,
                       notes=("a plain OpenAI-client loop: a failing tool's error text goes back to the model",
                              "retries happen inside the client's create(): one chat span per logical call, the "
                              "failed attempts are not in the spans",
                              "tool_error_fatal: the loop re-raises the tool's exception; turn_limit: the loop "
                              "raises MaxTurnsExceeded after 3 model calls"))
        tools = {n: mlflow.trace(f, name=n, span_type=SpanType.TOOL) for n, f in common.make_tools(rec).items()}

        with ScriptedServer(script) as srv:
            client = OpenAI(base_url=srv.base_url, api_key=common.DUMMY_KEY, max_retries=0, timeout=30)
            retry_client = OpenAI(base_url=srv.base_url, api_key=common.DUMMY_KEY, max_retries=common.RETRIES,
                                  timeout=30)

            @mlflow.trace(name="translator", span_type=SpanType.AGENT)
            def translator(text: str) -> str:
                return openai_loop.tool_loop(client, text, {}, model="gpt-4o", system=openai_loop.TRANSLATOR)

            def ask_translator(text: str) -> str:
                """Ask the translator agent."""
                rec.tool("ask_translator", {"text": text})
                rec.sub_agent("translator")
                return translator(text)
            ask = mlflow.trace(ask_translator, name="ask_translator", span_type=SpanType.TOOL)

            @mlflow.trace(name="assistant", span_type=SpanType.AGENT)
            def assistant(key: str) -> str:
                use = retry_client if key in openai_loop.RETRY_KEYS else client
                mine = {**tools, "ask_translator": ask} if key == "multi_agent" else tools
                return openai_loop.tool_loop(use, prompt(key), mine, **openai_loop.options(key))

            common.run_shapes(rec, assistant, app_provider, extras=openai_loop.EXTRAS)
        flush()
        rec.write()


def mlflow_flush() -> None:
    """Waits for MLflow's span export (its own tracer provider)."""
    from mlflow.tracing.provider import provider
    tp = provider.get()
    if hasattr(tp, "force_flush"):
        tp.force_flush()


if __name__ == "__main__":
    main()
