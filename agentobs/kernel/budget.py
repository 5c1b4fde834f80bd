"""Budgets: one frozen, validated value, with checks named for when they run.

A budget is the set of limits one run is held to; each limit is one named bound in it
(``max_steps``, ``deadline_s``...). Every check happens *before* the spending it guards and
returns a ``Breach`` (which limit, its value, what was observed, the stop reason) or None.
``None`` means "no limit" for the optional limits (dollars); the seed's limits all have defaults.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from ..contract.events import Breach, Limits
from ..contract.retry import RetryPolicy
from ..contract.vocabulary import StopReason
from ..errors import ConfigError

RepeatWindow = Literal["run", "since_progress"]
ProgressRule = Literal["state", "state_or_observation"]


@dataclass(frozen=True, kw_only=True)
class Budget:
    max_steps: int = 8            # loop iterations (= model calls)
    max_tool_calls: int = 6       # tool invocations, retries included
    max_tokens: int = 4000        # model input + output tokens over the whole run
    max_output_tokens: int = 300  # limit on one model reply (sent to the provider as max_tokens)
    max_usd: float | None = None  # dollars over the whole run; None = no dollar limit
    output_reserve_tokens: int | None = None  # output priced ahead of a call; default max_output_tokens
    deadline_s: float = 30.0      # active time: model + tool latency, never time waiting for a person
    max_repeat: int = 2           # times the same (tool, arguments) may be proposed
    repeat_window: RepeatWindow = "run"   # count repeats over the whole run, or since the last progress
    max_stalls: int = 3           # consecutive steps without progress
    progress: ProgressRule = "state"      # what counts as progress (see kernel.state)
    max_plan_steps: int = 6
    max_replans: int = 2          # plans accepted after the first one, when the kernel asked for a replan
    max_attempts: int = 3         # tries of one transient-failing tool call
    backoff_s: float = 0.06       # first retry delay; doubles each retry

    def __post_init__(self) -> None:
        def need(cond: bool, what: str) -> None:
            if not cond:
                raise ConfigError(f"Budget: {what}")

        for name in ("max_steps", "max_tool_calls", "max_tokens", "max_output_tokens", "max_plan_steps",
                     "max_attempts"):
            v = getattr(self, name)
            need(_count(v, 1), f"{name} must be an integer >= 1, got {v!r}")
        for name, low in (("max_repeat", 1), ("max_stalls", 1), ("max_replans", 0)):
            v = getattr(self, name)
            need(_count(v, low), f"{name} must be an integer >= {low}, got {v!r}")
        need(_positive(self.deadline_s), f"deadline_s must be a finite number of seconds > 0, got {self.deadline_s!r}")
        need(_nonneg(self.backoff_s), f"backoff_s must be a finite number >= 0, got {self.backoff_s!r}")
        need(self.max_usd is None or _positive(self.max_usd),
             f"max_usd must be a positive number of dollars or None, got {self.max_usd!r}")
        need(self.output_reserve_tokens is None or _count(self.output_reserve_tokens, 0),
             f"output_reserve_tokens must be an integer >= 0 or None, got {self.output_reserve_tokens!r}")
        need(self.max_output_tokens < self.max_tokens,
             f"max_output_tokens ({self.max_output_tokens}) must be below max_tokens ({self.max_tokens})")
        need(self.repeat_window in ("run", "since_progress"),
             f"repeat_window must be 'run' or 'since_progress', got {self.repeat_window!r}")
        need(self.progress in ("state", "state_or_observation"),
             f"progress must be 'state' or 'state_or_observation', got {self.progress!r}")

    @property
    def reserve_tokens(self) -> int:
        return self.max_output_tokens if self.output_reserve_tokens is None else self.output_reserve_tokens

    def limits(self) -> Limits:
        """The numeric limits in force, as events and telemetry carry them."""
        return Limits(max_steps=self.max_steps, max_tool_calls=self.max_tool_calls, max_tokens=self.max_tokens,
                      max_output_tokens=self.max_output_tokens, max_usd=self.max_usd, deadline_s=self.deadline_s,
                      max_repeat=self.max_repeat, max_stalls=self.max_stalls, max_plan_steps=self.max_plan_steps)

    def retry_policy(self) -> RetryPolicy:
        """How a transient failure (a tool error marked transient, a failing model call) is retried:
        ``max_attempts`` tries, waiting ``backoff_s`` after the first failure and doubling each time."""
        return RetryPolicy(attempts=self.max_attempts, base_s=self.backoff_s, factor=2.0)

    # -- checks, named for when they run -------------------------------------------------------

    def check_before_model_call(self, *, step: int, tool_calls: int, elapsed: float, tokens: int,
                                next_input_tokens: int, cost_usd: float, projected_usd: float | None
                                ) -> Breach | None:
        """The limit the next model call would break, if any."""
        if step >= self.max_steps:
            return Breach(limit="max_steps", limit_value=self.max_steps, observed=step, stop=StopReason.MAX_STEPS)
        if tool_calls >= self.max_tool_calls:
            return Breach(limit="max_tool_calls", limit_value=self.max_tool_calls, observed=tool_calls,
                          stop=StopReason.MAX_TOOL_CALLS)
        if elapsed >= self.deadline_s:
            return Breach(limit="deadline_s", limit_value=self.deadline_s, observed=elapsed, stop=StopReason.DEADLINE)
        need = tokens + next_input_tokens + self.max_output_tokens
        if need > self.max_tokens:
            return Breach(limit="max_tokens", limit_value=self.max_tokens, observed=need, stop=StopReason.MAX_TOKENS)
        if self.max_usd is not None and projected_usd is not None and cost_usd + projected_usd > self.max_usd:
            return Breach(limit="max_usd", limit_value=self.max_usd, observed=round(cost_usd + projected_usd, 9),
                          stop=StopReason.MAX_USD)
        return None

    def check_before_tool_call(self, *, tool_calls: int, elapsed: float) -> Breach | None:
        """The limit the next tool call would break, if any."""
        if tool_calls >= self.max_tool_calls:
            return Breach(limit="max_tool_calls", limit_value=self.max_tool_calls, observed=tool_calls,
                          stop=StopReason.MAX_TOOL_CALLS)
        if elapsed >= self.deadline_s:
            return Breach(limit="deadline_s", limit_value=self.deadline_s, observed=elapsed, stop=StopReason.DEADLINE)
        return None

    def check_repeat(self, times_proposed: int) -> Breach | None:
        """After a call was proposed ``times_proposed`` times: the repeat limit, if it is passed."""
        if times_proposed > self.max_repeat:
            return Breach(limit="max_repeat", limit_value=self.max_repeat, observed=times_proposed,
                          stop=StopReason.REPEATED_CALL)
        return None

    def check_stalls(self, stalls: int) -> Breach | None:
        """After a step: the no-progress limit, if ``stalls`` consecutive steps changed nothing."""
        if stalls >= self.max_stalls:
            return Breach(limit="max_stalls", limit_value=self.max_stalls, observed=stalls,
                          stop=StopReason.NO_PROGRESS)
        return None

    def remaining_time(self, elapsed: float) -> float:
        return max(0.0, self.deadline_s - elapsed)


def _positive(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def _nonneg(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x >= 0


def _count(x: object, low: int) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= low
