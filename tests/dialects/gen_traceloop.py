"""OpenLLMetry (traceloop-sdk): a plain OpenAI-client tool loop under ``@agent`` with ``@tool`` functions.

Traceloop.init gets our in-memory exporter (no batching, no Traceloop telemetry, no API key: nothing is sent
anywhere); its OpenAI instrumentation records the model calls. ``gen_traceloop_old.py`` runs this same driver
in the venv of an older release (its requirements file), which used the older attribute names.
Shapes: plain, http, two_runs (the WSGI SERVER span comes from the global tracer provider Traceloop sets), and
the loop's extras (``openai_loop.EXTRAS``): retries, streaming, parallel, a fatal tool error, the loop's turn limit,
and multi_agent (a ``translator`` ``@agent`` called from an ``@tool``).
"""
from __future__ import annotations

import inspect
import os
import sys

import common
import openai_loop
from common import PLAIN, SHAPE_OF, HttpApp, MemoryCapture, Recorder, Script, ScriptedServer, prompt

PACKAGES = ("traceloop-sdk", "opentelemetry-instrumentation-openai", "opentelemetry-semantic-conventions-ai", "openai",
            "opentelemetry-sdk", "opentelemetry-instrumentation-wsgi")


def main(name: str = "traceloop") -> None:
    common.quiet_environment()
    cap = MemoryCapture(f"dialect-{name}", set_global=False)
    from traceloop.sdk import Traceloop
    from traceloop.sdk.decorators import agent, tool
    os.environ.update({"TRACELOOP_METRICS_ENABLED": "false", "TRACELOOP_LOGGING_ENABLED": "false"})
    kwargs = dict(app_name=f"dialect-{name}", exporter=cap.exporter, disable_batch=True, telemetry_enabled=False,
                  api_key=None, api_endpoint="http://127.0.0.1:9", should_enrich_metrics=False)
    accepted = inspect.signature(Traceloop.init).parameters   # older releases take fewer options
    Traceloop.init(**{k: v for k, v in kwargs.items() if k in accepted})
    from openai import OpenAI
    from opentelemetry import context as otel_context
    from opentelemetry import trace

    cap.provider = trace.get_tracer_provider()
    script = Script({**common.standard_script(), **common.shape_script(), **common.extra_script(*openai_loop.EXTRAS)})
    notes = ["a plain OpenAI-client loop: a failing tool's error text goes back to the model",
             "each plain run starts from an empty OpenTelemetry context (see the loop below)",
             "retries happen inside the client's create(): one chat span per logical call, the failed attempts are not "
             "in the spans",
             "tool_error_fatal: the loop re-raises the tool's exception; turn_limit: the loop raises "
             "MaxTurnsExceeded after 3 model calls"]
    if name == "traceloop_old":
        notes.append("traceloop-sdk 0.33 never ends the span of a decorated function that raises, nor the failed "
                     "openai.chat span: in tool_error the charge_card span is missing and the next chat span is an "
                     "orphan; in model_error the agent span and the failed chat span are missing, the rest are "
                     "orphans (the same in tool_error_fatal and retries_exhausted; in turn_limit the agent span is "
                     "missing). The truth still counts what was served and run.")
        notes.append("traceloop-sdk 0.33 records no usage on a streamed openai.chat span (streaming), though the "
                     "stream delivered it (stream_options.include_usage)")
    rec = Recorder(name, cap, script, packages=PACKAGES, notes=tuple(notes))
    tools = {n: tool(name=n)(f) for n, f in common.make_tools(rec).items()}

    with ScriptedServer(script) as srv:
        client = OpenAI(base_url=srv.base_url, api_key=common.DUMMY_KEY, max_retries=0, timeout=30)
        retry_client = OpenAI(base_url=srv.base_url, api_key=common.DUMMY_KEY, max_retries=common.RETRIES,
                              timeout=30)

        @agent(name="translator")
        def translator(text: str) -> str:
            return openai_loop.tool_loop(client, text, {}, model="gpt-4o", system=openai_loop.TRANSLATOR)

        @tool(name="ask_translator")
        def ask_translator(text: str) -> str:
            """Ask the translator agent."""
            rec.tool("ask_translator", {"text": text})
            rec.sub_agent("translator")
            return translator(text)

        @agent(name="assistant")
        def assistant(key: str) -> str:
            use = retry_client if key in openai_loop.RETRY_KEYS else client
            mine = {**tools, "ask_translator": ask_translator} if key == "multi_agent" else tools
            return openai_loop.tool_loop(use, prompt(key), mine, **openai_loop.options(key))

        def isolated(key: str) -> None:
            # each run from an empty context, restored after: traceloop-sdk 0.33's decorators leave the span
            # of a function that raised in the context, and later runs would nest under it
            token = otel_context.attach(otel_context.Context())
            try:
                assistant(key)
            finally:
                otel_context.detach(token)

        for key in PLAIN:
            with rec.run(key, "plain"):
                isolated(key)
        with HttpApp(rec, assistant, cap.provider) as app:
            app.get("/run", ["http"])
            app.get("/two", ["two-a", "two-b"])
        for key in openai_loop.EXTRAS:
            with rec.run(key, SHAPE_OF[key]):
                isolated(key)
    rec.write()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "traceloop")
