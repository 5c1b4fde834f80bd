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
"""
from __future__ import annotations

import dataclasses
import time
from typing import Any

from .. import Budget, Prices, StopReason
from ..errors import BudgetExceeded
from . import _spans
from ._accountant import Accountant, text_size

try:
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.exceptions import ModelAPIError, UsageLimitExceeded
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise ImportError("the Pydantic AI guard needs pydantic-ai: pip install 'agentobs[pydantic-ai]'") from exc


class BudgetStop(BudgetExceeded, UsageLimitExceeded):
    """The guard stopped the run: ``stop`` (a StopReason), ``limit``, ``observed``. Also Pydantic AI's own
    ``UsageLimitExceeded``, so code that handles the framework's limits handles this one too."""

    def __init__(self, stop: StopReason, limit: float, observed: float, detail: str = ""):
        BudgetExceeded.__init__(self, stop, limit, observed, detail)
        what = f"{stop}: limit {limit:g}, observed {observed:g}"
        self.message = f"{what} ({detail})" if detail else what   # without the framework's "raise the limit" hint
        self.args = (self.message,)

    def __str__(self) -> str:
        return self.message


def _stop(stop: StopReason, limit: float, observed: float, detail: str) -> BudgetExceeded:
    return BudgetStop(stop, limit, observed, detail)


@dataclasses.dataclass
class BudgetGuard(AbstractCapability[Any]):
    """A ``Budget`` enforced before every model request and tool call of a Pydantic AI run."""

    budget: Budget = dataclasses.field(default_factory=Budget)
    prices: Prices | None = None
    price_as: str | None = None
    account: Accountant | None = dataclasses.field(default=None, init=False, repr=False)

    async def for_run(self, ctx: Any) -> BudgetGuard:
        run = dataclasses.replace(self)
        run.account = Accountant(self.budget, fail=_stop, prices=self.prices, price_as=self.price_as)
        model = getattr(ctx, "model", None)
        if model is not None:
            run.account.require_price(getattr(model, "model_name", None), getattr(model, "system", None))
        return run

    # -- the run --------------------------------------------------------------------------------

    async def wrap_run(self, ctx: Any, *, handler: Any) -> Any:
        span = _spans.current_agent_span()
        acct = self._acct()
        try:
            result = await handler()
        except BudgetExceeded as exc:
            _spans.mark(span, acct, exc.stop)
            raise
        except ModelAPIError:
            acct.finish()
            _spans.mark(span, acct, StopReason.MODEL_ERROR)
            raise
        except Exception as exc:
            _spans.mark_aborted(span, acct, exc)
            raise
        acct.finish()
        _spans.mark(span, acct, StopReason.DONE)
        return result

    # -- model requests -------------------------------------------------------------------------

    async def wrap_model_request(self, ctx: Any, *, request_context: Any, handler: Any) -> Any:
        acct = self._acct()
        model = request_context.model
        name, system = getattr(model, "model_name", None), getattr(model, "system", None)
        tin = acct.before_model_request(input_chars=_request_chars(request_context), model=name, provider=system)
        settings = dict(request_context.model_settings or {})
        cap = acct.budget.max_output_tokens
        if not isinstance(settings.get("max_tokens"), int) or settings["max_tokens"] > cap:
            settings["max_tokens"] = cap              # the reserve holds only if the reply is capped
        left = acct.remaining_time()
        if not isinstance(settings.get("request_timeout"), (int, float)) or settings["request_timeout"] > left:
            settings["request_timeout"] = left        # the time left is the request's deadline
        started = time.monotonic()
        try:
            response = await handler(dataclasses.replace(request_context, model_settings=settings))
        except BudgetExceeded:
            raise
        except Exception:
            acct.charge_time(time.monotonic() - started)
            if acct.deadline_passed() or time.monotonic() - started >= left:
                acct.deadline(f"the request to {name} was cut off when the time ran out")
            raise
        usage = getattr(response, "usage", None)
        details = getattr(usage, "details", None) or {}
        reported = usage is not None and (usage.input_tokens or usage.output_tokens)
        acct.model_returned(
            input_tokens=usage.input_tokens if reported else None,
            output_tokens=usage.output_tokens if reported else None,
            seconds=time.monotonic() - started, model=getattr(response, "model_name", None) or name,
            provider=getattr(response, "provider_name", None) or system, estimated_input=tin,
            cache_read_tokens=getattr(usage, "cache_read_tokens", None),
            cache_creation_tokens=getattr(usage, "cache_write_tokens", None),
            reasoning_tokens=details.get("reasoning_tokens") if isinstance(details, dict) else None)
        tools = {t.name for t in getattr(request_context.model_request_parameters, "function_tools", None) or ()}
        acct.project_tool_calls(sum(1 for p in getattr(response, "parts", ()) or ()
                                    if getattr(p, "part_kind", None) == "tool-call" and p.tool_name in tools))
        return response

    # -- tool calls -----------------------------------------------------------------------------

    async def before_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any) -> Any:
        self._acct().before_tool_call(call.tool_name, args)
        return args

    async def wrap_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any) -> Any:
        acct = self._acct()
        started = time.monotonic()
        try:
            result = await handler(args)
        except BudgetExceeded:
            raise
        except Exception as exc:
            acct.tool_returned(call.tool_name, exc, time.monotonic() - started)
            raise
        acct.tool_returned(call.tool_name, result, time.monotonic() - started)
        return result

    def _acct(self) -> Accountant:
        if self.account is None:          # used outside a run's for_run (should not happen): account anyway
            self.account = Accountant(self.budget, fail=_stop, prices=self.prices, price_as=self.price_as)
        return self.account


def _request_chars(rc: Any) -> int:
    """Characters of what a request sends: the messages' contents and arguments, instructions, tool schemas."""
    n = 0
    for msg in rc.messages or ():
        for part in getattr(msg, "parts", ()) or ():
            n += text_size(getattr(part, "content", None)) + text_size(getattr(part, "args", None))
            n += len(getattr(part, "tool_name", "") or "")
    params = rc.model_request_parameters
    for part in getattr(params, "instruction_parts", None) or ():
        n += text_size(getattr(part, "content", None))
    for tool in getattr(params, "function_tools", None) or ():
        n += len(tool.name) + len(tool.description or "") + text_size(tool.parameters_json_schema)
    return n
