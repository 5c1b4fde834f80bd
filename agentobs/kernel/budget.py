"""Budgets: one frozen, validated value, with checks named for when they run.

Every check happens *before* the spending it guards. ``None`` means "no limit" for the
optional limits (dollars); the seed's limits all have defaults.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Literal

from ..errors import ConfigError
from .stops import StopReason

RepeatWindow = Literal["run", "since_progress"]
ProgressRule = Literal["state", "state_or_observation"]


@dataclass(frozen=True, kw_only=True)
class Budget:
    max_steps: int = 8            # loop iterations (= model calls)
    max_tool_calls: int = 6       # tool invocations, retries included
    max_tokens: int = 4000        # model input + output tokens over the whole run
    max_output_tokens: int = 300  # cap on one model reply (sent to the provider as max_tokens)
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

    def limits(self) -> dict[str, float | int]:
        """The numeric limits in force (for telemetry and reports)."""
        out: dict[str, float | int] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v is not None:
                out[f.name] = v
        return out

    # -- checks, named for when they run -------------------------------------------------------

    def check_before_model_call(self, *, step: int, tool_calls: int, elapsed: float, tokens: int,
                                next_input_tokens: int, cost_usd: float, projected_usd: float | None
                                ) -> tuple[StopReason, float, float] | None:
        """Returns (stop, limit, observed) if the next model call must not happen."""
        if step >= self.max_steps:
            return StopReason.MAX_STEPS, self.max_steps, step
        if tool_calls >= self.max_tool_calls:
            return StopReason.MAX_TOOL_CALLS, self.max_tool_calls, tool_calls
        if elapsed >= self.deadline_s:
            return StopReason.DEADLINE, self.deadline_s, elapsed
        need = tokens + next_input_tokens + self.max_output_tokens
        if need > self.max_tokens:
            return StopReason.MAX_TOKENS, self.max_tokens, need
        if self.max_usd is not None and projected_usd is not None and cost_usd + projected_usd > self.max_usd:
            return StopReason.MAX_USD, self.max_usd, round(cost_usd + projected_usd, 9)
        return None

    def check_before_tool_call(self, *, tool_calls: int, elapsed: float) -> tuple[StopReason, float, float] | None:
        if tool_calls >= self.max_tool_calls:
            return StopReason.MAX_TOOL_CALLS, self.max_tool_calls, tool_calls
        if elapsed >= self.deadline_s:
            return StopReason.DEADLINE, self.deadline_s, elapsed
        return None

    def remaining_time(self, elapsed: float) -> float:
        return max(0.0, self.deadline_s - elapsed)


def _positive(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def _nonneg(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x >= 0


def _count(x: object, low: int) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= low
