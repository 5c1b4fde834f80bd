"""The caps ``agentobs watch`` holds runs to, read from what ``agentobs caps`` writes, or computed from a report.

A ``Cap`` is one limit: the runs-table column it bounds, its value, and when a run has crossed it. A run crosses a
limit when it has done what a budget of that value would have refused: more steps, tool calls, tokens, dollars,
active or wall seconds than the cap, an identical call more often than ``max_repeat``; the kernel stops a run that
*reaches* ``max_tool_calls`` or ``max_stalls`` (``at_cap``: its next model call, or that step, is refused), so for
those a run at the cap has crossed it. That is also how ``agentobs caps --emit budget`` counts the cut-off share
of these two.

Three files are read (``read_caps``), each told apart by its content, never by its name:

- the Python text of ``agentobs caps --emit budget`` (or ``openai-agents``, which holds the same ``Budget(...)``, or
  ``pydantic-ai``'s ``UsageLimits(...)``): parsed with ``ast`` (never run), every keyword a literal number; the
  comment on its line gives the cut-off share (``cuts off 0.9% of 1158 successful runs``). A ``Budget`` field that
  the text leaves out is not watched (the kernel would apply its default; a run watched here is not ours);
- the JSON of ``agentobs caps --emit budget --format json`` (its ``settings``);
- the JSON of ``agentobs caps --format json`` (its ``dimensions``: each recommended cap, crossed above it).
"""
from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import InputError
from ..assess.limits import CapRecommendation

# Budget field -> (runs-table column, a run at the cap has crossed it)
BUDGET_FIELDS: dict[str, tuple[str, bool]] = {
    "max_steps": ("steps", False), "max_tool_calls": ("tool_calls", True), "max_tokens": ("tokens", False),
    "max_usd": ("cost_usd", False), "deadline_s": ("active_s", False), "max_repeat": ("max_identical_calls", False),
    "max_stalls": ("longest_stall", True),
}
# the other fields of agentobs.Budget: settings, not bounds on a run's totals (read, not watched)
BUDGET_SETTINGS = frozenset({"max_output_tokens", "output_reserve_tokens", "repeat_window", "progress",
                             "max_plan_steps", "max_replans", "max_attempts", "backoff_s"})
# pydantic_ai.UsageLimits field -> runs-table column (each crossed above the limit)
USAGE_LIMITS_FIELDS = {"request_limit": "steps", "tool_calls_limit": "tool_calls", "total_tokens_limit": "tokens"}
# its other fields: limits per request or on one direction of tokens, which the runs table does not total
USAGE_LIMITS_OTHERS = frozenset({"cost_limit", "input_tokens_limit", "output_tokens_limit",
                                 "per_request_input_tokens_limit", "count_tokens_before_request"})
WALL = "max_wall_s"                      # not a Budget field: the run's first span start to its last span end
_SINCE_PROGRESS = "max_identical_since_progress"
_SHARE = re.compile(r"cuts off ([0-9.]+)% of ([0-9]+) successful runs")
MAX_FILE_BYTES = 1 << 20                # a caps file is a few hundred bytes


@dataclass(frozen=True, kw_only=True)
class Cap:
    limit: str                  # the Budget field (or UsageLimits field, or max_wall_s) it comes from
    dimension: str              # the runs-table column it bounds
    value: float
    at_cap: bool = False        # a run that reaches the value has crossed it (else: one above it)
    cutoff_share: float | None = None      # share of the successful runs behind it that it cuts off
    successful_runs: int | None = None

    def crossed(self, observed: float) -> bool:
        return observed >= self.value if self.at_cap else observed > self.value

    def describe(self) -> str:
        return f"{self.limit}={_number(self.value)}"

    def cutoff_text(self) -> str:
        if self.cutoff_share is None or self.successful_runs is None:
            return ""
        return f"cuts off {100 * self.cutoff_share:.1f}% of {self.successful_runs} successful runs"

    def to_dict(self) -> dict[str, Any]:
        return {"limit": self.limit, "dimension": self.dimension, "value": self.value, "at_cap": self.at_cap,
                "cutoff_share": self.cutoff_share, "successful_runs": self.successful_runs}


