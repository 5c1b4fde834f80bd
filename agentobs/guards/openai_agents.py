"""The kernel's budget for an OpenAI Agents SDK run (``pip install agentobs[openai-agents]``)::

    from agentobs import Budget
    from agentobs.guards.openai_agents import BudgetGuard, BudgetStop

    guard = BudgetGuard(Budget(max_steps=8, max_tool_calls=6, max_tokens=20_000, max_usd=0.05))
    try:
        result = await guard.run(agent, "...")        # or guard.run_sync(agent, "...")
    except BudgetStop as stop:                        # also an agents AgentsException, with .run_data
        print(stop.stop, stop.limit, stop.observed)

Through the SDK's public extension points only: ``RunHooks`` (``on_llm_start``: the budget checked before
each model call; ``on_llm_end``: the reply's usage charged; ``on_tool_start``: repeats, the tool-call limit
and the deadline checked before each tool call; ``on_tool_end``: the result feeds the progress guard), a
``Model`` wrapper (the time left sent as each call's timeout and enforced around it) and ``RunConfig``
(the output cap as ``max_tokens``, ``max_turns`` one above ``max_steps`` so the guard's stop comes first).
``guard.hooks()`` gives the hooks alone for code that calls ``Runner.run`` itself.

The SDK's own tracing is not OpenTelemetry: ``guard.run`` writes the stop reason on the current
``invoke_agent`` span when there is one (yours), or opens one (``invoke_agent {agent name}``) on the tracer
provider you pass (default: the global one). Bridges such as OpenInference then nest under it.
"""
from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import json
import time
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, TracerProvider

from ..contract import semconv as sc
from ..contract.events import Breach, TokenUsage
from ..contract.pricing import Prices
from ..contract.vocabulary import StopReason
from ..errors import BudgetExceeded
from ..kernel.budget import Budget
from . import _spans
from ._accountant import Accountant, est_tokens, text_size

try:
    from agents import (
        Agent,
        AgentHookContext,
        AgentOutputSchemaBase,
        AgentsException,
        Handoff,
        MaxTurnsExceeded,
        Model,
        ModelProvider,
        ModelResponse,
        ModelSettings,
        ModelTracing,
        RunConfig,
        RunContextWrapper,
        RunHooks,
        Runner,
        RunResult,
        Tool,
        TResponseInputItem,
        Usage,
    )
    from agents.tool_context import ToolContext
    from openai.types.responses import ResponseFunctionToolCall
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise ImportError("the OpenAI Agents guard needs openai-agents: pip install 'agentobs[openai-agents]'") from exc

_ACCOUNT: contextvars.ContextVar[Accountant | None] = contextvars.ContextVar("agentobs_guard_account", default=None)


class BudgetStop(BudgetExceeded, AgentsException):
    """The guard stopped the run: ``breach`` (the limit, its value, what was observed, the stop reason), also as
    ``stop``, ``limit`` and ``observed``; ``run_data`` (the SDK's ``RunErrorDetails``: items and responses so
    far) when the runner attached it."""

    def __init__(self, breach: Breach, detail: str = ""):
        BudgetExceeded.__init__(self, breach.stop, breach.limit_value, breach.observed, detail)
        self.breach = breach
        self.run_data = None


def _model_of(agent: Agent[Any], run_model: str | Model | None = None) -> tuple[str | None, str]:
    """The model id a run's requests are priced by (the SDK's models keep it in ``model``), and the provider."""
    m = run_model if run_model is not None else agent.model
    if isinstance(m, _DeadlineModel):
        m = m.inner
    name = m if isinstance(m, str) else getattr(m, "model", None)
    return (str(name) if name else None), "openai"


def _dumped(item: Any) -> Any:
    """An output item as plain data (the SDK's items are pydantic models), for sizing it."""
    dump = getattr(item, "model_dump", None)
    try:
        return dump() if callable(dump) else str(item)
    except Exception:          # (only a size estimate)
        return str(item)


def _usage(u: Usage) -> TokenUsage | None:
    """A response's usage as the contract's ``TokenUsage``; None when the model reported no tokens (the guard
    then charges its estimate of the input)."""
    if not (u.input_tokens or u.output_tokens):
        return None
    return TokenUsage(input_tokens=u.input_tokens, output_tokens=u.output_tokens, source="reported",
                      cache_read_input_tokens=u.input_tokens_details.cached_tokens or None,
                      reasoning_output_tokens=u.output_tokens_details.reasoning_tokens or None)


