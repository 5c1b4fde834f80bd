"""Telemetry-safe stand-ins for strings that come from the model or from outside code.

Default telemetry (no content capture) records no text the model wrote. The few attributes that used to carry
such text get a stand-in instead, in every capture mode:

- a plan step id becomes ``step-<n>``, its 1-based position in the plan in force (the model chose the id: it
  can be anything, an e-mail address included); an id that names no step of the plan becomes ``step-x`` and
  the first 8 hex digits of its SHA-256, so that two such ids stay apart without being readable;
- the call key ``<task id>:<plan step id>`` becomes ``<task id>:step-<n>``; the kernel's ad-hoc keys
  (``<task id>:adhoc<step>``) are kept; any other key (one an application passed) goes through the redactor;
- a plan's problems (free text that quotes step ids and tool names) become closed codes (``PROBLEM_CODES``);
- a status, error code, exception name or tool name from outside code is kept when it is a plain identifier with
  no secret in it, and becomes ``_OTHER`` otherwise (the GenAI conventions' fallback value).
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from typing import Any

from .content import Redactor

OTHER = "_OTHER"

# The kernel's plan problems (agentobs.kernel.plan.validate_plan and Kernel._plan), as closed codes.
PROBLEM_CODES: tuple[tuple[str, re.Pattern[str]], ...] = tuple((code, re.compile(rx, re.S)) for code, rx in (
    ("plan_not_a_list", r"plan must be a non-empty list"),
    ("too_many_steps", r"too many steps \(\d+ > \d+\)"),
    ("step_not_an_object", r"step \d+ is not an object"),
    ("step_without_id", r"step \d+: id must be a non-empty string"),
    ("bad_depends_on", r".+: depends_on must be a list of step ids"),
    ("duplicate_step_id", r".+: duplicate id"),
    ("unknown_tool", r".+: unknown tool .+"),
    ("unknown_dependency", r".+: depends on .+, which is not an earlier step"),
    ("write_without_prerequisite", r".+: write step has no prerequisite"),
    ("plan_already_set", r"a plan is already set"),
    ("replan_budget_exhausted", r"replan budget exhausted \(\d+ replans\)"),
))

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]{0,63}", re.ASCII)
_TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}", re.ASCII)
_ADHOC_KEY = re.compile(r"adhoc\d+", re.ASCII)


def plan_step(step_id: str, plan: Sequence[str]) -> str:
    """``step-<n>`` for a step of the plan (its position among the plan's step ids), ``step-x<digest>`` for an
    id that names none."""
    for n, sid in enumerate(plan, 1):
        if sid == step_id:
            return f"step-{n}"
    return "step-x" + hashlib.sha256(str(step_id).encode("utf-8", "replace")).hexdigest()[:8]


def call_id(key: str, task_id: str, step_id: str | None, step_label: str | None, redactor: Redactor) -> str:
    """The call key with the model's plan step id replaced by its label."""
    prefix = f"{task_id}:"
    if key.startswith(prefix):
        rest = key[len(prefix):]
        if step_id is not None and rest == step_id and step_label is not None:
            return prefix + step_label
        if _ADHOC_KEY.fullmatch(rest):
            return key
    return redactor.text(key)[:256]


def problem_codes(problems: Iterable[Any]) -> tuple[str, ...]:
    """One closed code per problem (``_OTHER`` for a text the kernel does not write)."""
    out = []
    for p in problems:
        text = p if isinstance(p, str) else ""
        out.append(next((code for code, rx in PROBLEM_CODES if rx.fullmatch(text)), OTHER))
    return tuple(out)


def identifier(value: Any, redactor: Redactor) -> str:
    """A status, error code or exception name: kept when it is a plain identifier the redactor leaves alone."""
    if isinstance(value, str) and _IDENTIFIER.fullmatch(value) and redactor.clean(value):
        return value
    return OTHER


def tool_name(value: Any, redactor: Redactor) -> str:
    """A tool name (it names a span and a metric series): kept when it is a plain function name with no secret."""
    if isinstance(value, str) and _TOOL_NAME.fullmatch(value) and redactor.clean(value):
        return value
    return OTHER
