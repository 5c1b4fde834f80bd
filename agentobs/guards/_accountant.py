"""One run's spend and guards, for an agent loop that is not ours: the kernel's ``Budget``, checked before
each model request and each tool call, with the kernel's semantics and the kernel's checks.

- steps = model requests; ``max_steps``, ``max_tool_calls`` and the active-time deadline are checked before
  each request, the tool-call limit and the deadline again before each tool call;
- tokens with the output reserve: the next request may not need more than ``max_tokens`` with its input
  (estimated, never below the previous request's input plus output: history only grows) and a full reply
  (the output cap, which the guard also sends as the request's ``max_tokens``);
- dollars: the next request is priced ahead (its input and ``reserve_tokens`` of output) and may not take
  the run past ``max_usd``; a dollar budget with a model that cannot be priced is refused up front;
- repeated call: the same (tool, arguments) digest proposed more than ``max_repeat`` times, over the run or
  since the last progress (``repeat_window``), stops the run before that call;
- no progress: frameworks have no task state, so a step progressed when one of its tool calls returned a
  result not seen before in the run (the digest of tool name and result) that is not an error (an exception,
  or a result with ``status: error`` in the kernel's vocabulary); ``max_stalls`` steps in a row without one
  stop the run before the next request.

Every check returns the contract's ``Breach`` (the budget's own checks where there is one); a breach raises
the framework's subclass of ``BudgetExceeded`` made by ``fail``, and ``breach`` keeps the first one.
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from ..contract.digest import digest
from ..contract.events import Breach, TokenUsage
from ..contract.pricing import Prices
from ..contract.reported import count
from ..contract.vocabulary import StopReason, ToolStatus
from ..errors import BudgetExceeded, ConfigError
from ..kernel.budget import Budget

Fail = Callable[[Breach, str], BudgetExceeded]     # the breach and what was checked -> the exception to raise


def est_tokens(chars: int) -> int:
    """The kernel's rough 4-characters-per-token estimate."""
    return (chars + 3) // 4


def text_size(obj: Any) -> int:
    """Characters of a request's content (strings as they are, anything else as compact JSON)."""
    if obj is None:
        return 0
    if isinstance(obj, str):
        return len(obj)
    try:
        return len(json.dumps(obj, default=str, separators=(",", ":")))
    except (TypeError, ValueError, RecursionError):
        return len(str(obj))


def is_error_result(result: Any) -> bool:
    return isinstance(result, BaseException) or (isinstance(result, Mapping)
                                                 and result.get("status") == ToolStatus.ERROR)


def fingerprint(name: str, value: Any) -> str:
    """The contract's digest of a call or a result; a value JSON cannot sort or hold (mixed key types, cycles)
    is digested by its text."""
    try:
        return digest(name, value)
    except Exception:              # (a value whose text raises too is digested by its type)
        try:
            return digest(name, repr(value))
        except Exception:
            return digest(name, type(value).__name__)


