"""Recommended caps as configuration to paste: an agentobs ``Budget``, Pydantic AI ``UsageLimits`` or the
OpenAI Agents SDK's ``max_turns`` with the agentobs guard for the rest; or as Prometheus alerting rules
(``prometheus_rules``).

Caps in (``CapRecommendation`` from ``limits.recommend_all``), text or a dict out; nothing is printed here.
Each setting is commented with the share of successful runs it would have cut off (the share whose value is
above the cap) and the number of successful runs behind it. A dimension without a recommendation (no
successful run measured it) is left out, with a comment saying so. The text is valid Python: every value
is a number we computed; the only text from the traces is a model name in a comment, as a ``repr`` literal.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np

from ..assess.limits import DIMENSIONS, CapRecommendation

Kind = Literal["budget", "pydantic-ai", "openai-agents", "prometheus-rules"]
KINDS: tuple[Kind, ...] = get_args(Kind)        # the CLI keeps a literal copy (EMIT_KINDS); a test keeps them equal

# Budget field -> the caps' dimension (runs-table column) it comes from, in the order they are emitted
BUDGET_FIELDS = (("max_steps", "steps"), ("max_tool_calls", "tool_calls"), ("max_tokens", "tokens"),
           ("max_usd", "cost_usd"), ("deadline_s", "active_s"), ("max_repeat", "max_identical_since_progress"),
           ("max_stalls", "longest_stall"))
_FLOATS = ("max_usd", "deadline_s")
# Budget limits the kernel enforces at value >= cap, not above it (``limits.Dimension.at_cap``): the recommended cap
# is already above the smallest cap within the target, and a setting's share counts the runs at the cap.
_AT_CAP = tuple(d.limit for d in DIMENSIONS if d.at_cap)
PYDANTIC_FIELDS = (("request_limit", "steps"), ("tool_calls_limit", "tool_calls"), ("total_tokens_limit", "tokens"))
# Budget.max_output_tokens' default (the analysis imports no kernel; a test keeps them equal)
DEFAULT_OUTPUT_CAP = 300
# Budget's defaults for the fields emitted (a test keeps them equal): a field left out gets its default, which the
# emitted text names (max_usd's default is no limit)
BUDGET_DEFAULTS: dict[str, float | int | None] = {"max_steps": 8, "max_tool_calls": 6, "max_tokens": 4000,
                                                  "max_usd": None, "deadline_s": 30.0, "max_repeat": 2,
                                                  "max_stalls": 3}


@dataclass(frozen=True, kw_only=True)
class Setting:
    name: str                  # the field set (Budget / UsageLimits field, or max_turns)
    value: float | int
    dimension: str             # the runs-table column it was computed from
    cutoff_share: float        # share of successful runs above the value
    successful_runs: int
    note: str = ""

    def __post_init__(self) -> None:
        # the value as the text prints it: the JSON, the pasted configuration and the watch hold the same number
        if not isinstance(self.value, int):
            object.__setattr__(self, "value", float(literal(self.value)))

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


def _value(name: str, cap: CapRecommendation) -> float | int | None:
    """The cap as the table recommends it (``limits.recommend``: already at least 1, and above what a run may reach
    for a limit enforced at the cap), as the field's type."""
    v = cap.recommended
    if v is None or not math.isfinite(v):
        return None
    if name in _FLOATS:
        return float(v) if v > 0 else None
    return max(1, math.ceil(v))


def settings_for(caps: Sequence[CapRecommendation], fields: Sequence[tuple[str, str]], *, kernel: bool = False
              ) -> tuple[list[Setting], list[str]]:
    by_dim = {c.dimension: c for c in caps}
    out, missing = [], []
    for name, dim in fields:
        cap = by_dim.get(dim)
        at_cap = kernel and name in _AT_CAP
        value = _value(name, cap) if cap is not None else None
        if cap is None or value is None:
            missing.append(dim)
            continue
        share = cutoff_share(cap, float(value) - 1 if at_cap else float(value))
        out.append(Setting(name=name, value=value, dimension=dim, cutoff_share=share,
                           successful_runs=cap.successful_runs))
    return out, missing


