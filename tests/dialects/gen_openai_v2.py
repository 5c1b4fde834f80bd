"""OpenTelemetry's contrib GenAI instrumentation of the OpenAI client (opentelemetry-instrumentation-openai-v2).

The instrumentation records model calls only (``chat {model}`` CLIENT spans). The agent and tool spans are
written by hand, as an application on the GenAI semantic conventions does: ``invoke_agent assistant`` and
``execute_tool {name}`` (with the opt-in ``gen_ai.tool.call.arguments``). Two fixtures from this driver:

- ``openai_v2``: the instrumentation's default, the v1.30 conventions (``gen_ai.system``);
- ``openai_v2_latest``: ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` (the latest conventions;
  the manual spans then use ``gen_ai.provider.name``).

Shapes: plain, http, two_runs, ``no_agent`` (the loop inside an HTTP SERVER span with no agent or tool span at
all: model calls only), and the loop's extras (``openai_loop.EXTRAS``: retries, streaming, parallel, a fatal tool
error, the loop's turn limit, a translator agent run from a tool).
"""
from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable

import common
import openai_loop
from common import PLAIN, SHAPE_OF, HttpApp, MemoryCapture, Recorder, Reply, Script, ScriptedServer, call, prompt

PACKAGES = ("opentelemetry-instrumentation-openai-v2", "opentelemetry-util-genai", "openai", "opentelemetry-sdk",
            "opentelemetry-semantic-conventions", "opentelemetry-instrumentation-wsgi")


def bare_script() -> dict[str, list[Reply]]:
    return {"bare": [Reply(tool_calls=[call("lookup_order", order_id="D-4")], prompt_tokens=95, completion_tokens=13),
                     Reply(tool_calls=[call("lookup_order", order_id="D-4")], prompt_tokens=125, completion_tokens=13),
                     Reply(content="Order D-4 is delivered.", prompt_tokens=150, completion_tokens=9)]}


def main(name: str) -> None:
    common.quiet_environment()
    latest = name.endswith("_latest")
    if latest:
        os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
    else:
        os.environ.pop("OTEL_SEMCONV_STABILITY_OPT_IN", None)
    cap = MemoryCapture(f"dialect-{name}")
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    OpenAIInstrumentor().instrument(tracer_provider=cap.provider)
    from openai import OpenAI
    from opentelemetry import trace

    tracer = cap.provider.get_tracer("dialect-fixtures.app")
    provider_key = "gen_ai.provider.name" if latest else "gen_ai.system"
    script = Script({**common.standard_script(), **common.shape_script(), **bare_script(),
                     **common.extra_script(*openai_loop.EXTRAS)})
    notes = ["the instrumentation records model calls only: invoke_agent and execute_tool spans are the app's own",
             "the bare run has no agent or tool span: its figures are the model calls under the SERVER span; its "
             "tool executions (truth tool_calls) appear in no span, and without content capture neither do the "
             "tool calls the model asked for",
             "retries happen inside the client's create(): one chat span per logical call, whatever its attempts "
             "(the failed attempts are not in the spans; retries_exhausted's span carries the error)",
             "the loop's turn limit raises MaxTurnsExceeded (recorded on the app's invoke_agent span as error.type)",
             "a failed chat span's error.type is the repr of the exception class in the default conventions "
             "(\"<class 'openai.InternalServerError'>\"), the class name with the latest ones"]
    rec = Recorder(name, cap, script, packages=PACKAGES, notes=tuple(notes))
    plain_tools = common.make_tools(rec)

    def traced(n: str, f: Callable) -> Callable:
        def run_tool(**kw: object) -> object:
            attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": n, "gen_ai.tool.type": "function",
                     "gen_ai.tool.call.arguments": json.dumps(kw, sort_keys=True)}
            with tracer.start_as_current_span(f"execute_tool {n}", attributes=attrs) as span:
                try:
                    return f(**kw)
                except Exception as e:
                    span.set_attribute("error.type", type(e).__qualname__)
                    raise
        return run_tool
    tools = {n: traced(n, f) for n, f in plain_tools.items()}

    with ScriptedServer(script) as srv:
        client = OpenAI(base_url=srv.base_url, api_key=common.DUMMY_KEY, max_retries=0, timeout=30)
        retry_client = OpenAI(base_url=srv.base_url, api_key=common.DUMMY_KEY, max_retries=common.RETRIES,
                              timeout=30)

        def invoke(name: str, model: str, body: Callable[[], str]) -> str:
            attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name,
                     provider_key: "openai", "gen_ai.request.model": model}
            with tracer.start_as_current_span(f"invoke_agent {name}", kind=trace.SpanKind.INTERNAL,
                                              attributes=attrs) as span:
                try:
                    return body()
                except Exception as e:
                    span.set_attribute("error.type", type(e).__qualname__)
                    raise

        def ask_translator(text: str) -> str:
            """Ask the translator agent."""
            rec.tool("ask_translator", {"text": text})
            rec.sub_agent("translator")
            return invoke("translator", "gpt-4o", lambda: openai_loop.tool_loop(
                client, text, {}, model="gpt-4o", system=openai_loop.TRANSLATOR))

        def agent(key: str) -> None:
            use = retry_client if key in openai_loop.RETRY_KEYS else client
            mine = {**tools, "ask_translator": traced("ask_translator", ask_translator)} \
                if key == "multi_agent" else tools
            invoke("assistant", "gpt-4o-mini",
                   lambda: openai_loop.tool_loop(use, prompt(key), mine, **openai_loop.options(key)))

        def bare(key: str) -> None:
            openai_loop.tool_loop(client, prompt(key), plain_tools)

        for key in PLAIN:
            with rec.run(key, "plain"):
                agent(key)
        with HttpApp(rec, agent, cap.provider) as app:
            app.get("/run", ["http"])
            app.get("/two", ["two-a", "two-b"])
        with HttpApp(rec, bare, cap.provider) as app:
            app.get("/run", ["bare"])
        for key in openai_loop.EXTRAS:
            with rec.run(key, SHAPE_OF[key]):
                agent(key)
    for r in rec.runs:
        if r["run"] == "bare":
            r["shape"] = "no_agent"
    rec.write()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "openai_v2")
