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
(the output cap as ``max_tokens``, ``max_turns`` one above ``max_steps`` so the guard's stop comes first, and
``call_model_input_filter``: the budget checked before every model call of every run that shares the config).
``guard.hooks()`` gives the hooks alone for code that calls ``Runner.run`` itself.

**Nested agents count in the run.** A handoff continues the same run: its calls go through the hooks. An agent
used as a tool (``Agent.as_tool``) runs a run of its own with the parent's ``RunConfig`` and usage, but without
the parent's hooks: the input filter checks each of its model calls before it goes out, on the whole run's
spend; its usage is charged from the usage the runs share (when the next check comes, or when the tool returns);
its tool calls are counted, and their repeats checked, from its conversation before its next model call (the SDK
gives the parent no hook before a nested agent's tool runs). A tool that runs an agent itself keeps the run's
budget by passing ``run_config=ctx.run_config`` (and ``context=ctx`` for the usage), or by running it with
``guard.run``: a guard used inside a guarded run charges that run's account. Once the run has a breach, every
later check raises it again: the SDK turns a nested agent's exception into a tool error the model reads, and the
parent's next call is refused.
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
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
from ..contract.reported import count
from ..contract.vocabulary import StopReason
from ..errors import BudgetExceeded
from ..kernel.budget import Budget
from . import _accountant, _spans
from ._accountant import Accountant, Call, est_tokens, text_size

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
        handoff,
    )
    from agents.run_config import CallModelData, ModelInputData
    from agents.tool_context import ToolContext
    from openai.types.responses import ResponseFunctionToolCall
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise ImportError("the OpenAI Agents guard needs openai-agents: pip install 'agentobs[openai-agents]'") from exc

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


def _usage(u: Usage | None) -> TokenUsage | None:
    """A response's usage as the contract's ``TokenUsage``; None when the model reported no tokens (the guard
    then charges its estimate). A part that is missing or no count (of any type) is not reported."""
    tin, tout = count(getattr(u, "input_tokens", None)), count(getattr(u, "output_tokens", None))
    if tin is None or tout is None or not (tin or tout):
        return None
    cached = count(getattr(getattr(u, "input_tokens_details", None), "cached_tokens", None))
    reasoning = count(getattr(getattr(u, "output_tokens_details", None), "reasoning_tokens", None))
    return TokenUsage(input_tokens=tin, output_tokens=tout, source="reported",
                      cache_read_input_tokens=cached or None, reasoning_output_tokens=reasoning or None)


def _totals(u: Any) -> dict[str, Any]:
    """What the SDK counted in a run's usage (shared with the agents it runs as tools)."""
    return {"requests": getattr(u, "requests", None), "input_tokens": getattr(u, "input_tokens", None),
            "output_tokens": getattr(u, "output_tokens", None)}


def _handoff_names(agent: Any) -> set[str]:
    """The tool names an agent's handoffs go by (a handoff call is no tool call)."""
    names = set()
    for h in getattr(agent, "handoffs", None) or ():
        try:
            names.add(h.tool_name if isinstance(h, Handoff) else handoff(h).tool_name)
        except Exception:          # (a handoff the SDK itself could not make: not one to exclude)
            continue
    return names


def _request_chars(agent: Agent[Any], instructions: str | None, input_items: Any) -> int:
    chars = text_size(instructions) + text_size(input_items)
    for tool in getattr(agent, "tools", None) or ():
        chars += len(getattr(tool, "name", "") or "") + len(getattr(tool, "description", "") or "")
        chars += text_size(getattr(tool, "params_json_schema", None))
    return chars


def _tool_call(context: RunContextWrapper[Any], tool: Tool) -> tuple[str, str, Any]:
    """(tool name, call id, arguments) of a call: the runner passes a ``ToolContext`` to the tool hooks."""
    if not isinstance(context, ToolContext):
        return tool.name, tool.name, {}
    return context.tool_name, context.tool_call_id or context.tool_name, _arguments(context.tool_arguments)


