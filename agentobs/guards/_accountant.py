"""One run's spend and guards, for an agent loop that is not ours: the kernel's ``Budget``, checked before
each model request and each tool call, with the kernel's semantics and the kernel's checks.

- steps = model requests; ``max_steps``, ``max_tool_calls`` and the active-time deadline are checked before
  each request, the tool-call limit and the deadline again before each tool call;
- tokens with the output reserve: the next request may not need more than ``max_tokens`` with its input
  (estimated, never below the previous request's input plus output in the same conversation: history only
  grows) and a full reply (the output cap, which the guard also sends as the request's ``max_tokens``);
- dollars: the next request is priced ahead (its input and ``reserve_tokens`` of output) and may not take
  the run past ``max_usd``; a dollar budget with a model that cannot be priced is refused up front;
- repeated call: the same (tool, arguments) digest proposed more than ``max_repeat`` times, over the run or
  since the last progress (``repeat_window``), stops the run before that call;
- no progress: frameworks have no task state, so a step progressed when one of its tool calls returned a
  result not seen before in the run (the digest of tool name and result) that is not an error (an exception,
  or a result with ``status: error`` in the kernel's vocabulary); ``max_stalls`` steps in a row without one
  stop the run before the next request.

**The whole run, nested agents included.** The analysis counts a sub-agent's, a handed-off agent's and an agent
used as a tool's calls in the run that contains them, and computes its caps on those totals; the guard enforces
them on the same totals. One account serves the run: ``current()`` is the account of the guarded run the code is
in (a context variable, inherited by the tasks a run starts), and a guard that starts inside a guarded run charges
that account instead of opening its own. A request checked but not yet answered holds its projection (its input
and a full reply, priced ahead) in the spend every other check sees, so agents running side by side cannot
together pass a limit. Where a framework runs a nested agent out of the guard's sight, ``reconcile`` charges what
the framework itself counted (its usage object, shared with the nested run) that the guard did not see: requests
as steps, their reported tokens (or a full reply each when they reported none), tool calls. Time is the run's:
a model or tool call inside a tool call of the run (a sub-agent's) is covered by that tool call's time.

Every check returns the contract's ``Breach`` (the budget's own checks where there is one); a breach raises
the framework's subclass of ``BudgetExceeded`` made by ``fail``, and ``breach`` keeps the first one. Once the run
has a breach, every later check raises it again: a framework that turns a nested agent's stop into a tool error
the model reads (the OpenAI Agents SDK does) cannot spend past it.

Usage reports are taken only when they are counts (``agentobs.contract.reported``): a part that is missing,
non-numeric, negative or past 2^53 is unreported, and the whole report is estimated when its input or output is.
"""
from __future__ import annotations

import contextlib
import contextvars
import json
import time
from collections.abc import Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

from ..contract.digest import digest
from ..contract.events import Breach, TokenUsage
from ..contract.pricing import Prices
from ..contract.reported import count, non_negative
from ..contract.vocabulary import StopReason, ToolStatus
from ..errors import BudgetExceeded, ConfigError
from ..kernel.budget import Budget

Fail = Callable[[Breach, str], BudgetExceeded]     # the breach and what was checked -> the exception to raise

_CURRENT: contextvars.ContextVar[Accountant | None] = contextvars.ContextVar("agentobs_guard_account",
                                                                             default=None)


def current() -> Accountant | None:
    """The account of the guarded run this code runs in (None: outside any)."""
    return _CURRENT.get()


@contextlib.contextmanager
def running(acct: Accountant) -> Iterator[None]:
    """Makes ``acct`` the current account for the block (and the tasks started in it)."""
    token = _CURRENT.set(acct)
    try:
        yield
    finally:
        _CURRENT.reset(token)


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
        try:
            return len(str(obj))
        except Exception:          # (a value whose text raises: sized as nothing rather than end the run)
            return 0


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


@dataclass(eq=False, kw_only=True, slots=True)
class Call:
    """A model request checked and not yet charged: its projection is held in the run's spend until then."""
    tin: int                          # the input estimate
    reserved_tokens: int              # input estimate + a full reply
    reserved_usd: float
    model: str | None
    provider: str | None
    conversation: Hashable
    watched: bool                     # the guard will see it answered (a hook or a wrapper around it)
    started: float
    outer: bool                       # no tool call of the run was running when it started


