"""The kernel's budget for a Pydantic AI agent, as a capability (``pip install agentobs[pydantic-ai]``)::

    from agentobs import Budget
    from agentobs.guards.pydantic_ai import BudgetGuard, BudgetStop

    agent = Agent(model, capabilities=[BudgetGuard(Budget(max_steps=8, max_tokens=20_000, max_usd=0.05))])
    try:
        result = agent.run_sync("...")
    except BudgetStop as stop:            # also a pydantic_ai UsageLimitExceeded
        print(stop.stop, stop.limit, stop.observed)

It uses Pydantic AI's public capability hooks only: ``for_run`` (a fresh account per run; a dollar budget
for a model without a price is refused there, before any request), ``wrap_model_request`` (the budget
checked before each request, the output cap sent as ``max_tokens``, the time left as ``request_timeout``,
the reply's usage charged), ``before_tool_execute`` and ``wrap_tool_execute`` (repeats, tool-call limit and
deadline before each call; the result feeds the progress guard) and ``wrap_run`` (the stop reason and
totals written on the ``invoke_agent`` span of Pydantic AI's instrumentation, when it is on).

**Delegation counts in the run.** A tool that runs another agent (``await sub_agent.run(..., usage=ctx.usage)``,
Pydantic AI's documented delegation) runs it with that agent's own capabilities only. Give the delegate the
guard too (the same ``BudgetGuard`` object serves both): a guard whose run starts inside a guarded run charges
and checks that run's account, so every request of the delegate is checked before it goes out, on the whole run's
spend, and the run stops with the breach's stop reason. A delegate without the guard cannot be checked before its
requests: what it spent (its requests, tokens and tool calls, in the ``ctx.usage`` it shares) is charged when its
tool returns, the parent run stops before its next request when the budget is passed, and a warning names the
unguarded spend.
"""
from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

from ..contract.events import Breach, TokenUsage
from ..contract.pricing import Prices
from ..contract.reported import count
from ..contract.vocabulary import StopReason
from ..errors import BudgetExceeded
from ..kernel.budget import Budget
from . import _accountant, _spans
from ._accountant import Accountant, est_tokens, text_size

log = logging.getLogger("agentobs.guards")

try:
    from pydantic_ai import RunContext
    from pydantic_ai.capabilities import (
        AbstractCapability,
        ValidatedToolArgs,
        WrapModelRequestHandler,
        WrapRunHandler,
        WrapToolExecuteHandler,
    )
    from pydantic_ai.exceptions import ModelAPIError, UsageLimitExceeded
    from pydantic_ai.messages import ModelResponse, ToolCallPart
    from pydantic_ai.models import ModelRequestContext
    from pydantic_ai.run import AgentRunResult
    from pydantic_ai.settings import ModelSettings
    from pydantic_ai.tools import ToolDefinition
    from pydantic_ai.usage import RequestUsage
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise ImportError("the Pydantic AI guard needs pydantic-ai: pip install 'agentobs[pydantic-ai]'") from exc


class BudgetStop(BudgetExceeded, UsageLimitExceeded):
    """The guard stopped the run: ``breach`` (the limit, its value, what was observed, the stop reason), also as
    ``stop``, ``limit`` and ``observed``. Also Pydantic AI's own ``UsageLimitExceeded``, so code that handles the
    framework's limits handles this one too."""

    def __init__(self, breach: Breach, detail: str = ""):
        BudgetExceeded.__init__(self, breach.stop, breach.limit_value, breach.observed, detail)
        self.breach = breach
        what = f"{breach.stop}: limit {breach.limit_value:g}, observed {breach.observed:g}"
        self.message = f"{what} ({detail})" if detail else what   # without the framework's "raise the limit" hint
        self.args = (self.message,)

    def __str__(self) -> str:
        return self.message