def setting_lines(settings: Sequence[Setting], indent: str = "    ") -> list[str]:
    rows = [(f"{indent}{s.name}={literal(s.value)},", s.comment()) for s in settings]
    width = max((len(code) for code, _ in rows), default=0)
    return [f"{code:<{width}}  # {comment}" for code, comment in rows]


def literal(v: float | int) -> str:
    if isinstance(v, int):
        return str(v)
    text = f"{v:.6g}"
    return text if ("." in text or "e" in text) else text + ".0"


def budget_settings(caps: Sequence[CapRecommendation], reserve: Reserve
                     ) -> tuple[list[Setting], list[str], list[str], set[str]]:
    """The Budget's settings, the dimensions left out, notes (comments to print), and the dimensions left out that
    a note explains.

    Before every model call the guard checks that the tokens spent, the next input and a whole reply of
    ``max_output_tokens`` fit under ``max_tokens``, and that the dollars spent and that call priced ahead fit under
    ``max_usd``: a cap at a run's total stopped it before its last call. So ``max_tokens`` is the recommendation
    plus the reply's reserve, and ``max_usd`` the recommendation plus ``reserve`` (the reserve priced at the
    dearest model of the successful runs: ``reserve``). ``max_usd`` is left out when some successful runs could
    not be priced (the guard refuses to spend without a price), or the reserve cannot be priced."""
    reserve_usd = reserve.usd
    settings, missing = settings_for(caps, BUDGET_FIELDS, kernel=True)
    notes: list[str] = []
    explained: set[str] = set()
    by_name = {s.name: s for s in settings}
    tokens, usd = by_name.get("max_tokens"), by_name.get("max_usd")
    if tokens is not None:
        settings[settings.index(tokens)] = Setting(
            name="max_tokens", value=int(tokens.value) + DEFAULT_OUTPUT_CAP, dimension="tokens",
            cutoff_share=tokens.cutoff_share, successful_runs=tokens.successful_runs,
            note=f"{literal(tokens.value)} plus the {DEFAULT_OUTPUT_CAP}-token reply (max_output_tokens) the guard "
                 "keeps in reserve before each call")
        notes.append(f"# max_output_tokens stays {DEFAULT_OUTPUT_CAP} (the longest reply, sent to the provider): if a "
                     "reply needs more, raise it, and max_tokens by as much")
    if usd is not None:
        n = max((c.successful_runs for c in caps), default=0)
        if usd.successful_runs < n:
            settings.remove(usd)
            missing.append("cost_usd")
            explained.add("cost_usd")
            notes.append(f"# {USD_NOTE}: only {usd.successful_runs} of {n} successful runs could be priced, "
                         "and the guard stops a run whose calls it cannot price under a dollar cap")
        elif reserve_usd is None or not math.isfinite(reserve_usd):
            settings.remove(usd)
            missing.append("cost_usd")
            explained.add("cost_usd")
            notes.append(f"# {USD_NOTE}: the guard prices a {DEFAULT_OUTPUT_CAP}-token reply ahead of each call, "
                         "and the runs' models have no price for it")
        else:
            settings[settings.index(usd)] = Setting(
                name="max_usd", value=_round_usd(float(usd.value) + reserve_usd), dimension="cost_usd",
                cutoff_share=usd.cutoff_share, successful_runs=usd.successful_runs,
                note=f"{literal(usd.value)} plus {reserve_usd:.6g} for the reply the guard prices ahead")
            if reserve.note:
                notes.append(reserve.note)
    return settings, missing, notes, explained


USD_NOTE = "max_usd left out"


def _round_usd(v: float) -> float:
    """Up, to 4 significant digits (a cap is never below what it must hold)."""
    if v <= 0:
        return v
    step = 10 ** (math.floor(math.log10(v)) - 3)
    return math.ceil(v / step - 1e-9) * step


@dataclass(frozen=True, kw_only=True)
class Reserve:
    """The dollars of the reply a Budget's guard prices ahead of each call, and how they were priced (a comment for
    the emitted text; empty for list prices)."""
    usd: float | None
    note: str = ""


def reserve_usd(runs: Any) -> float | None:
    return reserve(runs).usd


