"""Pydantic Logfire: ``logfire.instrument_openai`` on a plain OpenAI-client tool loop, the app's own spans by Logfire.

``logfire.configure(send_to_logfire=False, console=False, metrics=False)`` with our in-memory exporter as an
additional span processor: nothing leaves the process. The model calls are Logfire's OpenAI spans (``Chat
Completion with {request_data[model]!r}``, GenAI attributes plus ``request_data`` / ``response_data``); the agent
and the tools are what a Logfire user writes around them: ``logfire.span("{agent} answering", ...)`` for an agent
and ``@logfire.instrument("tool {name}")`` on each tool, spans that carry no GenAI attribute at all (the analysis
must find the runs and tools by structure or not at all). Shapes: plain, http, two_runs (the WSGI SERVER span from
OpenTelemetry's WSGI middleware on Logfire's tracer provider) and the loop's extras (``openai_loop.EXTRAS``).
"""
from __future__ import annotations

import sys
from collections.abc import Callable

import common
import openai_loop
from common import MemoryCapture, Recorder, Script, ScriptedServer, prompt

PACKAGES = ("logfire", "openai", "opentelemetry-sdk", "opentelemetry-instrumentation-wsgi")


def main(name: str = "logfire") -> None:
    common.quiet_environment()
    cap = MemoryCapture(f"dialect-{name}", set_global=False)
    import logfire
    from opentelemetry import trace
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    logfire.configure(send_to_logfire=False, console=False, metrics=False, service_name=f"dialect-{name}",
                      additional_span_processors=[SimpleSpanProcessor(cap.exporter)], inspect_arguments=False)
    cap.provider = trace.get_tracer_provider()
    from openai import OpenAI
    logfire.instrument_openai()

    script = Script({**common.standard_script(), **common.shape_script(), **common.extra_script(*openai_loop.EXTRAS)})
    notes = ["a plain OpenAI-client loop: a failing tool's error text goes back to the model",
             "the agent and tool spans are plain Logfire spans (logfire.span, @logfire.instrument): no GenAI "
             "attribute names them an agent or a tool",
             "retries happen inside the client's create(): one chat span per logical call",
             "tool_error_fatal: the loop re-raises the tool's exception; turn_limit: the loop raises "
             "MaxTurnsExceeded after 3 model calls"]
    rec = Recorder(name, cap, script, packages=PACKAGES, notes=tuple(notes))

    def traced(n: str, f: Callable) -> Callable:
        return logfire.instrument(f"tool {n}", span_name=f"tool {n}")(f)
    tools = {n: traced(n, f) for n, f in common.make_tools(rec).items()}

    with ScriptedServer(script) as srv:
        client = OpenAI(base_url=srv.base_url, api_key=common.DUMMY_KEY, max_retries=0, timeout=30)
        retry_client = OpenAI(base_url=srv.base_url, api_key=common.DUMMY_KEY, max_retries=common.RETRIES,
                              timeout=30)

        def ask_translator(text: str) -> str:
            """Ask the translator agent."""
            rec.tool("ask_translator", {"text": text})
            rec.sub_agent("translator")
            with logfire.span("{agent} answering", agent="translator"):
                return openai_loop.tool_loop(client, text, {}, model="gpt-4o", system=openai_loop.TRANSLATOR)

        def assistant(key: str) -> None:
            use = retry_client if key in openai_loop.RETRY_KEYS else client
            mine = {**tools, "ask_translator": traced("ask_translator", ask_translator)} \
                if key == "multi_agent" else tools
            with logfire.span("{agent} answering", agent="assistant"):
                openai_loop.tool_loop(use, prompt(key), mine, **openai_loop.options(key))

        common.run_shapes(rec, assistant, cap.provider, extras=openai_loop.EXTRAS)
    rec.write()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "logfire")
