"""A synthetic stream of agent runs as a collector's archive receives them: OTLP JSON lines, one export batch a line.

Runs have our kernel's shape (``invoke_agent`` > ``agentobs.step`` > ``chat`` and ``execute_tool``); ``concurrent``
of them are in flight at once, and each line holds the spans that ended in one tick: one step of every run in
flight (its step, model call and tool call), and the root span of each run that ended. A run that ends is replaced
by a new one, so the stream is in a steady state whatever its length. Every ``runaway_every``-th run is a runaway of
``runaway_steps`` steps; the others take ``steps`` (a range) steps. Deterministic for a seed; ids are unique.

``Stream`` also says, for each runaway run, which tick holds its ``cross_at``-th model call (the span that takes it
past a step cap of ``cross_at - 1``), so a writer that times its lines can time that span's arrival.
"""
from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

AGENT = "support-agent"
MODEL = "gpt-4.1-mini"
TICK_NS = 200_000_000            # span time per step


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": str(value)}}


def _span(trace: str, span: str, parent: str | None, name: str, start: int, end: int, kind: int,
          attrs: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"traceId": trace, "spanId": span, "name": name, "kind": kind,
                           "startTimeUnixNano": str(start), "endTimeUnixNano": str(end),
                           "attributes": [_attr(k, v) for k, v in attrs.items()], "status": {}}
    if parent:
        out["parentSpanId"] = parent
    return out


@dataclass
class _SyntheticRun:
    index: int
    trace: str
    root: str
    steps: int
    started: int
    done: int = 0
    tokens: int = 0
    runaway: bool = False


@dataclass
class Stream:
    runs: int
    concurrent: int = 50
    steps: tuple[int, int] = (3, 8)
    runaway_every: int = 0
    runaway_steps: int = 40
    cross_at: int = 0                 # the model call (1-based) of a runaway run whose tick is recorded
    seed: int = 0
    start_ns: int = 1_700_000_000_000_000_000
    service: str = "agentobs-watch-bench"
    crossing_tick: dict[str, int] = field(default_factory=dict)      # runaway trace id -> tick of that call
    runaway_traces: list[str] = field(default_factory=list)
    normal_traces: list[str] = field(default_factory=list)

    def lines(self) -> Iterator[bytes]:
        rng = random.Random(self.seed)
        made = 0
        flight: list[_SyntheticRun] = []
        tick = 0

        def start() -> None:
            nonlocal made
            runaway = bool(self.runaway_every) and made % self.runaway_every == self.runaway_every - 1
            r = _SyntheticRun(index=made, trace=rng.getrandbits(128).to_bytes(16, "big").hex(),
                     root=rng.getrandbits(64).to_bytes(8, "big").hex(),
                     steps=self.runaway_steps if runaway else rng.randint(*self.steps),
                     started=self.start_ns + tick * TICK_NS, runaway=runaway)
            (self.runaway_traces if runaway else self.normal_traces).append(r.trace)
            flight.append(r)
            made += 1

        while made < self.runs and len(flight) < self.concurrent:
            start()
        while flight:
            spans: list[dict[str, Any]] = []
            t0 = self.start_ns + tick * TICK_NS
            for r in list(flight):
                r.done += 1
                spans += self._step(r, rng, t0)
                if r.runaway and r.done == self.cross_at:
                    self.crossing_tick[r.trace] = tick
                if r.done >= r.steps:
                    spans.append(self._root(r, t0 + TICK_NS))
                    flight.remove(r)
                    if made < self.runs:
                        start()
            tick += 1
            yield self._line(spans)

    def _step(self, r: _SyntheticRun, rng: random.Random, t0: int) -> list[dict[str, Any]]:
        step = rng.getrandbits(64).to_bytes(8, "big").hex()
        tin, tout = 300 + 40 * r.done, rng.randint(20, 80)
        r.tokens += tin + tout
        a, b, c = t0, t0 + TICK_NS // 2, t0 + TICK_NS - 1000
        return [
            _span(r.trace, rng.getrandbits(64).to_bytes(8, "big").hex(), step, f"chat {MODEL}", a, b, 3,
                  {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": MODEL,
                   "gen_ai.usage.input_tokens": tin, "gen_ai.usage.output_tokens": tout,
                   "gen_ai.response.finish_reasons": "tool_calls"}),
            _span(r.trace, rng.getrandbits(64).to_bytes(8, "big").hex(), step, "execute_tool search_policy", b, c, 1,
                  {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search_policy",
                   "agentobs.tool.args_digest": f"{r.trace[:8]}-{r.done}", "agentobs.tool.result_status": "ok"}),
            _span(r.trace, step, r.root, "agentobs.step", a, c, 1,
                  {"agentobs.step.index": r.done, "agentobs.step.progress": True}),
        ]

    def _root(self, r: _SyntheticRun, end: int) -> dict[str, Any]:
        return _span(r.trace, r.root, None, f"invoke_agent {AGENT}", r.started, end, 1,
                     {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": AGENT,
                      "gen_ai.request.model": MODEL, "agentobs.task.id": f"task-{self.seed}-{r.index:07d}"})

    def _line(self, spans: list[dict[str, Any]]) -> bytes:
        req = {"resourceSpans": [{"resource": {"attributes": [_attr("service.name", self.service)]},
                                  "scopeSpans": [{"scope": {"name": "agentobs"}, "spans": spans}]}]}
        return (json.dumps(req, separators=(",", ":")) + "\n").encode()


def write(path: str, stream: Stream) -> int:
    """Writes the whole stream to ``path``; its size in bytes."""
    size = 0
    with open(path, "wb") as f:
        for line in stream.lines():
            f.write(line)
            size += len(line)
    return size