def _number(v: float) -> str:
    return str(int(v)) if float(v).is_integer() and abs(v) < 1e15 else f"{v:.6g}"


def wall_cap(seconds: float) -> Cap:
    if not (math.isfinite(seconds) and seconds > 0):
        raise InputError(f"--max-wall-s {seconds!r}: give a positive number of seconds")
    return Cap(limit=WALL, dimension="wall_s", value=float(seconds))


def read_caps(path: str | Path) -> list[Cap]:
    """The caps in ``path`` (one of the three files above); an InputError says what is wrong with it."""
    p = Path(path)
    try:
        with p.open("rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise InputError(f"--caps {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise InputError(f"--caps {path}: larger than {MAX_FILE_BYTES // 1024} KiB: not a caps file (write one with "
                         "agentobs caps SOURCE --emit budget > caps.py)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(f"--caps {path}: not UTF-8 text: write it with agentobs caps SOURCE --emit budget") from None
    caps = _from_json(text, str(path)) if text.lstrip().startswith("{") else _from_python(text, str(path))
    if not caps:
        raise InputError(f"--caps {path}: it sets no cap (no successful run measured any?): nothing to watch")
    return caps


# -- JSON ------------------------------------------------------------------------------------------------------

def _from_json(text: str, name: str) -> list[Cap]:
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise InputError(f"--caps {name}: not valid JSON ({exc})") from None
    if isinstance(doc, dict) and isinstance(doc.get("settings"), list):
        return [_setting(s, name, str(doc.get("emit", "budget"))) for s in doc["settings"]]
    if isinstance(doc, dict) and isinstance(doc.get("dimensions"), dict):
        return [c for d in doc["dimensions"].values() if (c := _dimension(d, name)) is not None]
    raise InputError(f"--caps {name}: JSON, but not what agentobs caps writes (--format json, with or without "
                     "--emit budget)")


def _setting(s: Any, name: str, kind: str) -> Cap:
    if not isinstance(s, dict) or not isinstance(s.get("name"), str) or not _is_number(s.get("value")):
        raise InputError(f"--caps {name}: a setting without a name and a numeric value: {str(s)[:80]}")
    field_, value = s["name"], float(s["value"])
    if value < 0:
        raise InputError(f"--caps {name}: {field_}={s['value']!r}: a cap is not negative")
    dimension = s.get("dimension") if isinstance(s.get("dimension"), str) else None
    if field_ in BUDGET_FIELDS and kind != "pydantic-ai":
        dim, at_cap = BUDGET_FIELDS[field_]
        dimension = dimension or dim
    elif field_ in USAGE_LIMITS_FIELDS or field_ == "max_turns":
        dimension, at_cap = dimension or USAGE_LIMITS_FIELDS.get(field_, "steps"), False
    else:
        raise InputError(f"--caps {name}: unknown setting {field_!r}")
    return Cap(limit=field_, dimension=dimension, value=value, at_cap=at_cap,
               cutoff_share=_float(s.get("cutoff_share")), successful_runs=_int(s.get("successful_runs")))


def _dimension(d: Any, name: str) -> Cap | None:
    if not isinstance(d, dict) or not isinstance(d.get("dimension"), str):
        raise InputError(f"--caps {name}: a dimension without its name: {str(d)[:80]}")
    value = d.get("recommended")
    if value is None:
        return None                  # no recommendation (no successful run measured it)
    if not _is_number(value):
        raise InputError(f"--caps {name}: {d['dimension']}: recommended is not a number")
    cutoff = d["cutoff"] if isinstance(d.get("cutoff"), dict) else {}
    return Cap(limit=str(d.get("limit") or d["dimension"]), dimension=d["dimension"], value=float(value),
               cutoff_share=share_at(cutoff, float(value)), successful_runs=_int(d.get("successful_runs")))


def share_at(cutoff: Mapping[str, Any], value: float) -> float | None:
    """The share of successful runs above ``value``, from a cap's cut-off table (candidate -> share)."""
    best: tuple[float, float] | None = None
    for key, share in cutoff.items():
        try:
            k = float(key)
        except ValueError:
            continue
        if _is_number(share) and k <= value + 1e-12 and (best is None or k > best[0]):
            best = (k, float(share))
    if best is None:
        return 1.0 if cutoff else None
    return best[1]


def _float(v: Any) -> float | None:
    return float(v) if _is_number(v) else None


def _int(v: Any) -> int | None:
    return int(v) if _is_number(v) else None


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


# -- Python text -------------------------------------------------------------------------------------------------

def _from_python(text: str, name: str) -> list[Cap]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError) as exc:
        raise InputError(f"--caps {name}: neither JSON nor the Python text of agentobs caps --emit budget "
                         f"({type(exc).__name__}: {exc})") from None
    lines = text.splitlines()
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _callee(n) in ("Budget", "UsageLimits")]
    if not calls:
        raise InputError(f"--caps {name}: no Budget(...) or UsageLimits(...) in it: write it with agentobs caps "
                         "SOURCE --emit budget")
    if len(calls) > 1:
        raise InputError(f"--caps {name}: {len(calls)} Budget(...)/UsageLimits(...) calls: keep the one to watch")
    call = calls[0]
    values: dict[str, tuple[Any, int]] = {}
    for kw in call.keywords:
        if kw.arg is None:
            raise InputError(f"--caps {name}: line {kw.lineno}: **arguments cannot be read without running the file")
        try:
            values[kw.arg] = (ast.literal_eval(kw.value), kw.lineno)
        except ValueError:
            raise InputError(f"--caps {name}: line {kw.lineno}: {kw.arg} is not a literal value") from None
    kernel = _callee(call) == "Budget"
    window = values.pop("repeat_window", ("run", 0))[0] if kernel else None
    out = []
    fields = BUDGET_FIELDS if kernel else {k: (v, False) for k, v in USAGE_LIMITS_FIELDS.items()}
    others = BUDGET_SETTINGS if kernel else USAGE_LIMITS_OTHERS
    for field_, (value, line) in values.items():
        if field_ not in fields:
            if field_ in others:
                continue             # max_output_tokens, progress, ...: not a bound on a run's totals
            raise InputError(f"--caps {name}: line {line}: {_callee(call)} has no field {field_!r} (the caps it "
                             f"takes: {', '.join(fields)})")
        if value is None:
            continue                 # max_usd=None: no dollar limit
        if not _is_number(value):
            raise InputError(f"--caps {name}: line {line}: {field_}={value!r} is not a number")
        if value < 0:
            raise InputError(f"--caps {name}: line {line}: {field_}={value!r}: a cap is not negative")
        dim, at_cap = fields[field_]
        if field_ == "max_repeat" and window == "since_progress":
            dim = _SINCE_PROGRESS
        share, runs = _comment_share(lines[line - 1] if 0 < line <= len(lines) else "")
        out.append(Cap(limit=field_, dimension=dim, value=float(value), at_cap=at_cap, cutoff_share=share,
                       successful_runs=runs))
    return out


def _callee(call: ast.Call) -> str | None:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def _comment_share(line: str) -> tuple[float | None, int | None]:
    m = _SHARE.search(line.partition("#")[2])
    return (float(m[1]) / 100, int(m[2])) if m else (None, None)


# -- computed ------------------------------------------------------------------------------------------------------

def caps_of(caps: Sequence[CapRecommendation], reserve_usd: float | None) -> list[Cap]:
    """The caps ``agentobs caps SOURCE --emit budget`` would write for these recommendations (as it prints them)."""
    from ..emit.kinds import emit
    e = emit(caps, "budget", reserve=reserve_usd)
    out = []
    for s in e.settings:
        dim, at_cap = BUDGET_FIELDS[s.name]
        out.append(Cap(limit=s.name, dimension=s.dimension or dim, value=float(s.value), at_cap=at_cap,
                       cutoff_share=s.cutoff_share, successful_runs=s.successful_runs))
    return out