def _tool_call(context: RunContextWrapper[Any], tool: Tool) -> tuple[str, str, Any]:
    """(tool name, call id, arguments) of a call: the runner passes a ``ToolContext`` to the tool hooks."""
    if not isinstance(context, ToolContext):
        return tool.name, tool.name, {}
    raw = context.tool_arguments
    try:
        args = json.loads(raw) if raw.strip() else {}
    except ValueError:
        args = raw                  # digested as text: a repeat of the same malformed call is still a repeat
    return context.tool_name, context.tool_call_id or context.tool_name, args


class BudgetHooks(RunHooks[Any]):
    """The guard's hooks for one run (make a new one per run: it holds the run's account)."""

    def __init__(self, budget: Budget, *, prices: Prices | None = None, price_as: str | None = None,
                 model: str | Model | None = None, inner: RunHooks[Any] | None = None):
        self.account = Accountant(budget, fail=BudgetStop, prices=prices, price_as=price_as)
        self.model, self.inner = model, inner
        self._llm: dict[int, tuple[float, int, str | None]] = {}   # agent id -> (start, input estimate, model)
        self._tools: dict[str, float] = {}                          # call id -> start

    async def on_llm_start(self, context: RunContextWrapper[Any], agent: Agent[Any], system_prompt: str | None,
                           input_items: list[TResponseInputItem]) -> None:
        acct = self.account
        name, provider = _model_of(agent, self.model)
        chars = text_size(system_prompt) + text_size(input_items)
        for tool in agent.tools:
            chars += len(tool.name) + len(getattr(tool, "description", "") or "")
            chars += text_size(getattr(tool, "params_json_schema", None))
        tin = acct.before_model_request(input_chars=chars, model=name, provider=provider)
        self._llm[id(agent)] = (time.monotonic(), tin, name)
        if self.inner is not None:
            await self.inner.on_llm_start(context, agent, system_prompt, input_items)

    async def on_llm_end(self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse) -> None:
        started, tin, name = self._llm.pop(id(agent), (time.monotonic(), 0, None))
        self.account.model_returned(_usage(response.usage), seconds=time.monotonic() - started, model=name,
                                    provider="openai", estimated_input=tin,
                                    estimated_output=est_tokens(text_size([_dumped(item) for item in response.output])))
        calls = sum(1 for item in response.output if isinstance(item, ResponseFunctionToolCall))
        self.account.project_tool_calls(calls)
        if self.inner is not None:
            await self.inner.on_llm_end(context, agent, response)

    async def on_tool_start(self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool) -> None:
        name, call_id, args = _tool_call(context, tool)
        self.account.before_tool_call(name, args)
        self._tools[call_id] = time.monotonic()
        if self.inner is not None:
            await self.inner.on_tool_start(context, agent, tool)

    async def on_tool_end(self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool, result: object
                          ) -> None:
        name, call_id, _ = _tool_call(context, tool)
        started = self._tools.pop(call_id, time.monotonic())
        self.account.tool_returned(name, result, time.monotonic() - started)
        if self.inner is not None:
            await self.inner.on_tool_end(context, agent, tool, result)

    async def on_agent_start(self, context: AgentHookContext[Any], agent: Agent[Any]) -> None:
        if self.inner is not None:
            await self.inner.on_agent_start(context, agent)

    async def on_agent_end(self, context: AgentHookContext[Any], agent: Agent[Any], output: Any) -> None:
        if self.inner is not None:
            await self.inner.on_agent_end(context, agent, output)

    async def on_handoff(self, context: RunContextWrapper[Any], from_agent: Agent[Any], to_agent: Agent[Any]) -> None:
        if self.inner is not None:
            await self.inner.on_handoff(context, from_agent, to_agent)


class _DeadlineModel(Model):
    """Sends the run's time left as each call's timeout and cuts the call off there (the deadline stop)."""

    def __init__(self, inner: Model):
        self.inner = inner

    async def get_response(self, system_instructions: str | None, input: str | list[TResponseInputItem],
                           model_settings: ModelSettings, tools: list[Tool],
                           output_schema: AgentOutputSchemaBase | None, handoffs: list[Handoff],
                           tracing: ModelTracing, **kwargs: Any) -> ModelResponse:
        acct = _ACCOUNT.get()
        if acct is None:
            return await self.inner.get_response(system_instructions, input, model_settings, tools, output_schema,
                                                 handoffs, tracing, **kwargs)
        left = max(acct.remaining_time(), 0.001)
        settings = model_settings.resolve(ModelSettings(timeout=left))
        started = time.monotonic()
        try:
            return await asyncio.wait_for(self.inner.get_response(system_instructions, input, settings, tools,
                                                                  output_schema, handoffs, tracing, **kwargs), left)
        except BudgetExceeded:
            raise
        except Exception as exc:
            took = time.monotonic() - started
            acct.charge_time(took)
            if isinstance(exc, TimeoutError) or took >= left:
                acct.deadline("the model call was cut off when the time ran out")
            raise

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        return self.inner.stream_response(*args, **kwargs)

    def get_retry_advice(self, request: Any) -> Any:
        return self.inner.get_retry_advice(request)

    async def close(self) -> None:
        await self.inner.close()


