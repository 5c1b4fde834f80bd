"""OpenLIT: its OpenAI instrumentation on a plain OpenAI-client tool loop, the agent and tools under ``@openlit.trace``.

``openlit.init`` finds our tracer provider (set as the global one) and adds its instrumentations to it: the
OpenAI client's (``chat {model}`` CLIENT spans with ``gen_ai.*``) and the HTTP clients' it bundles (the httpx
request under each model call). No metrics, no events, no batching, no OTLP endpoint, and a local pricing
file (``pricing_json``; by default OpenLIT fetches its price list from GitHub): nothing leaves the process.
``@openlit.trace`` on the agent function and on each tool makes a CLIENT span named after the function, with
``function.args`` / ``function.kwargs`` and the result in ``gen_ai.output.messages``: no attribute names it an
agent or a tool. Shapes: plain, http, two_runs, and the loop's extras (``openai_loop.EXTRAS``).
"""
from __future__ import annotations

import json
import sys
import tempfile

import common
import openai_loop
from common import MemoryCapture, Recorder, Script, ScriptedServer, prompt

PACKAGES = ("openlit", "openai", "opentelemetry-sdk", "opentelemetry-instrumentation-wsgi")


def main(name: str = "openlit") -> None:
    common.quiet_environment()
    cap = MemoryCapture(f"dialect-{name}")
    import openlit
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as prices:
        json.dump({"chat": {"gpt-4o-mini": {"promptPrice": 0.00015, "completionPrice": 0.0006},
                            "gpt-4o": {"promptPrice": 0.0025, "completionPrice": 0.01}}}, prices)
    openlit.init(application_name=f"dialect-{name}", disable_metrics=True, disable_events=True, disable_batch=True,
                 pricing_json=prices.name, collect_gpu_stats=False, collect_system_metrics=False)
    from openai import OpenAI

    script = Script({**common.standard_script(), **common.shape_script(), **common.extra_script(*openai_loop.EXTRAS)})
    notes = ["a plain OpenAI-client loop: a failing tool's error text goes back to the model",
             "the agent and tool spans come from @openlit.trace: CLIENT spans named after the function, no "
             "attribute names them an agent or a tool",
             "retries happen inside the client's create(): one chat span per logical call",
             "tool_error_fatal: the loop re-raises the tool's exception; turn_limit: the loop raises "
             "MaxTurnsExceeded after 3 model calls"]
    rec = Recorder(name, cap, script, packages=PACKAGES, notes=tuple(notes))
    tools = {n: openlit.trace(f) for n, f in common.make_tools(rec).items()}

    with ScriptedServer(script) as srv:
        client = OpenAI(base_url=srv.base_url, api_key=common.DUMMY_KEY, max_retries=0, timeout=30)
        retry_client = OpenAI(base_url=srv.base_url, api_key=common.DUMMY_KEY, max_retries=common.RETRIES,
                              timeout=30)

        @openlit.trace
        def translator(text: str) -> str:
            return openai_loop.tool_loop(client, text, {}, model="gpt-4o", system=openai_loop.TRANSLATOR)

        @openlit.trace
        def ask_translator(text: str) -> str:
            """Ask the translator agent."""
            rec.tool("ask_translator", {"text": text})
            rec.sub_agent("translator")
            return translator(text)

        @openlit.trace
        def assistant(key: str) -> str:
            use = retry_client if key in openai_loop.RETRY_KEYS else client
            mine = {**tools, "ask_translator": ask_translator} if key == "multi_agent" else tools
            return openai_loop.tool_loop(use, prompt(key), mine, **openai_loop.options(key))

        common.run_shapes(rec, assistant, cap.provider, extras=openai_loop.EXTRAS)
    rec.write()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "openlit")
