"""Recommended caps as configuration to paste: an agentobs ``Budget``, Pydantic AI ``UsageLimits`` or the
OpenAI Agents SDK's ``max_turns`` with the agentobs guard for the rest.

Caps in (``CapRecommendation`` from ``limits.recommend_all``), text or a dict out; nothing is printed here.
Each setting is commented with the share of successful runs it would have cut off (the share whose value is
above the cap) and the number of successful runs behind it. A dimension without a recommendation (no
successful run measured it) is left out, with a comment saying so. The text is valid Python: every value
is a number we computed, and no text from the traces reaches it.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from ..errors import InputError
from .limits import CapRecommendation

Kind = Literal["budget", "pydantic-ai", "openai-agents"]
KINDS: tuple[Kind, ...] = get_args(Kind)        # the CLI keeps a literal copy (EMIT_KINDS); a test keeps them equal

# Budget field -> the caps' dimension (runs-table column) it comes from, in the order they are emitted
_BUDGET = (("max_steps", "steps"), ("max_tool_calls", "tool_calls"), ("max_tokens", "tokens"),
           ("max_usd", "cost_usd"), ("deadline_s", "active_s"), ("max_repeat", "max_identical_since_progress"),
           ("max_stalls", "longest_stall"))
_FLOATS = ("max_usd", "deadline_s")
# Budget limits the kernel enforces at value >= cap, not above it: every successful run ends with a model call
# after its last tool call (refused once tool_calls >= max_tool_calls), and a run stops once stalls reach
# max_stalls. A run at exactly the cap is cut off, so these get at least one more than the smallest cap
# within the target, and their share counts the runs at the cap.
_AT_CAP = ("max_tool_calls", "max_stalls")
_PYDANTIC = (("request_limit", "steps"), ("tool_calls_limit", "tool_calls"), ("total_tokens_limit", "tokens"))
DEFAULT_OUTPUT_CAP = 300       # Budget.max_output_tokens' default (the analysis imports no kernel; a test keeps them equal)


@dataclass(frozen=True, kw_only=True)
class Setting:
    name: str                  # the field set (Budget / UsageLimits field, or max_turns)
    value: float | int
    dimension: str             # the runs-table column it was computed from
    cutoff_share: float        # share of successful runs above the value
    successful_runs: int
    note: str = ""

    def comment(self) -> str:
        text = f"cuts off {100 * self.cutoff_share:.1f}% of {self.successful_runs} successful runs"
        return f"{text}; {self.note}" if self.note else text

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "dimension": self.dimension,
                "cutoff_share": self.cutoff_share, "successful_runs": self.successful_runs, "note": self.note}


@dataclass(frozen=True, kw_only=True)
class Emitted:
    kind: str
    settings: list[Setting]
    missing: list[str]         # dimensions with no recommendation
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"emit": self.kind, "settings": [s.to_dict() for s in self.settings], "missing": self.missing,
                "text": self.text}


def cutoff_share(cap: CapRecommendation, value: float) -> float:
    """Share of successful runs above ``value``, from the cap's exact cut-off table."""
    best: tuple[float, float] | None = None
    for key, share in cap.cutoff.items():
        k = float(key)
        if k <= value + 1e-12 and (best is None or k > best[0]):
            best = (k, share)
    if best is None:
        return 1.0 if cap.cutoff else 0.0
    return float(best[1])


def _value(name: str, cap: CapRecommendation, at_cap: bool) -> float | int | None:
    v = cap.recommended
    if v is None or not math.isfinite(v):
        return None
    if name in _FLOATS:
        return float(v) if v > 0 else None
    if at_cap and cap.base is not None:
        v = max(v, cap.base + 1)
    return max(1, int(math.ceil(v)))


def _settings(caps: Sequence[CapRecommendation], fields: Sequence[tuple[str, str]], *, kernel: bool = False
              ) -> tuple[list[Setting], list[str]]:
    by_dim = {c.dimension: c for c in caps}
    out, missing = [], []
    for name, dim in fields:
        cap = by_dim.get(dim)
        at_cap = kernel and name in _AT_CAP
        value = _value(name, cap, at_cap) if cap is not None else None
        if cap is None or value is None:
            missing.append(dim)
            continue
        share = cutoff_share(cap, float(value) - 1 if at_cap else float(value))
        out.append(Setting(name=name, value=value, dimension=dim, cutoff_share=share,
                           successful_runs=cap.successful_runs))
    return out, missing


