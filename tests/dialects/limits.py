"""Truth rules for frameworks whose turn limit does not leave a tool request unanswered.

The shared rule (``common.outcome``) calls a run ``turn_limit`` when its last answer asked for tools. Some
frameworks end at their limit differently, and the server's and tools' logs still show it:

- a forced final answer: at the limit the framework asks once more with the tools taken away (Semantic Kernel's
  last call after ``maximum_auto_invoke_attempts``, DSPy ReAct's extract step after ``max_iters``); the model can
  only answer in text. The log shows a request that offered no tools right after a reply that asked for one.
- a refused call: the framework does not run a tool call past its limit and hands the model a refusal as the
  tool's result (Agno's ``tool_call_limit``); the model answers in text. The log shows a tool call asked for in a
  200 reply that the tool log never ran, and no tool failure.

Such a run did not reach its answer by itself: ``failed`` / ``turn_limit``. ``OfferedScript`` logs whether each
request offered tools (``tools_offered``); ``apply`` rewrites the outcome of the runs these rules match.
"""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import Any

from server import Script


def offers_tools(body: dict) -> bool:
    """An API request offers tools when it sends any (and does not forbid them)."""
    return bool(body.get("tools")) and body.get("tool_choice") != "none"


class OfferedScript(Script):
    """A Script whose log says, per request, whether it offered the model tools (``offered(body)``)."""

    def __init__(self, runs: dict, offered: Callable[[dict], bool] = offers_tools):
        super().__init__(runs)
        self.offered = offered

    def next(self, key: str | None, agent: str | None, endpoint: str, body: dict) -> tuple[Any, int]:
        r, seq = super().next(key, agent, endpoint, body)
        with self.lock:
            self.log[-1]["tools_offered"] = self.offered(body)
        return r, seq


def forced_answer(served: list[dict]) -> bool:
    """The last request offered no tools; the one before it offered tools and was answered with tool calls."""
    if len(served) < 2 or served[-1].get("tools_offered", True):
        return False
    prev = served[-2]
    return prev["status"] == 200 and bool(prev["tool_calls"]) and prev.get("tools_offered", True)


def refused_calls(served: list[dict], tools: list[dict]) -> int:
    """Tool calls asked for in 200 replies that the tool log never ran."""
    asked = Counter(json.dumps(c, sort_keys=True) for e in served if e["status"] == 200 for c in e["tool_calls"])
    ran = Counter(json.dumps([e["tool"], e["args"]], sort_keys=True) for e in tools)
    return sum((asked - ran).values())


def apply(truth: dict, log: list[dict], tool_log: list[dict], *, forced: bool = False, refused: bool = False) -> dict:
    """Rewrite, in a Recorder's truth, the runs that ended at a soft limit (``done`` by the shared rule)."""
    for t in truth["traces"]:
        for r in t["runs"]:
            if r["stop_reason"] != "done":
                continue
            served = [e for e in log if e["run"] == r["run_key"]]
            ran = [e for e in tool_log if e["run"] == r["run_key"]]
            if (forced and forced_answer(served)) or (refused and not r["tool_errors"] and refused_calls(served, ran)):
                r["outcome"], r["stop_reason"] = "failed", "turn_limit"
    return truth
