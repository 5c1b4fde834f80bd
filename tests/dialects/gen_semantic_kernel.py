"""Semantic Kernel (Python) ``ChatCompletionAgent`` with ``OpenAIChatCompletion`` (its own ``AsyncOpenAI`` client,
``base_url`` at the scripted server) and kernel functions as tools, traced by Semantic Kernel's built-in
OpenTelemetry (``SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS`` and ``..._SENSITIVE``: GenAI
semantic-convention spans ``invoke_agent``, ``chat.completions``, ``execute_tool``).

Shapes: plain, http, two_runs, retries (the client's ``max_retries``), streaming (``invoke_stream``), parallel,
tool_error_fatal (an auto-function-invocation filter that sets ``context.terminate`` when the function failed),
turn_limit (``FunctionChoiceBehavior.Auto(maximum_auto_invoke_attempts=3)``: after the third round of tools SK
makes one more request with function calling off) and multi_agent (the translator agent as a plugin of the
orchestrator agent: Semantic Kernel exposes every agent as a kernel function). By default a function that raises
is handed back to the model as an error result.
"""
from __future__ import annotations

import asyncio
import os
import warnings
from typing import Annotated

import common
import limits
from common import PLAIN, SHAPE_OF, HttpApp, MemoryCapture, Recorder, Reply, ScriptedServer, call, prompt

NAME = "semantic_kernel"
PACKAGES = ("semantic-kernel", "openai", "opentelemetry-sdk", "opentelemetry-instrumentation-wsgi")
EXTRAS = ("retries", "retries_exhausted", "streaming", "parallel", "tool_error_fatal", "turn_limit", "multi_agent")
NOTES = ("a kernel function that raises is handed back to the model as 'An error occurred while invoking the "
         "function' (tool_error has a second model call); tool_error_fatal adds an auto-function-invocation "
         "filter that sets context.terminate when the function failed: the agent returns the function result",
         "retries happen inside the OpenAI client (max_retries=2): one chat span per logical call, the failed "
         "attempts are not in the spans",
         f"turn_limit: FunctionChoiceBehavior.Auto(maximum_auto_invoke_attempts={common.TURN_LIMIT}); after the "
         "third round of tools SK makes one more request without tools and returns its text: stop_reason "
         "turn_limit because that last request offered no tools after a reply that asked for one",
         "multi_agent: the translator ChatCompletionAgent is a plugin of the orchestrator agent (SK turns every "
         "agent into a kernel function named after it): the model calls translator-translator",
         "a failed model call raises out of get_response (ServiceResponseException)")


def team_script() -> dict[str, list[Reply]]:
    """multi_agent with the agent-as-plugin function name and argument (same replies, same tokens)."""
    return {"multi_agent": [
        Reply(tool_calls=[call("translator-translator", messages="[run:multi_agent] Translate 'good morning'")],
              prompt_tokens=125, completion_tokens=20),
        Reply(content="bonjour", model="gpt-4o-2024-08-06", prompt_tokens=40, completion_tokens=3),
        Reply(content="In French: bonjour.", prompt_tokens=170, completion_tokens=8)]}


def limit_script() -> dict[str, list[Reply]]:
    """turn_limit: one lookup per round until the limit, then the answer to SK's last request (no tools)."""
    turns = [common._turn(i) for i in range(common.TURN_LIMIT)]
    return {"turn_limit": [*turns, Reply(content="I could not finish within the step limit.",
                                         prompt_tokens=100 + 30 * len(turns), completion_tokens=10)]}


class ForcedRecorder(Recorder):
    def truth(self) -> dict:
        return limits.apply(super().truth(), self.script.log, self.tools, forced=True)