class Accountant:
    """Counters and checks of one guarded run. Not thread-safe: a framework calls it from its event loop."""

    def __init__(self, budget: Budget, *, fail: Fail, prices: Prices | None = None, price_as: str | None = None):
        if not isinstance(budget, Budget):
            raise ConfigError(f"a guard needs an agentobs Budget, got {type(budget).__name__}")
        self.budget, self.fail = budget, fail
        self.prices = prices if prices is not None else Prices()
        self.price_as = price_as
        self.steps = self.tool_calls = self.input_tokens = self.output_tokens = 0
        self.cache_read_tokens = self.cache_creation_tokens = self.reasoning_tokens = 0
        self.cost_usd, self.unpriced_calls, self.elapsed = 0.0, 0, 0.0
        self.seen: dict[str, int] = {}
        self.observations: set[str] = set()
        self.stalls = self.max_stalls_seen = 0
        self._progressed = False
        self._step_open = False
        self._last_io = 0                     # input + output tokens of the previous request
        self.breach: Breach | None = None     # the first limit the run reached
        self.models: set[str] = set()

    # -- configuration checks ------------------------------------------------------------------

    def price_key(self, model: str | None, provider: str | None) -> tuple[str, str | None]:
        if self.price_as:
            return self.price_as, None
        return model or "unknown", provider

    def require_price(self, model: str | None, provider: str | None) -> None:
        """A dollar budget needs a price for the model: refused before any call otherwise."""
        if self.budget.max_usd is None:
            return
        name, prov = self.price_key(model, provider)
        if not self.prices.can_price(name, prov):
            raise ConfigError(f"max_usd is set but model {name!r} has no price: pass "
                              "prices=Prices({'<model>': (input_usd_per_mtok, output_usd_per_mtok)}) or price_as=")

    # -- model requests ------------------------------------------------------------------------

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def remaining_time(self) -> float:
        return self.budget.remaining_time(self.elapsed)

    def next_input_tokens(self, chars: int) -> int:
        return max(est_tokens(chars), self._last_io)

    def before_model_request(self, *, input_chars: int, model: str | None, provider: str | None) -> int:
        """Closes the previous step, then checks the budget for the next request. Returns its input estimate."""
        b = self.budget
        if self._step_open:
            self._close_step()
            self._check(b.check_stalls(self.stalls), "steps in a row without progress")
        tin = self.next_input_tokens(input_chars)
        projected = None
        if b.max_usd is not None:
            name, prov = self.price_key(model, provider)
            projected = self.prices.cost(name, prov, tin, b.reserve_tokens)
            if projected is None:
                self._fail(Breach(limit="max_usd", limit_value=b.max_usd, observed=self.cost_usd,
                                  stop=StopReason.MAX_USD), f"model {name!r} cannot be priced")
        self._check(b.check_before_model_call(step=self.steps, tool_calls=self.tool_calls, elapsed=self.elapsed,
                                              tokens=self.tokens, next_input_tokens=tin, cost_usd=self.cost_usd,
                                              projected_usd=projected), "checked before the model request")
        self.steps += 1
        self._step_open, self._progressed = True, False
        return tin

    def model_returned(self, usage: TokenUsage | None, *, seconds: float, model: str | None, provider: str | None,
                       estimated_input: int = 0, estimated_output: int = 0, asked_model: str | None = None) -> None:
        """Charges one answered request: the reported usage, its price, its time. A count that is none, negative
        or past 2^53 is replaced by the estimate, as when nothing is reported, and so is 0 input tokens. The price
        is the answering model's, else the asked model's (a reply naming a model no price table knows would price
        nothing)."""
        if usage is not None and (count(usage.input_tokens) is None or count(usage.output_tokens) is None):
            usage = None
        tin = usage.input_tokens if usage is not None else estimated_input
        if tin == 0:                  # no request that sent text read nothing: a provider's 0 is no count
            tin = estimated_input
        tout = usage.output_tokens if usage is not None else estimated_output
        self.input_tokens += tin
        self.output_tokens += tout
        if usage is not None:
            self.cache_read_tokens += usage.cache_read_input_tokens or 0
            self.cache_creation_tokens += usage.cache_creation_input_tokens or 0
            self.reasoning_tokens += usage.reasoning_output_tokens or 0
        self._last_io = tin + tout
        self.charge_time(seconds)
        if model:
            self.models.add(model)
        name, prov = self.price_key(model, provider)
        cost = self.prices.cost(name, prov, tin, tout)
        if cost is None and asked_model and asked_model != model:
            name, prov = self.price_key(asked_model, provider)
            cost = self.prices.cost(name, prov, tin, tout)
        if cost is None:
            self.unpriced_calls += 1
        else:
            self.cost_usd = round(self.cost_usd + cost, 9)

    def charge_time(self, seconds: float) -> None:
        if isinstance(seconds, (int, float)) and math.isfinite(seconds) and seconds > 0:
            self.elapsed = round(self.elapsed + seconds, 6)

    def deadline_passed(self) -> bool:
        return self.elapsed >= self.budget.deadline_s

    def deadline(self, what: str) -> NoReturn:
        """A call was cut off by the time left: the run ends at the deadline."""
        b = self.budget
        self.elapsed = max(self.elapsed, b.deadline_s)
        self._fail(Breach(limit="deadline_s", limit_value=b.deadline_s, observed=self.elapsed,
                          stop=StopReason.DEADLINE), what)

    # -- tool calls ----------------------------------------------------------------------------

    def before_tool_call(self, name: str, args: Any) -> str:
        """Counts the proposal, then checks repeats, the tool-call limit and the deadline. Returns the digest."""
        b = self.budget
        fp = fingerprint(name, args)
        self.seen[fp] = self.seen.get(fp, 0) + 1
        self._check(b.check_repeat(self.seen[fp]), f"{name} with the same arguments")
        self._check(b.check_before_tool_call(tool_calls=self.tool_calls, elapsed=self.elapsed),
                    f"checked before the {name} call")
        self.tool_calls += 1
        return fp

    def project_tool_calls(self, n: int) -> None:
        """A reply asks for ``n`` tool calls, which a framework may run concurrently: stop before any of them runs
        when together they would pass the limit (the framework would otherwise cancel calls already running)."""
        b = self.budget
        if n > 1 and self.tool_calls + n > b.max_tool_calls:
            self._fail(Breach(limit="max_tool_calls", limit_value=b.max_tool_calls, observed=self.tool_calls + n,
                              stop=StopReason.MAX_TOOL_CALLS), f"the reply asks for {n} tool calls")

    def tool_returned(self, name: str, result: Any, seconds: float) -> None:
        self.charge_time(seconds)
        if is_error_result(result):
            return
        ofp = fingerprint(name, result)
        if ofp not in self.observations:
            self.observations.add(ofp)
            self._progressed = True

    # -- the end -------------------------------------------------------------------------------

    def finish(self) -> None:
        """The run ended on its own: the last step is closed (no stall check: nothing comes after it)."""
        if self._step_open:
            self._close_step()

    def _close_step(self) -> None:
        if self._progressed:
            self.stalls = 0
            if self.budget.repeat_window == "since_progress":
                self.seen.clear()
        else:
            self.stalls += 1
            self.max_stalls_seen = max(self.max_stalls_seen, self.stalls)
        self._step_open = False

    def _check(self, breach: Breach | None, detail: str) -> None:
        if breach is not None:
            self._fail(breach, detail)

    def _fail(self, breach: Breach, detail: str) -> NoReturn:
        if self.breach is None:
            self.breach = breach
        raise self.fail(breach, detail)

    def summary(self) -> dict[str, Any]:
        return {"steps": self.steps, "tool_calls": self.tool_calls, "tokens": self.tokens,
                "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "cache_read_tokens": self.cache_read_tokens, "cache_creation_tokens": self.cache_creation_tokens,
                "reasoning_tokens": self.reasoning_tokens, "cost_usd": self.cost_usd,
                "unpriced_calls": self.unpriced_calls, "elapsed_s": self.elapsed, "max_stalls": self.max_stalls_seen,
                "stop_reason": self.breach.stop.value if self.breach else None}
