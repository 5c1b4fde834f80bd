"""Langfuse Python SDK (OTel-based) exporting to a receiver on 127.0.0.1 that poses as the Langfuse host.

The SDK sends OTLP/HTTP protobuf to ``{host}/api/public/otel/v1/traces``; ``host`` is the receiver, the keys
are dummies. The agent is a plain OpenAI-client tool loop: ``@observe(as_type="agent")`` on the agent,
``as_type="tool"`` on the tools, and Langfuse's OpenAI integration (``langfuse.openai.OpenAI``) for the model
calls (generations). The WSGI SERVER spans go to the same receiver through the global tracer provider.
Shapes: plain, http, two_runs, and the loop's extras (``openai_loop.EXTRAS``): retries, streaming, parallel, a
fatal tool error, the loop's turn limit, and multi_agent (a ``translator`` agent observation inside a tool one).
"""
from __future__ import annotations

import os

import common
import openai_loop
from common import Recorder, Script, ScriptedServer, prompt
from receiver import OtlpReceiver

NAME = "langfuse"
PACKAGES = ("langfuse", "openai", "opentelemetry-sdk", "opentelemetry-exporter-otlp-proto-http",
            "opentelemetry-instrumentation-wsgi")


def main() -> None:
    common.quiet_environment()
    with OtlpReceiver() as rcv:
        os.environ.update({"LANGFUSE_HOST": rcv.endpoint, "LANGFUSE_BASE_URL": rcv.endpoint,
                           "LANGFUSE_PUBLIC_KEY": "pk-lf-dummy", "LANGFUSE_SECRET_KEY": "sk-lf-dummy",
                           "LANGFUSE_TIMEOUT": "5", "LANGFUSE_SAMPLE_RATE": "1.0"})
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        app_provider = TracerProvider(resource=Resource.create({"service.name": f"dialect-{NAME}"}))
        app_provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{rcv.endpoint}/v1/traces")))
        trace.set_tracer_provider(app_provider)

        from langfuse import Langfuse, observe
        from langfuse.openai import OpenAI
        lf = Langfuse(public_key="pk-lf-dummy", secret_key="sk-lf-dummy", host=rcv.endpoint, flush_at=1,
                      flush_interval=0.1, timeout=5)

        def flush() -> None:
            app_provider.force_flush()
            lf.flush()
        rcv.use_flush(flush)
        script = Script({**common.standard_script(), **common.shape_script(),
                         **common.extra_script(*openai_loop.EXTRAS)})
        rec = Recorder(NAME, rcv, script, packages=PACKAGES,
                       notes=("a plain OpenAI-client loop: a failing tool's error text goes back to the model",
                              "retries happen inside the client's create(): one generation per logical call, the "
                              "failed attempts are not in the spans",
                              "tool_error_fatal: the loop re-raises the tool's exception; turn_limit: the loop "
                              "raises MaxTurnsExceeded after 3 model calls"))
        tools = {n: observe(name=n, as_type="tool")(f) for n, f in common.make_tools(rec).items()}

        with ScriptedServer(script) as srv:
            client = OpenAI(base_url=srv.base_url, api_key=common.DUMMY_KEY, max_retries=0, timeout=30)
            retry_client = OpenAI(base_url=srv.base_url, api_key=common.DUMMY_KEY, max_retries=common.RETRIES,
                                  timeout=30)

            @observe(name="translator", as_type="agent")
            def translator(text: str) -> str:
                return openai_loop.tool_loop(client, text, {}, model="gpt-4o", system=openai_loop.TRANSLATOR)

            @observe(name="ask_translator", as_type="tool")
            def ask_translator(text: str) -> str:
                """Ask the translator agent."""
                rec.tool("ask_translator", {"text": text})
                rec.sub_agent("translator")
                return translator(text)

            @observe(name="assistant", as_type="agent")
            def assistant(key: str) -> str:
                use = retry_client if key in openai_loop.RETRY_KEYS else client
                mine = {**tools, "ask_translator": ask_translator} if key == "multi_agent" else tools
                return openai_loop.tool_loop(use, prompt(key), mine, **openai_loop.options(key))

            common.run_shapes(rec, assistant, app_provider, extras=openai_loop.EXTRAS)
        flush()
        rec.write()
        lf.shutdown()


if __name__ == "__main__":
    main()