def reserve(runs: Any) -> Reserve:
    """The price of the reply a Budget's guard prices ahead (``max_output_tokens`` of output) at the dearest model
    of the successful runs: its list price (genai-prices), else the output price its runs' recorded costs imply
    (``implied_price``: a model of the traces' own, priced by the application, as the demo's stand-ins are). The
    runs' costs came from somewhere: a dollar cap the table recommends from them is emitted, not left out for want
    of a list price. No reserve when no successful run's model can be priced either way."""
    from ..derive.pricing import price_calls
    ok = runs[runs["success"] == True] if "success" in runs else runs.iloc[0:0]     # noqa: E712
    models = [str(m) for m in ok["model"].dropna().astype(str).unique()] if "model" in ok else []
    if not models:
        return Reserve(usd=None)
    listed = price_calls(models, None, [0] * len(models), output_tokens=[DEFAULT_OUTPUT_CAP] * len(models))
    best: float | None = None
    said: list[tuple[str, Implied]] = []            # the models priced from their runs
    for model, cost in zip(models, listed.tolist(), strict=True):
        if cost != cost:                            # NaN: no list price
            implied = implied_price(ok[ok["model"].astype(str) == model])
            if implied is None:
                continue
            cost = implied.output * DEFAULT_OUTPUT_CAP / 1e6
            said.append((model, implied))
        best = cost if best is None else max(best, cost)
    if best is None:
        return Reserve(usd=None)
    note = ""
    if said:
        exact = {_quoted(m): (p.input, p.output) for m, p in said if p.exact}
        example = ", ".join(f"{m}: ({a:.4g}, {b:.4g})" for m, (a, b) in exact.items()) or "'<model>': (input, output)"
        named = "; ".join(f"{_quoted(m)} (its runs' recorded costs imply {p})" for m, p in said)
        note = (f"# max_usd's reserve: no list price for {named}. A Kernel holds a dollar cap only with a price: "
                f"Kernel(..., prices=Prices({{{example}}})) in $ per million tokens, or price_as='<a model with a list "
                "price>'")
    return Reserve(usd=best, note=note)


def _quoted(model: str) -> str:
    """A model name from the traces as a Python string literal in a comment: masked, shortened, and quoted by
    ``repr`` (a line break or any unprintable character escaped: the text stays a comment)."""
    from ...contract.redaction import secrets_masked
    text = secrets_masked(model)
    return repr(text if len(text) <= 80 else text[:79] + "…")


@dataclass(frozen=True, kw_only=True)
class Implied:
    """Per-million-token prices a model's recorded costs imply: both, fitted exactly (``exact``), or only an upper
    bound of the output price (input ``None``)."""
    input: float | None
    output: float
    exact: bool

    def __str__(self) -> str:
        if self.exact and self.input is not None:
            return f"${self.input:.4g} input, ${self.output:.4g} output per million tokens"
        return f"at most ${self.output:.4g} per million output tokens"


def implied_price(runs: Any) -> Implied | None:
    """The prices a model's runs imply: their costs against their input and output tokens, least squares. When the
    fit is exact (every run's cost within 0.1%: one list price per token, as a stand-in priced like a real model
    has), its two prices; else the output price's upper bound: a cost is at least the output tokens at the output
    price, so that price is at most the smallest cost per output token. None without a run with a cost and output
    tokens."""
    need = ["cost_usd", "input_tokens", "output_tokens"]
    if not all(c in runs for c in need):
        return None
    d = runs[need].dropna().astype(float)
    d = d[(d["output_tokens"] > 0) & (d["cost_usd"] >= 0) & (d["input_tokens"] >= 0)]
    if d.empty:
        return None
    x = d[["input_tokens", "output_tokens"]].to_numpy()
    y = d["cost_usd"].to_numpy()
    if len(d) >= 2 and np.linalg.matrix_rank(x) == 2:
        coef = np.linalg.lstsq(x, y, rcond=None)[0]
        if (coef >= 0).all() and np.all(np.abs(x @ coef - y) <= 1e-3 * y + 1e-12):
            return Implied(input=float(coef[0]) * 1e6, output=float(coef[1]) * 1e6, exact=True)
    return Implied(input=None, output=float((y / x[:, 1]).min()) * 1e6, exact=False)