class _DeadlineProvider(ModelProvider):
    def __init__(self, inner: ModelProvider):
        self.inner = inner

    def get_model(self, model_name: str | None) -> Model:
        return _DeadlineModel(self.inner.get_model(model_name))

    async def aclose(self) -> None:
        await self.inner.aclose()


class BudgetGuard:
    """A ``Budget`` for OpenAI Agents SDK runs. One guard serves many runs; each run gets its own account."""

    def __init__(self, budget: Budget | None = None, *, prices: Prices | None = None, price_as: str | None = None,
                 tracer_provider: TracerProvider | None = None):
        self.budget = budget or Budget()
        self.prices, self.price_as, self.tracer_provider = prices, price_as, tracer_provider

    def hooks(self, *, model: str | Model | None = None, inner: RunHooks[Any] | None = None) -> BudgetHooks:
        return BudgetHooks(self.budget, prices=self.prices, price_as=self.price_as, model=model, inner=inner)

    def run_sync(self, agent: Agent[Any], input: Any, **kwargs: Any) -> RunResult:
        return asyncio.run(self.run(agent, input, **kwargs))

    async def run(self, agent: Agent[Any], input: Any, **kwargs: Any) -> RunResult:
        """``Runner.run`` under the budget. Raises ``BudgetStop`` when a guard fires, before the call."""
        rc: RunConfig = kwargs.pop("run_config", None) or RunConfig()
        run_model = rc.model
        if isinstance(rc.model, Model) and not isinstance(rc.model, _DeadlineModel):
            rc = dataclasses.replace(rc, model=_DeadlineModel(rc.model))
        elif isinstance(agent.model, Model) and not isinstance(agent.model, _DeadlineModel):
            agent = agent.clone(model=_DeadlineModel(agent.model))
        if not isinstance(rc.model_provider, _DeadlineProvider):
            rc = dataclasses.replace(rc, model_provider=_DeadlineProvider(rc.model_provider))
        cap = self.budget.max_output_tokens
        current = rc.model_settings.max_tokens if rc.model_settings is not None else None
        if current is None or current > cap:
            settings = (rc.model_settings or ModelSettings()).resolve(ModelSettings(max_tokens=cap))
            rc = dataclasses.replace(rc, model_settings=settings)
        hooks = self.hooks(model=run_model, inner=kwargs.pop("hooks", None))
        acct = hooks.account
        acct.require_price(*_model_of(agent, run_model))
        kwargs.setdefault("max_turns", self.budget.max_steps + 1)
        span_cm, span = self._agent_span(agent)
        token = _ACCOUNT.set(acct)
        try:
            with span_cm:
                try:
                    result = await Runner.run(agent, input, hooks=hooks, run_config=rc, **kwargs)
                except BudgetExceeded as exc:
                    _spans.mark(span, acct, StopReason(exc.stop))
                    raise
                except MaxTurnsExceeded:
                    _spans.mark(span, acct, StopReason.MAX_STEPS)
                    raise
                except Exception as exc:
                    _spans.mark_aborted(span, acct, exc)
                    raise
                acct.finish()
                _spans.mark(span, acct, StopReason.DONE)
                return result
        finally:
            _ACCOUNT.reset(token)

    def _agent_span(self, agent: Agent[Any]) -> tuple[AbstractContextManager[Any], Span]:
        """The current agent span (yours), or a new one made current for the run and ended after it."""
        span = _spans.current_agent_span()
        if span is not None:
            return contextlib.nullcontext(), span
        tracer = trace.get_tracer("agentobs.guards", tracer_provider=self.tracer_provider)
        name = agent.name or "agent"
        attrs = {sc.OPERATION_NAME: sc.OP_INVOKE_AGENT, sc.AGENT_NAME: name, sc.PROVIDER_NAME: "openai"}
        model, _ = _model_of(agent)
        if model:
            attrs[sc.REQUEST_MODEL] = model
        span = tracer.start_span(f"{sc.OP_INVOKE_AGENT} {name}", kind=trace.SpanKind.INTERNAL, attributes=attrs)
        return trace.use_span(span, end_on_exit=True, record_exception=False, set_status_on_exception=False), span
