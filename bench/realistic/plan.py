"""Traces and runs planned from one random stream, independently of the dialect they are written in."""
from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass, field

from .world import AGENT_BY_NAME, AGENTS, HANDOFF, MODELS, TOOLS, Agent, Model, tool_argument

DIALECTS = ("genai", "genai_old", "openinference", "openllmetry", "langfuse", "mlflow")
DIALECT_WEIGHTS = (0.30, 0.14, 0.16, 0.14, 0.13, 0.13)
EPOCH_NS = 1_767_225_600 * 10**9          # 2026-01-01T00:00:00Z


@dataclass
class Call:
    start: int
    end: int
    tin: int = 0
    tout: int = 0
    cread: int = 0
    cwrite: int = 0
    error: str | None = None     # "429" / "500"
    finish: str = "stop"


@dataclass
class ToolCall:
    name: str
    args: str                    # JSON
    call_id: str
    start: int
    end: int
    error: str | None = None


@dataclass
class Step:
    calls: list[Call]            # failed attempts then the answer
    tools: list[ToolCall]
    span_id: str = ""


@dataclass
class Run:
    index: int
    agent: Agent
    model: Model
    ours: bool
    steps: list[Step]
    start: int
    end: int
    root_id: str
    success: bool
    stop_reason: str | None
    repeat: str
    conversation: str | None
    capture: bool                # tool arguments recorded (content capture on)
    ids: list[str] = field(default_factory=list)


@dataclass
class Trace:
    trace_id: str
    runs: list[Run]
    container: str | None        # "http" | "job" | None
    container_id: str
    start: int
    end: int
    route: str
    http_status: int
    dialect: str = "genai"