def main() -> None:
    common.quiet_environment()
    os.environ["SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS"] = "true"
    os.environ["SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE"] = "true"
    os.environ["AZURE_TELEMETRY_DISABLED"] = "true"
    warnings.simplefilter("ignore")
    cap = MemoryCapture(f"dialect-{NAME}")

    from openai import AsyncOpenAI
    from semantic_kernel.agents import ChatCompletionAgent
    from semantic_kernel.connectors.ai import FunctionChoiceBehavior
    from semantic_kernel.connectors.ai.open_ai import OpenAIChatCompletion, OpenAIChatPromptExecutionSettings
    from semantic_kernel.filters import AutoFunctionInvocationContext, FilterTypes
    from semantic_kernel.functions import KernelArguments, kernel_function

    extras = [k for k in EXTRAS if k not in ("turn_limit", "multi_agent")]
    script = limits.OfferedScript({**common.standard_script(), **common.shape_script(),
                                   **common.extra_script(*extras), **limit_script(), **team_script()})
    rec = ForcedRecorder(NAME, cap, script, packages=PACKAGES, notes=NOTES)
    fns = common.make_tools(rec)

    class Tools:
        @kernel_function(description="Current weather for a city.")
        def get_weather(self, city: Annotated[str, "the city"]) -> str:
            return fns["get_weather"](city)

        @kernel_function(description="Local time in a city.")
        def get_time(self, city: Annotated[str, "the city"]) -> str:
            return fns["get_time"](city)

        @kernel_function(description="Status of an order.")
        def lookup_order(self, order_id: Annotated[str, "the order id"]) -> str:
            return fns["lookup_order"](order_id)

        @kernel_function(description="Charge the customer's card.")
        def charge_card(self, amount: Annotated[int, "the amount"]) -> str:
            return fns["charge_card"](amount)

    async def stop_on_failure(context: AutoFunctionInvocationContext, next) -> None:
        """tool_error_fatal: a failed function ends the run (SK hands the error text back otherwise)."""
        await next(context)
        value = context.function_result.value if context.function_result else None
        if isinstance(value, str) and value.startswith("An error occurred while invoking the function"):
            context.terminate = True

    async def log_agent_call(context: AutoFunctionInvocationContext, next) -> None:
        """multi_agent: the translator plugin's call is a tool call of the run and starts the sub-agent."""
        if context.function.plugin_name == "translator":
            rec.tool(context.function.fully_qualified_name, dict(context.arguments or {}))
            rec.sub_agent("translator")
        await next(context)

    with ScriptedServer(script) as srv:
        def service(model: str = "gpt-4o-mini", retries: int = 0) -> OpenAIChatCompletion:
            client = AsyncOpenAI(base_url=srv.base_url, api_key=common.DUMMY_KEY, max_retries=retries, timeout=30)
            return OpenAIChatCompletion(ai_model_id=model, async_client=client, service_id=f"{model}-{retries}")

        def settings(attempts: int = 8) -> KernelArguments:
            return KernelArguments(settings=OpenAIChatPromptExecutionSettings(
                temperature=0, function_choice_behavior=FunctionChoiceBehavior.Auto(
                    maximum_auto_invoke_attempts=attempts)))

        def agent(name: str = "assistant", instructions: str = "You answer with the tools.", *,
                  svc: OpenAIChatCompletion | None = None, plugins: list | None = None,
                  attempts: int = 8) -> ChatCompletionAgent:
            return ChatCompletionAgent(service=svc or service(), name=name,
                                       instructions=f"[agent:{name}] {instructions}",
                                       plugins=[Tools()] if plugins is None else plugins,
                                       arguments=settings(attempts))
        assistant = agent()
        retrying = agent(svc=service(retries=common.RETRIES))
        fatal = agent()
        fatal.kernel.add_filter(FilterTypes.AUTO_FUNCTION_INVOCATION, stop_on_failure)
        translator = agent("translator", "You translate to French.", svc=service("gpt-4o"), plugins=[])
        orchestrator = agent("orchestrator", "You delegate translations.", plugins=[translator])
        orchestrator.kernel.add_filter(FilterTypes.AUTO_FUNCTION_INVOCATION, log_agent_call)
        agents = {"retries": retrying, "retries_exhausted": retrying, "tool_error_fatal": fatal,
                  "turn_limit": agent(attempts=common.TURN_LIMIT), "multi_agent": orchestrator}

        async def arun(key: str) -> None:
            a = agents.get(key, assistant)
            text = prompt(key, "Say good morning in French." if key == "multi_agent" else "Please help.")
            if key == "streaming":
                async for _ in a.invoke_stream(messages=text):
                    pass
            else:
                await a.get_response(messages=text)

        def run(key: str) -> None:
            asyncio.run(arun(key))

        for key in PLAIN:
            with rec.run(key, "plain"):
                run(key)
        with HttpApp(rec, run, cap.provider) as app:
            app.get("/run", ["http"])
            app.get("/two", ["two-a", "two-b"])
        for key in EXTRAS:
            with rec.run(key, SHAPE_OF[key]):
                run(key)
    rec.write()


if __name__ == "__main__":
    main()
