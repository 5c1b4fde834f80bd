"""Tools as the kernel sees them: a catalog of specs, one invocation call, one result vocabulary.

Results are dicts with a ``status`` (``agentobs.contract.vocabulary.ToolStatus``): ``ok``,
``needs_approval``, ``unknown`` (a write whose outcome is lost) or ``error`` with a ``code``
(``not_found``, ``invalid_state``, ``unknown_tool``, ``invalid_arguments``, ``timeout``,
``unavailable``...). An error with ``"transient": true`` is retried with backoff (the budget's
``RetryPolicy``). ``result_status`` folds a result into one word of that vocabulary.

An async toolbox (``AsyncToolbox``) has ``async def ainvoke`` (or an ``async def invoke``); the async kernel
awaits it, and runs a sync ``invoke`` in a worker thread unless the toolbox says it never blocks
(``blocking = False``). ``spec`` is always a plain, quick call.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..contract.vocabulary import Effect, ToolStatus

OK, NEEDS_APPROVAL, UNKNOWN, ERROR = (ToolStatus.OK.value, ToolStatus.NEEDS_APPROVAL.value, ToolStatus.UNKNOWN.value,
                                      ToolStatus.ERROR.value)


@dataclass(frozen=True, kw_only=True)
class ToolSpec:
    name: str
    effect: Effect
    description: str = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolInvocation:
    name: str
    args: dict[str, Any]
    user_id: str
    key: str                 # stable per logical call: task id + plan step
    timeout_s: float
    approved: bool = False   # a human approved exactly these arguments
    attempt: int = 1


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolResponse:
    result: dict[str, Any]
    latency_s: float | None = None   # declared (stand-ins); None = measured by the clock


class Toolbox(Protocol):
    def spec(self, name: str) -> ToolSpec | None: ...

    def invoke(self, call: ToolInvocation) -> ToolResponse: ...


class AsyncToolbox(Protocol):
    """A toolbox the async kernel awaits (``Kernel.arun``)."""

    def spec(self, name: str) -> ToolSpec | None: ...

    async def ainvoke(self, call: ToolInvocation) -> ToolResponse: ...


@dataclass(frozen=True, kw_only=True)
class FactPolicy:
    """Which result fields become facts, and which argument scopes them (``ord_1001.total_cents``)."""
    fields: frozenset[str] = field(default_factory=frozenset)
    scope_arg: str | None = None

    def extract(self, args: Mapping[str, Any], result: Mapping[str, Any]) -> dict[str, Any]:
        if not self.fields:
            return {}
        scope = args.get(self.scope_arg) if self.scope_arg else None
        out = {}
        for k, v in result.items():
            if k in self.fields and (v is None or isinstance(v, (str, int, float, bool))):
                out[f"{scope}.{k}" if self.scope_arg else k] = v
        return out


def error(code: str, **extra: Any) -> dict[str, Any]:
    return {"status": ERROR, "code": code, **extra}