@dataclass(kw_only=True, slots=True)
class _Seen:
    """What the guard charged that a framework adds to one of its usage objects."""
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    tool_calls: int = 0


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
        self.unchecked_requests = 0           # requests learnt of afterwards, never checked (``reconcile``)
        self.seen: dict[str, int] = {}
        self.observations: set[str] = set()
        self.stalls = self.max_stalls_seen = 0
        self._progressed = False
        self._step_open = False
        self._last_io: dict[Hashable, int] = {}    # per conversation: input + output tokens of its last request
        self._open: list[Call] = []                # requests checked, not yet charged
        self._tools: dict[Hashable, tuple[float, bool]] = {}   # tool calls running: key -> (start, outermost)
        self._sources: dict[int, tuple[object, _Seen]] = {}   # a framework's usage objects, by id
        self._last_price: tuple[str | None, str | None] = (None, None)
        self.known_calls: set[str] = set()       # a framework's ids of the tool calls counted so far
        self.known_results: set[str] = set()     # ... and of those whose results were taken
        self.not_tools: set[str] = set()         # names of calls that are no tool calls (handoffs)
        self.breach: Breach | None = None     # the first limit the run reached
        self._detail = ""                     # ... and what was checked then
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

    # -- the run's spend -----------------------------------------------------------------------

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def _held(self) -> tuple[int, float]:
        """Tokens and dollars held by requests checked and not yet charged."""
        return sum(c.reserved_tokens for c in self._open), sum(c.reserved_usd for c in self._open)

    def elapsed_now(self) -> float:
        """Active time so far, with the time of the tool calls still running (a sub-agent's calls run inside one)."""
        outer = [start for start, outermost in self._tools.values() if outermost]
        outer += [c.started for c in self._open if c.outer]
        if not outer:
            return self.elapsed
        return self.elapsed + max(0.0, time.monotonic() - min(outer))

    def remaining_time(self) -> float:
        return self.budget.remaining_time(self.elapsed_now())

    def next_input_tokens(self, chars: int, conversation: Hashable = None) -> int:
        return max(est_tokens(chars), self._last_io.get(conversation, 0))

    # -- model requests ------------------------------------------------------------------------

    def before_model_request(self, *, input_chars: int, model: str | None, provider: str | None,
                             conversation: Hashable = None, watched: bool = True) -> Call:
        """Closes the previous step, then checks the budget for the next request, with what every request still
        unanswered holds. Returns the open request, to charge with ``model_returned`` (or ``reconcile``)."""
        self._stopped()
        b = self.budget
        if self._step_open:
            self._close_step()
            self._check(b.check_stalls(self.stalls), "steps in a row without progress")
        tin = self.next_input_tokens(input_chars, conversation)
        held_tokens, held_usd = self._held()
        projected = None
        if b.max_usd is not None:
            name, prov = self.price_key(model, provider)
            projected = self.prices.cost(name, prov, tin, b.reserve_tokens)
            if projected is None:
                self._fail(Breach(limit="max_usd", limit_value=b.max_usd, observed=self.cost_usd,
                                  stop=StopReason.MAX_USD), f"model {name!r} cannot be priced")
        elapsed = self.elapsed_now()
        self._check(b.check_before_model_call(step=self.steps, tool_calls=self.tool_calls, elapsed=elapsed,
                                              tokens=self.tokens + held_tokens, next_input_tokens=tin,
                                              cost_usd=round(self.cost_usd + held_usd, 9), projected_usd=projected),
                    "checked before the model request")
        self.steps += 1
        self._step_open, self._progressed = True, False
        call = Call(tin=tin, reserved_tokens=tin + b.max_output_tokens, reserved_usd=projected or 0.0, model=model,
                    provider=provider, conversation=conversation, watched=watched, started=time.monotonic(),
                    outer=not self._tools and not any(c.outer for c in self._open))
        self._open.append(call)
        return call

    def model_returned(self, call: Call | None, usage: TokenUsage | None, *, model: str | None,
                       provider: str | None, seconds: float | None = None, estimated_output: int = 0,
                       asked_model: str | None = None) -> None:
        """Charges one answered request: the reported usage, its price, its time (``seconds``, else since it was
        checked). A count that is none, negative or past 2^53 is replaced by the estimate, as when nothing is
        reported, and so is 0 input tokens. The price is the answering model's, else the asked model's (a reply
        naming a model no price table knows would price nothing)."""
        call = self._close(call)
        tin_r, tout_r = (count(usage.input_tokens), count(usage.output_tokens)) if usage is not None else (None, None)
        reported = tin_r is not None and tout_r is not None
        tin = tin_r if reported and tin_r else call.tin      # (no request that sent text read nothing: 0 is no count)
        tout = tout_r if reported and tout_r is not None else estimated_output
        if reported and usage is not None:
            self.cache_read_tokens += count(usage.cache_read_input_tokens) or 0
            self.cache_creation_tokens += count(usage.cache_creation_input_tokens) or 0
            self.reasoning_tokens += count(usage.reasoning_output_tokens) or 0
        self._last_io[call.conversation] = tin + tout
        if call.outer:
            self.charge_time(seconds if seconds is not None else time.monotonic() - call.started)
        if isinstance(model, str) and model:
            self.models.add(model)
        self._charge(tin, tout, model, provider, asked_model)

    def model_failed(self, call: Call | None, seconds: float | None = None) -> None:
        """A request that got no answer: its hold is released and its time charged."""
        call = self._close(call)
        if call.outer:
            self.charge_time(seconds if seconds is not None else time.monotonic() - call.started)

    def _close(self, call: Call | None) -> Call:
        if call is not None and call in self._open:
            self._open.remove(call)
            return call
        return call or Call(tin=0, reserved_tokens=0, reserved_usd=0.0, model=None, provider=None,
                            conversation=None, watched=True, started=time.monotonic(), outer=not self._tools)

    def claim(self, conversation: Hashable) -> Call | None:
        """The newest request checked without a watcher (of ``conversation``, else any), now watched: a hook that
        follows the check of the same request. None when there is none."""
        unwatched = [c for c in self._open if not c.watched]
        mine = [c for c in unwatched if c.conversation == conversation] or unwatched
        if not mine:
            return None
        mine[-1].watched = True
        return mine[-1]

    def _charge(self, tin: int, tout: int, model: str | None, provider: str | None, asked_model: str | None) -> None:
        self.input_tokens += tin
        self.output_tokens += tout
        name, prov = self.price_key(model, provider)
        cost = self.prices.cost(name, prov, tin, tout)
        if cost is None and asked_model and asked_model != model:
            name, prov = self.price_key(asked_model, provider)
            cost = self.prices.cost(name, prov, tin, tout)
        if cost is None:
            self.unpriced_calls += 1
        else:
            self._last_price = (model if model else asked_model, provider)
            self.cost_usd = round(self.cost_usd + cost, 9)

    def charge_time(self, seconds: float) -> None:
        secs = non_negative(seconds)          # (a time that is none: nothing to charge)
        if secs:
            self.elapsed = round(self.elapsed + secs, 6)

    def deadline_passed(self) -> bool:
        return self.elapsed_now() >= self.budget.deadline_s

    def deadline(self, what: str) -> NoReturn:
        """A call was cut off by the time left: the run ends at the deadline."""
        b = self.budget
        self.elapsed = max(self.elapsed, b.deadline_s)
        self._fail(Breach(limit="deadline_s", limit_value=b.deadline_s, observed=self.elapsed,
                          stop=StopReason.DEADLINE), what)

    # -- tool calls ----------------------------------------------------------------------------

    def before_tool_call(self, name: str, args: Any, key: Hashable = None) -> str:
        """Counts the proposal, then checks repeats, the tool-call limit and the deadline; the call (``key``) is
        timed from now. Returns the digest."""
        self._stopped()
        b = self.budget
        fp = self._proposed(name, args)
        self._check(b.check_before_tool_call(tool_calls=self.tool_calls, elapsed=self.elapsed_now()),
                    f"checked before the {name} call")
        self.tool_calls += 1
        self._tools[key] = (time.monotonic(), not self._tools and not any(c.outer for c in self._open))
        return fp

    def tool_seen(self, name: str, args: Any) -> None:
        """A tool call the framework ran out of the guard's sight (a nested agent's), learnt of afterwards: counted,
        and its repeats checked, before the run's next request."""
        self._stopped()
        self._proposed(name, args)
        self.tool_calls += 1

    def _proposed(self, name: str, args: Any) -> str:
        fp = fingerprint(name, args)
        self.seen[fp] = self.seen.get(fp, 0) + 1
        self._check(self.budget.check_repeat(self.seen[fp]), f"{name} with the same arguments")
        return fp

    def project_tool_calls(self, n: int) -> None:
        """A reply asks for ``n`` tool calls, which a framework may run concurrently: stop before any of them runs
        when together they would pass the limit (the framework would otherwise cancel calls already running)."""
        b = self.budget
        if n > 1 and self.tool_calls + n > b.max_tool_calls:
            self._fail(Breach(limit="max_tool_calls", limit_value=b.max_tool_calls, observed=self.tool_calls + n,
                              stop=StopReason.MAX_TOOL_CALLS), f"the reply asks for {n} tool calls")

    def tool_returned(self, name: str, result: Any, key: Hashable = None, seconds: float | None = None) -> None:
        """A tool call ended: its time (the outermost ones: a sub-agent's calls run inside them) and its result."""
        started, outermost = self._tools.pop(key, (time.monotonic(), not self._tools))
        if outermost:
            self.charge_time(seconds if seconds is not None else time.monotonic() - started)
        if not self._tools:       # no nested request outlives the tool calls: one never settled is charged whole
            for c in [c for c in self._open if not c.watched]:
                self._open.remove(c)
                self._charge(c.tin, self.budget.max_output_tokens, c.model, c.provider, None)
        self.result_seen(name, result)

    def result_seen(self, name: str, result: Any) -> None:
        """A tool result: progress when it is new in the run and no error."""
        if is_error_result(result):
            return
        ofp = fingerprint(name, result)
        if ofp not in self.observations:
            self.observations.add(ofp)
            self._progressed = True

    # -- what a framework counted out of the guard's sight ---------------------------------------

    def own(self, source: object, *, input_tokens: Any = 0, output_tokens: Any = 0, requests: int = 1,
            tool_calls: int = 0) -> None:
        """Notes what the guard charged that the framework adds to its usage object ``source`` (as reported)."""
        seen = self._seen(source)
        seen.requests += requests
        seen.input_tokens += count(input_tokens) or 0
        seen.output_tokens += count(output_tokens) or 0
        seen.tool_calls += tool_calls

    def reconcile(self, source: object, *, requests: Any, input_tokens: Any, output_tokens: Any,
                  tool_calls: Any = None) -> None:
        """Charges what the framework counted in ``source`` (its totals, given) beyond what the guard charged into
        it: requests the guard checked and never saw answered (the oldest of them), or never saw at all (counted as
        steps now), with their reported tokens, or a full reply each when they reported none; tool calls."""
        seen = self._seen(source)
        k = _beyond(requests, seen.requests)
        din, dout = _beyond(input_tokens, seen.input_tokens), _beyond(output_tokens, seen.output_tokens)
        dtools = _beyond(tool_calls, seen.tool_calls)
        seen.requests, seen.input_tokens = seen.requests + k, seen.input_tokens + din
        seen.output_tokens, seen.tool_calls = seen.output_tokens + dout, seen.tool_calls + dtools
        self.tool_calls += dtools
        if k == 0 and din == 0 and dout == 0:
            return
        calls = [c for c in self._open if not c.watched][:k]
        for c in calls:
            self._open.remove(c)
        unchecked = k - len(calls)               # requests no check saw: a nested agent the guard could not reach
        self.steps += unchecked
        self.unchecked_requests += unchecked
        if din == 0 and dout == 0:               # nothing reported: their estimate and a full reply each
            din = sum(c.tin for c in calls)
            dout = k * self.budget.max_output_tokens
        model, provider = (calls[0].model, calls[0].provider) if calls else self._last_price
        for c in calls:
            self._last_io[c.conversation] = (din + dout) // max(k, 1)
        self._charge(din, dout, model, provider, None)

    def _seen(self, source: object) -> _Seen:
        entry = self._sources.get(id(source))
        if entry is None or entry[0] is not source:
            entry = (source, _Seen())
            self._sources[id(source)] = entry
        return entry[1]

    def reconcile_known(self, totals: Callable[[object], Mapping[str, Any]]) -> None:
        """``reconcile`` every usage object the guard knows, with its totals read by ``totals``."""
        for source, _ in list(self._sources.values()):
            self.reconcile(source, **totals(source))

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

    def _stopped(self) -> None:
        """The run has a breach already (a nested agent's stop a framework turned into a tool result): again."""
        if self.breach is not None:
            raise self.fail(self.breach, self._detail)

    def _check(self, breach: Breach | None, detail: str) -> None:
        if breach is not None:
            self._fail(breach, detail)

    def _fail(self, breach: Breach, detail: str) -> NoReturn:
        if self.breach is None:
            self.breach, self._detail = breach, detail
        raise self.fail(breach, detail)

    def summary(self) -> dict[str, Any]:
        return {"steps": self.steps, "tool_calls": self.tool_calls, "tokens": self.tokens,
                "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "cache_read_tokens": self.cache_read_tokens, "cache_creation_tokens": self.cache_creation_tokens,
                "reasoning_tokens": self.reasoning_tokens, "cost_usd": self.cost_usd,
                "unpriced_calls": self.unpriced_calls, "elapsed_s": self.elapsed, "max_stalls": self.max_stalls_seen,
                "stop_reason": self.breach.stop.value if self.breach else None}


def _beyond(total: Any, seen: int) -> int:
    """How far a framework's total (a count, or not one: nothing) is past what the guard saw."""
    n = count(total)
    return n - seen if n is not None and n > seen else 0