class BudgetHooks(RunHooks[Any]):
    """The guard's hooks for one run (make a new one per run: it holds the run's account, or the account of the
    guarded run it is used in)."""

    def __init__(self, budget: Budget, *, prices: Prices | None = None, price_as: str | None = None,
                 model: str | Model | None = None, inner: RunHooks[Any] | None = None,
                 account: Accountant | None = None):
        self.account = account or _accountant.current() or Accountant(budget, fail=BudgetStop, prices=prices,
                                                                      price_as=price_as)
        self.model, self.inner = model, inner
        self._llm: dict[int, Call] = {}          # agent id -> its request in flight

    async def on_llm_start(self, context: RunContextWrapper[Any], agent: Agent[Any], system_prompt: str | None,
                           input_items: list[TResponseInputItem]) -> None:
        acct = self.account
        stale = self._llm.pop(id(agent), None)
        if stale is not None:                    # a request that failed without an answer
            acct.model_failed(stale)
        call = acct.claim(id(agent))             # checked by the input filter just before, under guard.run
        if call is None:                         # the hooks alone: what agents used as tools spent, then the check
            acct.reconcile(context.usage, **_totals(context.usage))
            name, provider = _model_of(agent, self.model)
            call = acct.before_model_request(input_chars=_request_chars(agent, system_prompt, input_items),
                                             model=name, provider=provider, conversation=id(agent))
        self._llm[id(agent)] = call
        if self.inner is not None:
            await self.inner.on_llm_start(context, agent, system_prompt, input_items)

    async def on_llm_end(self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse) -> None:
        acct = self.account
        call = self._llm.pop(id(agent), None)
        name = call.model if call is not None else _model_of(agent, self.model)[0]
        acct.model_returned(call, _usage(response.usage), model=name, provider="openai",
                            estimated_output=est_tokens(text_size([_dumped(item) for item in response.output])))
        acct.own(context.usage, input_tokens=getattr(response.usage, "input_tokens", 0),
                 output_tokens=getattr(response.usage, "output_tokens", 0))
        calls = sum(1 for item in response.output if isinstance(item, ResponseFunctionToolCall))
        acct.project_tool_calls(calls)
        if self.inner is not None:
            await self.inner.on_llm_end(context, agent, response)

    async def on_tool_start(self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool) -> None:
        name, call_id, args = _tool_call(context, tool)
        self.account.before_tool_call(name, args, key=call_id)
        self.account.known_calls.add(call_id)
        if self.inner is not None:
            await self.inner.on_tool_start(context, agent, tool)

    async def on_tool_end(self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool, result: object
                          ) -> None:
        acct = self.account
        name, call_id, _ = _tool_call(context, tool)
        acct.reconcile(context.usage, **_totals(context.usage))      # an agent used as a tool: what it spent
        acct.tool_returned(name, result, key=call_id)
        acct.known_results.add(call_id)
        if self.inner is not None:
            await self.inner.on_tool_end(context, agent, tool, result)

    async def on_agent_start(self, context: AgentHookContext[Any], agent: Agent[Any]) -> None:
        self.account.reconcile(context.usage, **_totals(context.usage))     # (the run's usage, known from now)
        self.account.not_tools |= _handoff_names(agent)
        if self.inner is not None:
            await self.inner.on_agent_start(context, agent)

    async def on_agent_end(self, context: AgentHookContext[Any], agent: Agent[Any], output: Any) -> None:
        if self.inner is not None:
            await self.inner.on_agent_end(context, agent, output)

    async def on_handoff(self, context: RunContextWrapper[Any], from_agent: Agent[Any], to_agent: Agent[Any]) -> None:
        self.account.not_tools |= _handoff_names(from_agent)
        if self.inner is not None:
            await self.inner.on_handoff(context, from_agent, to_agent)