def _lines(settings: Sequence[Setting], indent: str = "    ") -> list[str]:
    rows = [(f"{indent}{s.name}={_literal(s.value)},", s.comment()) for s in settings]
    width = max((len(code) for code, _ in rows), default=0)
    return [f"{code:<{width}}  # {comment}" for code, comment in rows]


def _literal(v: float | int) -> str:
    if isinstance(v, int):
        return str(v)
    text = f"{v:.6g}"
    return text if ("." in text or "e" in text) else text + ".0"


def _budget_settings(caps: Sequence[CapRecommendation]) -> tuple[list[Setting], list[str]]:
    settings, missing = _settings(caps, _BUDGET, kernel=True)
    tokens = next((s for s in settings if s.name == "max_tokens"), None)
    if tokens is not None and tokens.value < 2:      # no reply fits (max_output_tokens >= 1 must stay below it)
        settings.remove(tokens)
        missing.append("tokens")
        tokens = None
    if tokens is not None and tokens.value <= DEFAULT_OUTPUT_CAP:   # Budget needs max_output_tokens < max_tokens
        cap = max(1, int(tokens.value) // 4)
        settings.append(Setting(name="max_output_tokens", value=cap, dimension="tokens",
                                cutoff_share=tokens.cutoff_share, successful_runs=tokens.successful_runs,
                                note="kept below max_tokens; check it fits one reply"))
    return settings, missing


def _header(caps: Sequence[CapRecommendation], target: float, margin: float) -> list[str]:
    n = max((c.successful_runs for c in caps), default=0)
    return [f"# Recommended caps from {n} successful runs: the smallest cap that cuts off at most "
            f"{100 * target:g}% of them, plus {100 * margin:g}%."]


def _missing_note(missing: Sequence[str]) -> list[str]:
    return [f"# not set (no successful run measured it, or too little for a cap): {', '.join(missing)}"] \
        if missing else []


def emit(caps: Sequence[CapRecommendation], kind: str, *, target: float = 0.01, margin: float = 0.10) -> Emitted:
    """The caps as ready-to-paste configuration of ``kind`` (``budget``, ``pydantic-ai``, ``openai-agents``)."""
    if kind not in KINDS:
        raise InputError(f"--emit {kind!r}: use one of {', '.join(KINDS)}")
    head = _header(caps, target, margin)
    if kind == "budget":
        settings, missing = _budget_settings(caps)
        window = ['    repeat_window="since_progress",  # max_repeat counts identical calls since the last progress']\
            if any(s.name == "max_repeat" for s in settings) else []
        text = [*head, "from agentobs import Budget", "", "budget = Budget(", *_lines(settings), *window, ")",
                *_missing_note(missing)]
    elif kind == "pydantic-ai":
        settings, missing = _settings(caps, _PYDANTIC)
        text = [*head, "from pydantic_ai import UsageLimits", "", "usage_limits = UsageLimits(", *_lines(settings), ")",
                "# agent.run_sync(prompt, usage_limits=usage_limits). UsageLimits checks tokens only after each",
                "# response (the crossing call is billed) and has no dollar-ahead, active-time, repeat or stall limit:",
                "# for those add agentobs.guards.pydantic_ai.BudgetGuard with the Budget of `--emit budget`.",
                *_missing_note(missing)]
    else:
        turns, missing_turns = _settings(caps, (("max_turns", "steps"),))
        budget, missing = _budget_settings(caps)
        window = ['    repeat_window="since_progress",  # max_repeat counts identical calls since the last progress']\
            if any(s.name == "max_repeat" for s in budget) else []
        text = [*head, "from agentobs import Budget", "from agentobs.guards.openai_agents import BudgetGuard", "",
                *[f"max_turns = {_literal(t.value)}  # {t.comment()}" for t in turns],
                "guard = BudgetGuard(Budget(", *_lines(budget), *window, "))",
                "# result = await guard.run(agent, prompt)   # checks the budget before every model and tool call",
                *(["# result = await Runner.run(agent, prompt, max_turns=max_turns)   # the turn limit alone"]
                  if turns else []),
                *_missing_note(sorted(set(missing) | set(missing_turns)))]
        settings, missing = [*turns, *budget], sorted(set(missing) | set(missing_turns))
    return Emitted(kind=kind, settings=settings, missing=missing, text="\n".join(text) + "\n")
