"""How the guard conformance suite builds and runs the support agent on each guarded framework.

A driver runs seed 000's support agent (the desk's tools from ``tests/providers.py``) through the framework's real
SDK and the real OpenAI client against a scripted server on 127.0.0.1, with the framework's budget guard on, and
returns what the run left and what the server saw (``providers.Outcome``). ``test_conformance.py`` is written
against this interface only, so every behaviour in it holds on every framework listed in ``DRIVERS``; what one
framework alone offers is tested in ``test_<framework>_only.py``.

The frameworks are imported when a driver is used, not here: a missing framework skips its tests (the ``driver``
fixture in ``conftest.py``), it does not break collection.
"""
from __future__ import annotations

from typing import Any

from providers import Outcome, ProviderServer, desk_tools, outcome

from agentobs import Budget, Prices
from agentobs.domain.support import SupportDesk
from agentobs.errors import BudgetExceeded

PROMPT = "The jacket on order ord_1001 arrived damaged. Please refund 3,000 cents and send me a confirmation."
ROOMY = dict(max_tokens=100_000, max_output_tokens=300)
MODEL = "gpt-4.1-mini"
AGENT_NAME = "support-agent"


class PydanticAI:
    """Pydantic AI: the guard is a capability of the agent; spans come from Pydantic AI's own instrumentation."""

    name = "pydantic_ai"
    requires = ("pydantic_ai", "openai")

    def agent(self, srv: ProviderServer, desk: SupportDesk, budget: Budget | None, *, model: str = MODEL,
              prices: Prices | None = None, tracer: Any = None, **agent_kw: Any) -> Any:
        """The support agent on ``srv``'s model, with the guard among its capabilities (none for ``budget=None``)."""
        from pydantic_ai import Agent
        from pydantic_ai.models.instrumented import InstrumentationSettings
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        from agentobs.guards.pydantic_ai import BudgetGuard

        chat = OpenAIChatModel(model, provider=OpenAIProvider(openai_client=srv.async_openai()))
        caps = [BudgetGuard(budget, prices=prices)] if budget is not None else []
        agent = Agent(chat, name=AGENT_NAME, capabilities=caps, tools=desk_tools(desk), **agent_kw)
        if tracer is not None:
            agent.instrument = InstrumentationSettings(tracer_provider=tracer)
        return agent

    def run(self, script: Any, budget: Budget | None, *, model: str = MODEL, prices: Prices | None = None,
            tracer: Any = None, **agent_kw: Any) -> Outcome:
        desk = SupportDesk()
        with ProviderServer(script) as srv:
            agent = self.agent(srv, desk, budget, model=model, prices=prices, tracer=tracer, **agent_kw)
            return outcome(srv, desk, lambda: agent.run_sync(PROMPT).output)

    def is_native_stop(self, stop: BudgetExceeded) -> bool:
        """The guard's stop is also Pydantic AI's own ``UsageLimitExceeded``."""
        from pydantic_ai.exceptions import UsageLimitExceeded

        from agentobs.guards.pydantic_ai import BudgetStop

        return isinstance(stop, BudgetStop) and isinstance(stop, UsageLimitExceeded)


class OpenAIAgents:
    """The OpenAI Agents SDK: the guard runs the agent (``guard.run_sync``) and writes the agent span itself."""

    name = "openai_agents"
    requires = ("agents", "openai")

    def agent(self, srv: ProviderServer, desk: SupportDesk, *, model: str = MODEL) -> Any:
        """The support agent on ``srv``'s model (the SDK's own trace export, to a hosted service, switched off)."""
        from agents import Agent, OpenAIChatCompletionsModel, function_tool, set_tracing_disabled

        set_tracing_disabled(True)
        return Agent(name=AGENT_NAME, model=OpenAIChatCompletionsModel(model, srv.async_openai()),
                     tools=[function_tool(f) for f in desk_tools(desk)])

    def run(self, script: Any, budget: Budget | None, *, model: str = MODEL, prices: Prices | None = None,
            tracer: Any = None) -> Outcome:
        from agents import Runner

        from agentobs.guards.openai_agents import BudgetGuard

        desk = SupportDesk()
        with ProviderServer(script) as srv:
            agent = self.agent(srv, desk, model=model)
            if budget is None:
                return outcome(srv, desk, lambda: Runner.run_sync(agent, PROMPT, max_turns=10).final_output)
            guard = BudgetGuard(budget, prices=prices, tracer_provider=tracer)
            return outcome(srv, desk, lambda: guard.run_sync(agent, PROMPT).final_output)

    def is_native_stop(self, stop: BudgetExceeded) -> bool:
        """The guard's stop is also the SDK's ``AgentsException``, and the SDK's partial results ride along."""
        from agents.exceptions import AgentsException

        from agentobs.guards.openai_agents import BudgetStop

        return isinstance(stop, BudgetStop) and isinstance(stop, AgentsException) and stop.run_data is not None


DRIVERS: dict[str, PydanticAI | OpenAIAgents] = {d.name: d for d in (PydanticAI(), OpenAIAgents())}