@dataclasses.dataclass
class BudgetGuard(AbstractCapability[Any]):
    """A ``Budget`` enforced before every model request and tool call of a Pydantic AI run, and of the runs it
    delegates to that carry a guard too."""

    budget: Budget = dataclasses.field(default_factory=Budget)
    _: dataclasses.KW_ONLY                  # prices and price_as by name only, as the OpenAI Agents guard takes them
    prices: Prices | None = None
    price_as: str | None = None
    account: Accountant | None = dataclasses.field(default=None, init=False, repr=False)
    owner: bool = dataclasses.field(default=True, init=False, repr=False)   # the run's own account, not a parent's

    async def for_run(self, ctx: RunContext[Any]) -> BudgetGuard:
        run = dataclasses.replace(self)
        enclosing = _accountant.current()
        run.account, run.owner = (enclosing, False) if enclosing is not None else (self._new_account(), True)
        run.account.require_price(ctx.model.model_name, ctx.model.system)
        return run

    # -- the run --------------------------------------------------------------------------------

    async def wrap_run(self, ctx: RunContext[Any], *, handler: WrapRunHandler) -> AgentRunResult[Any]:
        acct = self._acct()
        if not self.owner:                # a delegate's run: the enclosing run ends and marks itself
            return await handler()
        span = _spans.current_agent_span()
        with _accountant.running(acct):
            try:
                result = await handler()
            except BudgetExceeded as exc:
                _spans.mark(span, acct, StopReason(exc.stop))
                raise
            except ModelAPIError:
                acct.finish()
                _spans.mark(span, acct, StopReason.MODEL_ERROR)
                raise
            except Exception as exc:
                _spans.mark_aborted(span, acct, exc)
                raise
        _reconcile(acct, ctx.usage)
        acct.finish()
        _spans.mark(span, acct, StopReason.DONE)
        return result

    # -- model requests -------------------------------------------------------------------------

    async def wrap_model_request(self, ctx: RunContext[Any], *, request_context: ModelRequestContext,
                                 handler: WrapModelRequestHandler) -> ModelResponse:
        acct = self._acct()
        _reconcile(acct, ctx.usage)
        name, system = request_context.model.model_name, request_context.model.system
        call = acct.before_model_request(input_chars=_request_chars(request_context), model=name, provider=system,
                                         conversation=getattr(ctx, "run_id", None) or id(ctx.usage))
        settings: ModelSettings = {**(request_context.model_settings or {})}
        cap = acct.budget.max_output_tokens
        if not _below(settings.get("max_tokens"), cap):
            settings["max_tokens"] = cap              # the reserve holds only if the reply is capped
        left = acct.remaining_time()
        if not _below(settings.get("request_timeout"), left):
            settings["request_timeout"] = left        # the time left is the request's deadline
        try:
            response = await handler(dataclasses.replace(request_context, model_settings=settings))
        except BudgetExceeded:
            raise
        except Exception:
            acct.model_failed(call)
            if acct.deadline_passed():
                acct.deadline(f"the request to {name} was cut off when the time ran out")
            raise
        acct.model_returned(call, _usage(response.usage), model=response.model_name or name,
                            provider=response.provider_name or system, asked_model=name,
                            estimated_output=est_tokens(sum(text_size(getattr(p, "content", None))
                                                            + text_size(getattr(p, "args", None))
                                                            for p in response.parts)))
        acct.own(ctx.usage, input_tokens=getattr(response.usage, "input_tokens", 0),
                 output_tokens=getattr(response.usage, "output_tokens", 0))
        tools = {t.name for t in request_context.model_request_parameters.function_tools}
        acct.project_tool_calls(sum(1 for p in response.parts if isinstance(p, ToolCallPart) and p.tool_name in tools))
        return response

    # -- tool calls -----------------------------------------------------------------------------

    async def before_tool_execute(self, ctx: RunContext[Any], *, call: ToolCallPart, tool_def: ToolDefinition,
                                  args: ValidatedToolArgs) -> ValidatedToolArgs:
        self._acct().before_tool_call(call.tool_name, args, key=(id(self.account), call.tool_call_id))
        return args

    async def wrap_tool_execute(self, ctx: RunContext[Any], *, call: ToolCallPart, tool_def: ToolDefinition,
                                args: ValidatedToolArgs, handler: WrapToolExecuteHandler) -> Any:
        acct = self._acct()
        key = (id(self.account), call.tool_call_id)
        try:
            result = await handler(args)
        except BudgetExceeded:
            raise
        except Exception as exc:
            _reconcile(acct, ctx.usage)
            acct.tool_returned(call.tool_name, exc, key=key)
            raise
        acct.own(ctx.usage, requests=0, tool_calls=1)       # (Pydantic AI counts the calls that succeed)
        _reconcile(acct, ctx.usage)                        # a delegate without the guard: what it spent
        acct.tool_returned(call.tool_name, result, key=key)
        return result

    def _acct(self) -> Accountant:
        if self.account is None:          # used outside a run's for_run (should not happen): account anyway
            self.account = self._new_account()
        return self.account

    def _new_account(self) -> Accountant:
        return Accountant(self.budget, fail=BudgetStop, prices=self.prices, price_as=self.price_as)


def _reconcile(acct: Accountant, usage: Any) -> None:
    """Charges what Pydantic AI counted in the run's usage that no guard saw (a delegate run without the guard,
    sharing ``ctx.usage``), and says so once per run."""
    before = acct.unchecked_requests
    acct.reconcile(usage, requests=getattr(usage, "requests", None), input_tokens=getattr(usage, "input_tokens", None),
                   output_tokens=getattr(usage, "output_tokens", None), tool_calls=getattr(usage, "tool_calls", None))
    if before == 0 and acct.unchecked_requests > 0:
        log.warning("%d model request(s) of this run were made by an agent without the budget guard (a delegate "
                    "run from a tool?): they were charged afterwards; give that agent the guard too, so each of its "
                    "requests is checked before it is sent", acct.unchecked_requests)


def _below(value: Any, cap: float) -> bool:
    """Whether an agent's own setting is a number within ``cap`` (None or anything else: the guard's applies)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value <= cap


def _usage(u: RequestUsage | None) -> TokenUsage | None:
    """A response's usage as the contract's ``TokenUsage``; None when the model reported no tokens (the guard
    then charges its estimate). A part that is missing or no count (of any type, under any key) is not reported."""
    tin, tout = count(getattr(u, "input_tokens", None)), count(getattr(u, "output_tokens", None))
    if tin is None or tout is None or not (tin or tout):
        return None
    details = getattr(u, "details", None)
    reasoning = count(details.get("reasoning_tokens")) if isinstance(details, Mapping) else None
    return TokenUsage(input_tokens=tin, output_tokens=tout, source="reported",
                      cache_read_input_tokens=count(getattr(u, "cache_read_tokens", None)) or None,
                      cache_creation_input_tokens=count(getattr(u, "cache_write_tokens", None)) or None,
                      reasoning_output_tokens=reasoning or None)


def _request_chars(rc: ModelRequestContext) -> int:
    """Characters of what a request sends: the messages' contents and arguments, instructions, tool schemas."""
    n = 0
    for msg in rc.messages:
        for part in msg.parts:
            n += text_size(getattr(part, "content", None)) + text_size(getattr(part, "args", None))
            n += len(getattr(part, "tool_name", "") or "")
    params = rc.model_request_parameters
    for instruction in params.instruction_parts or ():
        n += text_size(instruction.content)
    for tool in params.function_tools:
        n += len(tool.name) + len(tool.description or "") + text_size(tool.parameters_json_schema)
    return n
