"""The caps as configuration of one kind (``emit``): Python for an agentobs ``Budget``, Pydantic AI's ``UsageLimits``
or the OpenAI Agents SDK's ``max_turns`` with the agentobs guard (the settings from ``config``), or Prometheus
alerting rules (``prometheus_rules``)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...errors import InputError
from ..assess.limits import CapRecommendation
from .config import (
    BUDGET_DEFAULTS,
    BUDGET_FIELDS,
    KINDS,
    PYDANTIC_FIELDS,
    Emitted,
    Reserve,
    budget_settings,
    literal,
    setting_lines,
    settings_for,
)


def _header(caps: Sequence[CapRecommendation], target: float, margin: float) -> list[str]:
    n = max((c.successful_runs for c in caps), default=0)
    return [f"# Recommended caps from {n} successful runs: the smallest cap that cuts off at most "
            f"{100 * target:g}% of them, plus {100 * margin:g}%."]


def _missing_note(missing: Sequence[str], budget: bool = False) -> list[str]:
    """The comment on the dimensions left out; for a Budget, with the default each of its fields then keeps (a
    Budget without max_tool_calls still stops a run at 6 tool calls)."""
    if not missing:
        return []
    line = f"# not set (no successful run measured it, or too little for a cap): {', '.join(missing)}"
    if not budget:
        return [line]
    fields = {dim: name for name, dim in BUDGET_FIELDS}
    kept = [f"{name}={literal(value)}" for m in missing
            if (name := fields.get(m)) is not None and (value := BUDGET_DEFAULTS.get(name)) is not None]
    return [line, f"# so Budget's defaults apply to them: {', '.join(kept)}; set them yourself if your runs need "
                  "more"] if kept else [line]


def emit(caps: Sequence[CapRecommendation], kind: str, *, target: float = 0.01, margin: float = 0.10,
         reserve: float | Reserve | None = None, runs: Any = None, alert_window: str = "1h",
         alert_for: str = "5m") -> Emitted:
    """The caps as ready-to-paste configuration of ``kind`` (``budget``, ``pydantic-ai``, ``openai-agents``,
    ``prometheus-rules``). ``reserve``: the dollars of the reply a Budget's guard prices ahead (``reserve(runs)``,
    with how it was priced, or a number); without it, no ``max_usd`` is emitted for a Budget. ``prometheus-rules``
    needs the runs the caps come from (``runs``: each rule's expected share), and the rules' window and ``for``."""
    reserve = reserve if isinstance(reserve, Reserve) else Reserve(usd=reserve)
    if kind not in KINDS:
        raise InputError(f"--emit {kind!r}: use one of {', '.join(KINDS)}")
    if kind == "prometheus-rules":
        import pandas as pd

        from .prometheus_rules import rules
        return rules(caps, runs if runs is not None else pd.DataFrame(), target=target, margin=margin,
                     reserve=reserve, window=alert_window, hold=alert_for)
    head = _header(caps, target, margin)
    if kind == "budget":
        settings, missing, notes, explained = budget_settings(caps, reserve)
        window = ['    repeat_window="since_progress",  # max_repeat counts identical calls since the last progress']\
            if any(s.name == "max_repeat" for s in settings) else []
        text = [*head, "from agentobs import Budget", "", "budget = Budget(", *setting_lines(settings), *window, ")",
                *_missing_note([m for m in missing if m not in explained], budget=True), *notes]
    elif kind == "pydantic-ai":
        settings, missing = settings_for(caps, PYDANTIC_FIELDS)
        text = [*head, "from pydantic_ai import UsageLimits", "", "usage_limits = UsageLimits(",
                *setting_lines(settings), ")",
                "# agent.run_sync(prompt, usage_limits=usage_limits). UsageLimits checks tokens only after each",
                "# response (the crossing call is billed) and has no dollar-ahead, active-time, repeat or stall limit:",
                "# for those add agentobs.guards.pydantic_ai.BudgetGuard with the Budget of `--emit budget`.",
                *_missing_note(missing)]
    else:
        turns, missing_turns = settings_for(caps, (("max_turns", "steps"),))
        budget, missing, notes, explained = budget_settings(caps, reserve)
        window = ['    repeat_window="since_progress",  # max_repeat counts identical calls since the last progress']\
            if any(s.name == "max_repeat" for s in budget) else []
        text = [*head, "from agentobs import Budget", "from agentobs.guards.openai_agents import BudgetGuard", "",
                *[f"max_turns = {literal(t.value)}  # {t.comment()}" for t in turns],
                "guard = BudgetGuard(Budget(", *setting_lines(budget), *window, "))",
                "# result = await guard.run(agent, prompt)   # checks the budget before every model and tool call",
                *(["# result = await Runner.run(agent, prompt, max_turns=max_turns)   # the turn limit alone"]
                  if turns else []),
                *_missing_note([m for m in sorted(set(missing) | set(missing_turns)) if m not in explained],
                               budget=True), *notes]
        settings, missing = [*turns, *budget], sorted(set(missing) | set(missing_turns))
    return Emitted(kind=kind, settings=settings, missing=missing, text="\n".join(text) + "\n")