class Planner:
    """Draws traces from one random stream; the dialect comes from a second stream, so the runs are the same
    whatever the dialect option."""

    def __init__(self, seed: int, dialects: str):
        self.rng = random.Random(seed)
        self.drng = random.Random(seed * 7919 + 17)
        self.dialects = dialects
        self.clock = EPOCH_NS
        self.run_index = 0

    def _id(self, bits: int) -> str:
        return f"{self.rng.getrandbits(bits):0{bits // 4}x}"

    def trace(self) -> Trace:
        rng = self.rng
        self.clock += int(rng.expovariate(1 / 2.5) * 1e9) + 1      # arrivals; traces overlap in time
        t0 = self.clock
        trace_id = self._id(128)
        u = rng.random()
        container = "http" if u < 0.35 else "job" if u < 0.45 else None
        agent = rng.choices(AGENTS, weights=[a.weight for a in AGENTS])[0]
        agents = [agent]
        if container == "http" and agent.name in HANDOFF and rng.random() < 0.3:
            agents = [agent, AGENT_BY_NAME[HANDOFF[agent.name]]]      # two runs in one request
        container_id = self._id(64)
        t = t0 + (int(rng.uniform(2, 30) * 1e6) if container else 0)
        runs = []
        ours = rng.random() < 0.25
        for a in agents:
            run = self._run(a, t, ours)
            runs.append(run)
            t = run.end + int(rng.uniform(1, 20) * 1e6)
        end = t + (int(rng.uniform(1, 10) * 1e6) if container else 0)
        failed = not all(r.success for r in runs)
        status = 200 if not failed else rng.choice((200, 200, 500, 502))
        route = f"/v1/{agents[0].service.split('-')[0]}/{rng.choice(('chat', 'tasks', 'messages'))}"
        dialect = "genai"
        pick = self.drng.random()
        if self.dialects == "all" and not ours:
            acc = 0.0
            for d, w in zip(DIALECTS, DIALECT_WEIGHTS, strict=True):
                acc += w
                if pick < acc:
                    dialect = d
                    break
        return Trace(trace_id, runs, container, container_id, t0, end, route, status, dialect)

    def _run(self, agent: Agent, start: int, ours: bool) -> Run:
        rng = self.rng
        self.run_index += 1
        model = MODELS[rng.choices([m for m, _ in agent.models], weights=[w for _, w in agent.models])[0]]
        n = max(2, min(150, round(math.exp(rng.gauss(math.log(agent.steps), 0.7)))))
        u = rng.random()
        repeat = "back_to_back" if u < 0.06 else "with_progress" if u < 0.13 else "none"
        dies = rng.random() < 0.012                 # the provider keeps failing: the run ends on model errors
        cached = model.cache_read and rng.random() < 0.65
        writes = model.cache_write and cached
        context = min(600_000.0, max(150.0, math.exp(rng.gauss(math.log(agent.context), 0.9))))
        plan = self._tool_plan(agent, n, repeat)
        t = start + int(rng.uniform(1, 5) * 1e6)
        steps: list[Step] = []
        prev_in = 0
        for k in range(n):
            calls: list[Call] = []
            attempts = 3 if dies and k == n - 1 else (1 if rng.random() > 0.035 else 2)
            for a in range(attempts):
                failing = a < attempts - 1 or (dies and k == n - 1)
                if failing:
                    d = int(rng.uniform(0.05, 1.5) * 1e9)
                    calls.append(Call(t, t + d, error="429" if rng.random() < 0.6 and not dies else "500"))
                    t += d + int(rng.uniform(0.2, 4) * 1e9)
                    continue
                tin = int(min(1_900_000, context))
                tout = int(min(32_000, max(1, math.exp(rng.gauss(math.log(160 if k < n - 1 else 420), 1.0)))))
                cr = cw = 0
                if cached and k > 0:
                    cr = min(tin, int(prev_in * rng.uniform(0.8, 1.0)))
                    if writes and rng.random() < 0.5:
                        cw = int((tin - cr) * rng.uniform(0.5, 1.0))
                elif writes and k == 0 and rng.random() < 0.7:
                    cw = int(tin * rng.uniform(0.6, 0.95))
                d = int((0.25 + tout * model.ms_per_token / 1000 + tin * 2e-6) * rng.uniform(0.7, 1.6) * 1e9)
                finish = "tool_calls" if k < n - 1 else rng.choice(("stop", "stop", "stop", "length"))
                calls.append(Call(t, t + d, tin, tout, cr, cw, finish=finish))
                t += d
                prev_in = tin
                context += tout
            tools: list[ToolCall] = []
            if not (dies and k == n - 1):
                for name, args in plan[k]:
                    d = int(math.exp(rng.gauss(math.log(0.18), 1.1)) * 1e9)
                    err = None
                    if rng.random() < 0.04:
                        err = rng.choice(("TimeoutError", "ToolError", "HTTPError", "PermissionError"))
                    tools.append(ToolCall(name, args, f"call_{self._id(48)}", t, t + d, err))
                    t += d + int(rng.uniform(0.5, 20) * 1e6)
                    result = TOOLS[name][2]
                    context += 40 if err else math.exp(rng.gauss(math.log(result), 1.2))
            t += int(rng.uniform(2, 40) * 1e6)
            steps.append(Step(calls, tools))
        end = t + int(rng.uniform(1, 5) * 1e6)
        stop, success = self._outcome(ours, n, repeat, dies)
        conv = f"conv_{self._id(64)}" if rng.random() < 0.6 else None
        return Run(self.run_index - 1, agent, model, ours, steps, start, end, self._id(64), success, stop, repeat, conv,
                   capture=rng.random() < 0.7)

    def _tool_plan(self, agent: Agent, n: int, repeat: str) -> list[list[tuple[str, str]]]:
        rng = self.rng
        plan: list[list[tuple[str, str]]] = []
        done: list[tuple[str, str]] = []
        for _ in range(n - 1):
            calls = []
            for _ in range(1 if rng.random() < 0.82 else rng.randint(2, 3)):
                if done and rng.random() < 0.05:
                    calls.append(rng.choice(done))          # an innocent second look
                else:
                    name = rng.choice(agent.tools)
                    args = {p: tool_argument(kind, rng) for p, kind in TOOLS[name][1]}
                    calls.append((name, json.dumps(args, separators=(",", ":"))))
            done += calls
            plan.append(calls)
        plan.append([])                                       # the last step answers
        if repeat != "none" and n >= 4:
            same = plan[rng.randrange(0, n - 2)][0]
            first = rng.randrange(0, max(1, n - 3))
            times = rng.randint(3, 8)
            gap = 1 if repeat == "back_to_back" else 2
            for k in range(first, min(n - 1, first + gap * times), gap):
                plan[k] = [same]
        return plan

    def _outcome(self, ours: bool, n: int, repeat: str, dies: bool) -> tuple[str | None, bool]:
        rng = self.rng
        if dies:
            return ("model_error" if ours else None), False
        if repeat == "back_to_back" and rng.random() < 0.7:
            return ("repeated_call" if ours else None), False
        if n > 40 and rng.random() < 0.5:
            return ("max_steps" if ours else None), False
        u = rng.random()
        if u < 0.86:
            return ("done" if ours else None), True
        return (rng.choice(("no_progress", "deadline", "max_tokens")) if ours else None), False