class _InputFilter:
    """``RunConfig.call_model_input_filter``: the budget checked before every model call of every run sharing the
    config, the nested runs of agents used as tools included (the SDK passes them the parent's config, not its
    hooks). Before the check it takes in what the guard did not see: the usage the runs share, and the tool calls
    and results of the conversation (a nested agent's). The user's own filter runs first."""

    def __init__(self, hooks: BudgetHooks, model: str | Model | None, inner: Any):
        self.hooks, self.model, self.inner = hooks, model, inner

    async def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        got = data.model_data
        if self.inner is not None:
            got = self.inner(data)
            if inspect.isawaitable(got):
                got = await got
            if not isinstance(got, ModelInputData):      # (the SDK says what is wrong with the user's filter)
                return got
        acct = self.hooks.account
        acct.reconcile_known(_totals)
        acct.not_tools |= _handoff_names(data.agent)
        _take_in(acct, got.input)
        name, provider = _model_of(data.agent, self.model)
        acct.before_model_request(input_chars=_request_chars(data.agent, got.instructions, got.input), model=name,
                                  provider=provider, conversation=id(data.agent), watched=False)
        return got


def _take_in(acct: Accountant, items: Any) -> None:
    """The tool calls and results of a conversation that the guard did not see run: counted (repeats checked),
    and taken as progress."""
    if not isinstance(items, list):
        return
    names: dict[str, str] = {}
    for item in items:
        kind, call_id = _item(item, "type"), _item(item, "call_id")
        if not isinstance(call_id, str):
            continue
        if kind == "function_call":
            name = _item(item, "name")
            name = name if isinstance(name, str) else "tool"
            names[call_id] = name
            if call_id in acct.known_calls or name in acct.not_tools:
                continue
            acct.known_calls.add(call_id)
            acct.tool_seen(name, _arguments(_item(item, "arguments")))
        elif kind == "function_call_output" and call_id not in acct.known_results:
            acct.known_results.add(call_id)
            if names.get(call_id, "") not in acct.not_tools:
                acct.result_seen(names.get(call_id, "tool"), _item(item, "output"))


def _item(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, dict) else getattr(item, key, None)


def _arguments(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw) if raw.strip() else {}
    except (ValueError, RecursionError):
        return raw                  # digested as text: a repeat of the same malformed call is still a repeat


class _DeadlineModel(Model):
    """Sends the run's time left as each call's timeout and cuts the call off there (the deadline stop)."""

    def __init__(self, inner: Model):
        self.inner = inner

    async def get_response(self, system_instructions: str | None, input: str | list[TResponseInputItem],
                           model_settings: ModelSettings, tools: list[Tool],
                           output_schema: AgentOutputSchemaBase | None, handoffs: list[Handoff],
                           tracing: ModelTracing, **kwargs: Any) -> ModelResponse:
        acct = _accountant.current()
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
            if isinstance(exc, TimeoutError) or time.monotonic() - started >= left:
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
        """Hooks for one ``Runner.run`` (inside a guarded run: charging that run's account)."""
        return BudgetHooks(self.budget, prices=self.prices, price_as=self.price_as, model=model, inner=inner)

    def run_sync(self, agent: Agent[Any], input: Any, **kwargs: Any) -> RunResult:
        return asyncio.run(self.run(agent, input, **kwargs))

    async def run(self, agent: Agent[Any], input: Any, **kwargs: Any) -> RunResult:
        """``Runner.run`` under the budget. Raises ``BudgetStop`` when a guard fires, before the call. Inside a
        guarded run (a tool that runs an agent), the run is charged to, and checked against, the enclosing one."""
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
        enclosing = _accountant.current()
        hooks = self.hooks(model=run_model, inner=kwargs.pop("hooks", None))
        if not isinstance(rc.call_model_input_filter, _InputFilter):
            rc = dataclasses.replace(rc, call_model_input_filter=_InputFilter(hooks, run_model,
                                                                              rc.call_model_input_filter))
        acct = hooks.account
        acct.require_price(*_model_of(agent, run_model))
        kwargs.setdefault("max_turns", self.budget.max_steps + 1)
        if enclosing is not None:                 # a nested run: the enclosing one marks its span and ends it
            return await Runner.run(agent, input, hooks=hooks, run_config=rc, **kwargs)
        span_cm, span = self._agent_span(agent)
        with _accountant.running(acct), span_cm:
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
            acct.reconcile_known(_totals)
            acct.finish()
            _spans.mark(span, acct, StopReason.DONE)
            return result

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
