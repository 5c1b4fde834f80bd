"""Static checks on a model-proposed plan, run before any step of it executes."""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .state import PlanStep
from .tools import ToolSpec

_ADHOC = re.compile(r"adhoc[0-9]+")


def validate_plan(steps: Any, max_steps: int, spec: Callable[[str], ToolSpec | None],
                  earlier: frozenset[str] = frozenset()) -> list[str]:
    """Returns the problems with a plan (an empty list means it is acceptable).

    ``earlier`` holds the ids of steps kept from a previous plan version (a replan may depend on them).
    """
    if not isinstance(steps, list) or not steps:
        return ["plan must be a non-empty list"]
    problems: list[str] = []
    if len(steps) > max_steps:
        problems.append(f"too many steps ({len(steps)} > {max_steps})")
    seen: set[str] = set(earlier)
    for n, s in enumerate(steps, 1):
        if not isinstance(s, dict):
            problems.append(f"step {n} is not an object")
            continue
        sid, tool, deps = s.get("id"), s.get("tool"), s.get("depends_on", [])
        if not isinstance(sid, str) or not sid:
            problems.append(f"step {n}: id must be a non-empty string")
            continue
        if not isinstance(deps, list) or not all(isinstance(d, str) for d in deps):
            problems.append(f"{sid}: depends_on must be a list of step ids")
            deps = []
        if sid in seen:
            problems.append(f"{sid}: duplicate id")
        if _ADHOC.fullmatch(sid):                  # the kernel's key for a call outside the plan at that step
            problems.append(f"{sid}: reserved id (adhoc<n> names calls outside the plan)")
        tool_spec = spec(tool) if isinstance(tool, str) else None
        if tool_spec is None:
            problems.append(f"{sid}: unknown tool {tool!r}")
        for d in deps:
            if d not in seen:
                problems.append(f"{sid}: depends on {d!r}, which is not an earlier step")
        if tool_spec is not None and tool_spec.effect == "write" and not deps:
            problems.append(f"{sid}: write step has no prerequisite")
        seen.add(sid)
    return problems


def to_plan_steps(steps: list[dict[str, Any]]) -> list[PlanStep]:
    return [PlanStep(id=s["id"], tool=s["tool"], depends_on=list(s.get("depends_on", []))) for s in steps]
