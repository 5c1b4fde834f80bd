"""Realistic benchmark traces: an OTLP JSON lines file of N spans as varied as real agent traffic.

The simulated population (``agentobs simulate``) is one stand-in model with a handful of token counts:
every cache in the analysis hits. This generator writes what real deployments send instead:

* several agents and services, 13 models across 8 providers (three of them unknown to genai-prices:
  a fine-tune, a self-hosted model, a local one), chosen per agent;
* input tokens from a log-normal start that grows with every step by heavy-tailed tool results (a few
  hundred to a million+ tokens), varied output tokens, cache reads on cached providers, cache writes on
  Anthropic's;
* runs of 2 to 100+ steps; ~25 tools with JSON arguments of varied values; some runs repeating one
  identical call back to back, some repeating it with progress in between;
* model errors (429 and 500, ``error.type``, status ERROR, then a retry; a few runs die of them) and tool
  errors;
* traces with the run under an HTTP ``SERVER`` span (some holding two runs, one agent after another) or
  a job span, or bare;
* our own runs (``agentobs.*`` attributes, stop reasons, step spans; success = stop reason ``done``) and
  other instrumentations' (success = root span status not ERROR).

``dialects="all"`` emits the *same* runs (same ids, tokens, timings) in six span dialects, one per trace:
OpenTelemetry GenAI (current names), the older GenAI names (``gen_ai.system``, ``prompt_tokens`` /
``completion_tokens``), OpenInference, OpenLLMetry/Traceloop, Langfuse and MLflow (attribute names in
/work/shared/reference/dialects.md). Our own runs are always in the current GenAI names.

Generation streams (one export batch of 512 spans buffered at a time), is deterministic from the seed,
and writes ``<out>`` and ``<out stem>-manifest.json`` (the ground truth: totals, and one row per run with
its trace, dialect, model, calls, token sums and label) atomically. Token counts in the manifest follow
the GenAI conventions (input tokens include cache reads and writes), whatever the dialect says.

    python -m bench.realistic --spans 100000 --out /tmp/realistic-100k.jsonl [--seed 1] [--dialects all|genai]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

DIALECTS = ("genai", "genai_old", "openinference", "openllmetry", "langfuse", "mlflow")
DIALECT_WEIGHTS = (0.30, 0.14, 0.16, 0.14, 0.13, 0.13)
EPOCH_NS = 1_767_225_600 * 10**9          # 2026-01-01T00:00:00Z
BATCH = 512                               # spans per export request (one line), as the SDK's batch processor
INTERNAL, SERVER, CLIENT, CONSUMER = 1, 2, 3, 5
MANIFEST_SCHEMA = 1


# -- the world: models, tools, agents ------------------------------------------------------------------

@dataclass(frozen=True)
class Model:
    name: str
    provider: str            # gen_ai.provider.name (semantic conventions' values where defined)
    system: str              # the older gen_ai.system / vendor name
    host: str                # server.address
    cache_read: bool = False
    cache_write: bool = False
    ms_per_token: float = 20.0
    priced: bool = True      # genai-prices knows it (by design of this table)


MODELS = {m.name: m for m in (
    Model("gpt-4.1-mini", "openai", "openai", "api.openai.com", cache_read=True, ms_per_token=12),
    Model("gpt-4.1", "openai", "openai", "api.openai.com", cache_read=True, ms_per_token=25),
    Model("gpt-4o-mini", "openai", "openai", "api.openai.com", cache_read=True, ms_per_token=10),
    Model("o4-mini", "openai", "openai", "api.openai.com", cache_read=True, ms_per_token=30),
    Model("claude-sonnet-4-5", "anthropic", "anthropic", "api.anthropic.com", True, True, ms_per_token=28),
    Model("claude-3-5-haiku-20241022", "anthropic", "anthropic", "api.anthropic.com", True, True, ms_per_token=14),
    Model("gemini-2.5-pro", "gcp.gemini", "gemini", "generativelanguage.googleapis.com", cache_read=True,
          ms_per_token=30),
    Model("gemini-2.5-flash", "gcp.gemini", "gemini", "generativelanguage.googleapis.com", cache_read=True,
          ms_per_token=8),
    Model("deepseek-chat", "deepseek", "deepseek", "api.deepseek.com", cache_read=True, ms_per_token=35),
    Model("llama-3.3-70b-versatile", "groq", "groq", "api.groq.com", ms_per_token=4),
    Model("mistral-small-latest", "mistral_ai", "mistral_ai", "api.mistral.ai", ms_per_token=10),
    Model("ft:gpt-4.1-mini-2025-04-14:acme:support:Q7x1", "openai", "openai", "api.openai.com", cache_read=True,
          ms_per_token=12, priced=False),
    Model("acme-support-13b", "vllm", "vllm", "llm.internal.acme", ms_per_token=18, priced=False),
    Model("qwen3-coder-30b-local", "ollama", "ollama", "localhost", ms_per_token=40, priced=False),
)}

_WORDS = ("refund", "invoice", "shipping", "delay", "warranty", "battery", "kubernetes", "latency", "pricing",
          "contract", "gdpr", "export", "quarterly", "revenue", "churn", "migration", "postgres", "index",
          "timeout", "retry", "oauth", "token", "cache", "europe", "pacific", "forecast", "anomaly", "supplier")
_DIRS = ("api", "core", "billing", "auth", "jobs", "web", "tests", "infra")
_FILES = ("handlers", "models", "service", "client", "utils", "schema", "views", "tasks", "config")
_TABLES = ("orders", "customers", "invoices", "events", "sessions", "payments", "tickets")


def _arg(kind: str, rng: random.Random) -> Any:
    if kind == "order":
        return f"ord_{rng.randrange(10_000, 999_999)}"
    if kind == "customer":
        return f"cu_{rng.randrange(1000, 99_999)}"
    if kind == "ticket":
        return rng.randrange(1, 250_000)
    if kind == "cents":
        return rng.randrange(100, 500_000, 50)
    if kind == "query":
        return " ".join(rng.sample(_WORDS, rng.randint(1, 5)))
    if kind == "url":
        return f"https://{rng.choice(('docs', 'kb', 'status', 'blog'))}.example.com/{rng.choice(_WORDS)}/" \
               f"{rng.randrange(1, 5000)}"
    if kind == "path":
        return f"src/{rng.choice(_DIRS)}/{rng.choice(_FILES)}_{rng.randrange(1, 40)}.py"
    if kind == "sql":
        t = rng.choice(_TABLES)
        return f"SELECT count(*) FROM {t} WHERE created_at > now() - interval '{rng.randint(1, 90)} days'" \
               f" AND region = '{rng.choice(('eu', 'us', 'apac'))}' LIMIT {rng.choice((10, 100, 1000))}"
    if kind == "table":
        return rng.choice(_TABLES)
    if kind == "email":
        return f"{rng.choice(('ana', 'bo', 'chen', 'dara', 'eli', 'femi'))}.{rng.randrange(1, 999)}@example.com"
    if kind == "date":
        return f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if kind == "int":
        return rng.choice((3, 5, 10, 20, 50))
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "lines":
        a = rng.randrange(1, 800)
        return [a, a + rng.randrange(5, 120)]
    raise ValueError(kind)


# tool -> (effect, parameters as (name, kind), mean result tokens)
TOOLS: dict[str, tuple[str, tuple[tuple[str, str], ...], int]] = {
    "get_order": ("read", (("order_id", "order"),), 350),
    "lookup_customer": ("read", (("customer_id", "customer"), ("include_history", "bool")), 600),
    "list_tickets": ("read", (("customer_id", "customer"), ("limit", "int")), 900),
    "update_ticket": ("write", (("ticket_id", "ticket"), ("status", "query")), 80),
    "issue_refund": ("write", (("order_id", "order"), ("amount_cents", "cents")), 60),
    "send_email": ("write", (("to", "email"), ("subject", "query")), 40),
    "search_kb": ("read", (("query", "query"), ("top_k", "int")), 1500),
    "web_search": ("read", (("query", "query"), ("top_k", "int")), 2500),
    "fetch_url": ("read", (("url", "url"),), 6000),
    "read_pdf": ("read", (("url", "url"), ("pages", "lines")), 12000),
    "cite": ("read", (("url", "url"),), 120),
    "read_file": ("read", (("path", "path"), ("lines", "lines")), 3000),
    "write_file": ("write", (("path", "path"),), 50),
    "apply_patch": ("write", (("path", "path"), ("hunks", "int")), 150),
    "grep": ("read", (("pattern", "query"), ("path", "path")), 1200),
    "list_dir": ("read", (("path", "path"),), 400),
    "run_tests": ("read", (("path", "path"), ("fail_fast", "bool")), 2200),
    "run_shell": ("write", (("command", "query"),), 1800),
    "list_tables": ("read", (), 200),
    "describe_table": ("read", (("table", "table"),), 500),
    "run_sql": ("read", (("sql", "sql"),), 2000),
    "plot_chart": ("write", (("table", "table"), ("kind", "query")), 100),
    "find_slot": ("read", (("date", "date"), ("duration_min", "int")), 300),
    "book_meeting": ("write", (("date", "date"), ("attendee", "email")), 90),
    "get_invoice": ("read", (("customer_id", "customer"), ("date", "date")), 700),
}


@dataclass(frozen=True)
class Agent:
    name: str
    service: str
    models: tuple[tuple[str, float], ...]
    tools: tuple[str, ...]
    steps: float              # median model calls
    context: float            # median first input tokens
    weight: float


AGENTS = (
    Agent("support-agent", "support-api", (("gpt-4.1-mini", 0.5), ("claude-3-5-haiku-20241022", 0.2),
                                           ("ft:gpt-4.1-mini-2025-04-14:acme:support:Q7x1", 0.2),
                                           ("acme-support-13b", 0.1)),
          ("get_order", "lookup_customer", "list_tickets", "update_ticket", "issue_refund", "send_email", "search_kb"),
          6, 2500, 0.30),
    Agent("triage", "support-api", (("gpt-4o-mini", 0.6), ("gemini-2.5-flash", 0.4)),
          ("lookup_customer", "list_tickets", "search_kb"), 3, 1200, 0.12),
    Agent("billing-bot", "support-api", (("deepseek-chat", 0.5), ("gpt-4.1-mini", 0.3), ("mistral-small-latest", 0.2)),
          ("get_invoice", "lookup_customer", "issue_refund", "send_email"), 5, 2000, 0.10),
    Agent("research-assistant", "research-worker", (("claude-sonnet-4-5", 0.45), ("gemini-2.5-pro", 0.35),
                                                    ("o4-mini", 0.2)),
          ("web_search", "fetch_url", "read_pdf", "cite", "search_kb"), 12, 9000, 0.18),
    Agent("coder", "coder-cli", (("claude-sonnet-4-5", 0.45), ("gpt-4.1", 0.25), ("qwen3-coder-30b-local", 0.15),
                                 ("deepseek-chat", 0.15)),
          ("read_file", "write_file", "apply_patch", "grep", "list_dir", "run_tests", "run_shell"), 18, 15000, 0.15),
    Agent("sql-analyst", "analytics-api", (("gemini-2.5-flash", 0.4), ("llama-3.3-70b-versatile", 0.35),
                                           ("mistral-small-latest", 0.25)),
          ("list_tables", "describe_table", "run_sql", "plot_chart"), 7, 4000, 0.10),
    Agent("scheduler", "assistant-api", (("gpt-4o-mini", 0.7), ("gemini-2.5-flash", 0.3)),
          ("find_slot", "book_meeting", "send_email"), 4, 1500, 0.05),
)
_AGENT_BY_NAME = {a.name: a for a in AGENTS}
HANDOFF = {"triage": "support-agent", "billing-bot": "support-agent", "sql-analyst": "sql-analyst"}  # then this one


# -- one run, planned independently of how it is written ---------------------------------------------

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
            agents = [agent, _AGENT_BY_NAME[HANDOFF[agent.name]]]      # two runs in one request
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
            for d, w in zip(DIALECTS, DIALECT_WEIGHTS):
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
        for k in range(n - 1):
            calls = []
            for _ in range(1 if rng.random() < 0.82 else rng.randint(2, 3)):
                if done and rng.random() < 0.05:
                    calls.append(rng.choice(done))          # an innocent second look
                else:
                    name = rng.choice(agent.tools)
                    args = {p: _arg(kind, rng) for p, kind in TOOLS[name][1]}
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


# -- rendering: one dialect per trace ------------------------------------------------------------------

def _v(v: Any) -> dict[str, Any]:
    t = type(v)
    if t is str:
        return {"stringValue": v}
    if t is bool:
        return {"boolValue": v}
    if t is int:
        return {"intValue": str(v)}
    if t is float:
        return {"doubleValue": v}
    if t in (list, tuple):
        return {"arrayValue": {"values": [_v(x) for x in v]}}
    raise TypeError(f"attribute value {v!r}")


def _attrs(d: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _v(v)} for k, v in d.items() if v is not None]


def _span(trace_id: str, span_id: str, parent: str | None, name: str, kind: int, start: int, end: int,
          attrs: dict[str, Any], error: str | None = None, message: str = "", events: list | None = None,
          ok: bool = False) -> dict[str, Any]:
    s: dict[str, Any] = {"traceId": trace_id, "spanId": span_id}
    if parent:
        s["parentSpanId"] = parent
    s.update(name=name, kind=kind, startTimeUnixNano=str(start), endTimeUnixNano=str(end), attributes=_attrs(attrs))
    if events:
        s["events"] = events
    s["status"] = {"code": 2, "message": message or error or "error"} if error else ({"code": 1} if ok else {})
    return s


def _exception(t: int, etype: str, message: str) -> list[dict[str, Any]]:
    return [{"timeUnixNano": str(t), "name": "exception",
             "attributes": _attrs({"exception.type": etype, "exception.message": message})}]


def _digest(name: str, args: str) -> str:
    return hashlib.sha256(f"{name}\x00{args}".encode()).hexdigest()[:10]


_ERR_MSG = {"429": "Rate limit reached for requests", "500": "The server had an error processing your request"}
_SCOPES = {"genai": "opentelemetry.instrumentation.genai", "genai_old": "opentelemetry.instrumentation.openai_v2",
           "openinference": "openinference.instrumentation", "openllmetry": "opentelemetry.instrumentation.traceloop",
           "langfuse": "langfuse-sdk", "mlflow": "mlflow.tracing", "ours": "agentobs"}


class Renderer:
    """Spans of one trace in its dialect: (dialect, container, span dict). The ids of the spans below a run's
    root come from a stream seeded by the trace id, so rendering never moves the planner's stream."""

    def __init__(self) -> None:
        self.ids = random.Random(0)

    def new_id(self) -> str:
        return f"{self.ids.getrandbits(64):016x}"

    def trace(self, tr: Trace) -> Iterator[tuple[str, str, dict[str, Any]]]:
        self.ids.seed(int(tr.trace_id, 16))
        parent = None
        if tr.container == "http":
            parent = tr.container_id
            err = "500" if tr.http_status >= 500 else None
            yield "", "http", _span(tr.trace_id, parent, None, f"POST {tr.route}", SERVER, tr.start, tr.end, {
                "http.request.method": "POST", "http.route": tr.route, "url.path": tr.route, "url.scheme": "https",
                "server.address": f"{tr.runs[0].agent.service}.acme.internal", "server.port": 443,
                "http.response.status_code": tr.http_status, "network.protocol.version": "1.1",
                "user_agent.original": "acme-web/4.2 (+https://acme.example)",
                "client.address": f"10.{tr.start % 250}.{tr.start // 7 % 250}.{tr.start // 13 % 250}"}, error=err)
        elif tr.container == "job":
            parent = tr.container_id
            yield "", "job", _span(tr.trace_id, parent, None, "agent-jobs process", CONSUMER, tr.start, tr.end, {
                "messaging.system": "rabbitmq", "messaging.operation.type": "process",
                "messaging.destination.name": "agent-jobs", "messaging.message.id": tr.container_id[:12]})
        for run in tr.runs:
            dialect = "ours" if run.ours else tr.dialect
            yield from ((dialect, "", s) for s in getattr(self, f"_{dialect}")(tr.trace_id, parent, run))

    # -- OpenTelemetry GenAI, current names (and ours, with agentobs attributes) --
    def _genai(self, tid: str, parent: str | None, run: Run, ours: bool = False) -> Iterator[dict[str, Any]]:
        m, root = run.model, run.root_id
        attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": run.agent.name,
                 "gen_ai.provider.name": m.provider, "gen_ai.request.model": m.name,
                 "gen_ai.conversation.id": run.conversation}
        if ours:
            tools = sum(len(s.tools) for s in run.steps)
            tokens = sum(c.tin + c.tout for s in run.steps for c in s.calls)
            attrs.update({"agentobs.task.id": f"task-{run.index:07d}", "agentobs.resumed": False,
                          "agentobs.stop_reason": run.stop_reason, "agentobs.status": "stopped",
                          "agentobs.outcome": "completed" if run.stop_reason == "done" else None,
                          "agentobs.steps": len(run.steps), "agentobs.tool_calls": tools, "agentobs.tokens": tokens})
        err = None if run.success or ours else "agent_failed"
        yield _span(tid, root, parent, f"invoke_agent {run.agent.name}", INTERNAL, run.start, run.end, attrs,
                    error=err, message="the agent gave up" if err else "")
        for k, step in enumerate(run.steps):
            under = root
            if ours:
                under = self.new_id()
                t0, t1 = step.calls[0].start, max([step.calls[-1].end] + [t.end for t in step.tools])
                yield _span(tid, under, root, "agentobs.step", INTERNAL, t0, t1, {
                    "agentobs.step.index": k + 1, "agentobs.step.progress": bool(step.tools),
                    "agentobs.step.stalls": 0, "agentobs.step.outcome": "ok",
                    "agentobs.step.reply_type": "tool_calls" if step.tools else "final"})
            for c in step.calls:
                a = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": m.provider,
                     "gen_ai.request.model": m.name, "server.address": m.host}
                if c.error:
                    a["error.type"] = c.error
                else:
                    a.update({"gen_ai.response.model": m.name, "gen_ai.usage.input_tokens": c.tin,
                              "gen_ai.usage.output_tokens": c.tout,
                              "gen_ai.usage.cache_read.input_tokens": c.cread if m.cache_read else None,
                              "gen_ai.usage.cache_creation.input_tokens": c.cwrite if m.cache_write else None,
                              "gen_ai.response.finish_reasons": [c.finish]})
                yield _span(tid, self.new_id(), under, f"chat {m.name}", CLIENT, c.start, c.end, a, error=c.error,
                            message=_ERR_MSG.get(c.error or "", ""))
            for tc in step.tools:
                a = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tc.name,
                     "gen_ai.tool.call.id": tc.call_id, "gen_ai.tool.type": "function"}
                if ours:
                    a.update({"agentobs.tool.args_digest": _digest(tc.name, tc.args),
                              "agentobs.tool.effect": TOOLS[tc.name][0],
                              "agentobs.tool.result_status": "error" if tc.error else "ok",
                              "agentobs.tool.attempts": 1})
                elif run.capture:
                    a["gen_ai.tool.call.arguments"] = tc.args
                if tc.error:
                    a["error.type"] = tc.error
                yield _span(tid, self.new_id(), under, f"execute_tool {tc.name}", INTERNAL, tc.start, tc.end, a,
                            error=tc.error)

    def _ours(self, tid: str, parent: str | None, run: Run) -> Iterator[dict[str, Any]]:
        return self._genai(tid, parent, run, ours=True)

    # -- OpenTelemetry GenAI before 1.37 --
    def _genai_old(self, tid: str, parent: str | None, run: Run) -> Iterator[dict[str, Any]]:
        m, root = run.model, run.root_id
        err = None if run.success else "agent_failed"
        yield _span(tid, root, parent, f"invoke_agent {run.agent.name}", INTERNAL, run.start, run.end, {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": run.agent.name, "gen_ai.system": m.system,
            "gen_ai.request.model": m.name}, error=err)
        for step in run.steps:
            for c in step.calls:
                a = {"gen_ai.operation.name": "chat", "gen_ai.system": m.system, "gen_ai.request.model": m.name,
                     "server.address": m.host}
                if c.error:
                    a["error.type"] = c.error
                else:
                    a.update({"gen_ai.response.model": m.name, "gen_ai.usage.prompt_tokens": c.tin,
                              "gen_ai.usage.completion_tokens": c.tout,
                              "gen_ai.response.finish_reasons": [c.finish]})
                yield _span(tid, self.new_id(), root, f"chat {m.name}", CLIENT, c.start, c.end, a, error=c.error)
            for tc in step.tools:
                yield _span(tid, self.new_id(), root, f"execute_tool {tc.name}", INTERNAL, tc.start, tc.end, {
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tc.name,
                    "gen_ai.tool.call.id": tc.call_id, "error.type": tc.error}, error=tc.error)

    # -- OpenInference (Phoenix) --
    def _openinference(self, tid: str, parent: str | None, run: Run) -> Iterator[dict[str, Any]]:
        m, root = run.model, run.root_id
        err = None if run.success else "AgentError"
        yield _span(tid, root, parent, run.agent.name, INTERNAL, run.start, run.end, {
            "openinference.span.kind": "AGENT", "agent.name": run.agent.name, "session.id": run.conversation,
            "input.value": "Help the customer with their request.", "input.mime_type": "text/plain"},
            error=err, events=_exception(run.end, "AgentError", "max turns exceeded") if err else None)
        chains = run.index % 2 == 0                  # a framework that wraps each step in a CHAIN span
        llm_name = {"openai": "ChatCompletion", "anthropic": "Messages"}.get(m.provider, "LLM")
        for k, step in enumerate(run.steps):
            under = root
            if chains:
                under = self.new_id()
                t0, t1 = step.calls[0].start, max([step.calls[-1].end] + [t.end for t in step.tools])
                yield _span(tid, under, root, "agent_step", INTERNAL, t0, t1, {"openinference.span.kind": "CHAIN",
                                                                                "graph.node.id": f"step_{k}"})
            for c in step.calls:
                a = {"openinference.span.kind": "LLM", "llm.model_name": m.name, "llm.provider": m.system,
                     "llm.system": m.system, "llm.invocation_parameters": '{"temperature":0.2}'}
                if not c.error:
                    a.update({"llm.token_count.prompt": c.tin, "llm.token_count.completion": c.tout,
                              "llm.token_count.total": c.tin + c.tout,
                              "llm.token_count.prompt_details.cache_read": c.cread or None,
                              "llm.token_count.prompt_details.cache_write": c.cwrite or None})
                ev = _exception(c.end, "RateLimitError" if c.error == "429" else "InternalServerError",
                                _ERR_MSG[c.error]) if c.error else None
                yield _span(tid, self.new_id(), under, llm_name, INTERNAL, c.start, c.end, a, error=c.error,
                            events=ev)
            for tc in step.tools:
                yield _span(tid, self.new_id(), under, tc.name, INTERNAL, tc.start, tc.end, {
                    "openinference.span.kind": "TOOL", "tool.name": tc.name, "tool_call.id": tc.call_id,
                    "tool.parameters": _schema(tc.name), "input.value": tc.args, "input.mime_type": "application/json"},
                    error=tc.error, events=_exception(tc.end, tc.error, "tool failed") if tc.error else None)

    # -- OpenLLMetry / Traceloop --
    def _openllmetry(self, tid: str, parent: str | None, run: Run) -> Iterator[dict[str, Any]]:
        m, root = run.model, run.root_id
        err = None if run.success else "AgentError"
        yield _span(tid, root, parent, f"{run.agent.name}.agent", INTERNAL, run.start, run.end, {
            "traceloop.span.kind": "agent", "traceloop.entity.name": run.agent.name,
            "traceloop.workflow.name": run.agent.name}, error=err)
        for step in run.steps:
            for c in step.calls:
                a = {"llm.request.type": "chat", "gen_ai.system": m.system, "gen_ai.request.model": m.name,
                     "llm.is_streaming": False, "traceloop.workflow.name": run.agent.name}
                if not c.error:
                    a.update({"gen_ai.response.model": m.name, "gen_ai.usage.prompt_tokens": c.tin,
                              "gen_ai.usage.completion_tokens": c.tout, "llm.usage.total_tokens": c.tin + c.tout,
                              "gen_ai.usage.cache_read_input_tokens": c.cread or None,
                              "gen_ai.usage.cache_creation_input_tokens": c.cwrite or None})
                yield _span(tid, self.new_id(), root, f"{m.system}.chat", CLIENT, c.start, c.end, a, error=c.error,
                            message=_ERR_MSG.get(c.error or "", ""))
            for tc in step.tools:
                yield _span(tid, self.new_id(), root, f"{tc.name}.tool", INTERNAL, tc.start, tc.end, {
                    "traceloop.span.kind": "tool", "traceloop.entity.name": tc.name,
                    "traceloop.workflow.name": run.agent.name,
                    "traceloop.entity.input": f'{{"args":[],"kwargs":{tc.args}}}'}, error=tc.error)

    # -- Langfuse (OTel-based SDK v3) --
    def _langfuse(self, tid: str, parent: str | None, run: Run) -> Iterator[dict[str, Any]]:
        m, root = run.model, run.root_id
        err = None if run.success else "AgentError"
        yield _span(tid, root, parent, run.agent.name, INTERNAL, run.start, run.end, {
            "langfuse.observation.type": "agent", "langfuse.trace.name": run.agent.name,
            "session.id": run.conversation, "langfuse.observation.level": "ERROR" if err else None,
            "langfuse.observation.status_message": "the agent gave up" if err else None}, error=err)
        for step in run.steps:
            for c in step.calls:
                a = {"langfuse.observation.type": "generation", "langfuse.observation.model.name": m.name,
                     "langfuse.observation.model.parameters": '{"temperature":0.2}'}
                if c.error:
                    a.update({"langfuse.observation.level": "ERROR",
                              "langfuse.observation.status_message": f"{c.error}: {_ERR_MSG[c.error]}"})
                else:
                    usage = {"input": c.tin - c.cread - c.cwrite, "output": c.tout}
                    if c.cread:
                        usage["input_cache_read"] = c.cread
                    if c.cwrite:
                        usage["input_cache_creation"] = c.cwrite
                    usage["total"] = c.tin + c.tout
                    a["langfuse.observation.usage_details"] = json.dumps(usage, separators=(",", ":"))
                yield _span(tid, self.new_id(), root, f"{m.system}-generation", INTERNAL, c.start, c.end, a,
                            error=c.error)
            for tc in step.tools:
                yield _span(tid, self.new_id(), root, tc.name, INTERNAL, tc.start, tc.end, {
                    "langfuse.observation.type": "tool", "langfuse.observation.input": tc.args,
                    "langfuse.observation.level": "ERROR" if tc.error else None,
                    "langfuse.observation.status_message": tc.error}, error=tc.error)

    # -- MLflow tracing over OTLP: attribute values are JSON-encoded --
    def _mlflow(self, tid: str, parent: str | None, run: Run) -> Iterator[dict[str, Any]]:
        m, root = run.model, run.root_id
        req = json.dumps(f"tr-{tid}")
        err = None if run.success else "AgentError"
        yield _span(tid, root, parent, run.agent.name, INTERNAL, run.start, run.end, {
            "mlflow.traceRequestId": req, "mlflow.spanType": '"AGENT"',
            "mlflow.spanInputs": '{"messages":[{"role":"user","content":"..."}]}'}, error=err,
            events=_exception(run.end, "AgentError", "the agent gave up") if err else None)
        for step in run.steps:
            for c in step.calls:
                a = {"mlflow.traceRequestId": req, "mlflow.spanType": '"CHAT_MODEL"',
                     "mlflow.llm.model": json.dumps(m.name), "mlflow.llm.provider": json.dumps(m.system)}
                if not c.error:
                    usage = {"input_tokens": c.tin, "output_tokens": c.tout, "total_tokens": c.tin + c.tout}
                    if c.cread:
                        usage["cache_read_input_tokens"] = c.cread
                    if c.cwrite:
                        usage["cache_creation_input_tokens"] = c.cwrite
                    a["mlflow.chat.tokenUsage"] = json.dumps(usage, separators=(",", ":"))
                yield _span(tid, self.new_id(), root, "Completions", INTERNAL, c.start, c.end, a, error=c.error,
                            events=_exception(c.end, "APIError", _ERR_MSG[c.error]) if c.error else None)
            for tc in step.tools:
                yield _span(tid, self.new_id(), root, tc.name, INTERNAL, tc.start, tc.end, {
                    "mlflow.traceRequestId": req, "mlflow.spanType": '"TOOL"', "mlflow.spanInputs": tc.args},
                    error=tc.error)


def _schema(tool: str) -> str:
    props = {p: {"type": {"bool": "boolean", "int": "integer", "ticket": "integer", "cents": "integer",
                          "lines": "array"}.get(kind, "string")} for p, kind in TOOLS[tool][1]}
    return json.dumps({"type": "object", "properties": props}, separators=(",", ":"))


# -- the file and its manifest -------------------------------------------------------------------------

RUN_COLUMNS = ("trace_id", "root_span_id", "run_index", "agent", "service", "dialect", "ours", "model", "provider",
               "model_priced", "model_calls", "failed_model_calls", "tool_calls", "tool_errors", "input_tokens",
               "output_tokens", "cache_read_tokens", "cache_creation_tokens", "max_input_tokens", "success",
               "stop_reason", "container", "runs_in_trace", "repeat", "max_consecutive_identical",
               "max_identical_calls", "tool_arguments_recorded", "conversation_id", "spans")


def _run_row(tr: Trace, run: Run, spans: int) -> list[Any]:
    calls = [c for s in run.steps for c in s.calls]
    ok = [c for c in calls if not c.error]
    tools = [(t.name, t.args) for s in run.steps for t in s.tools]
    longest = cur = 0
    for i, tc in enumerate(tools):
        cur = cur + 1 if i and tc == tools[i - 1] else 1
        longest = max(longest, cur)
    counts: dict[tuple[str, str], int] = {}
    for tc in tools:
        counts[tc] = counts.get(tc, 0) + 1
    return [tr.trace_id, run.root_id, run.index, run.agent.name, run.agent.service,
            "genai" if run.ours else tr.dialect, run.ours, run.model.name, run.model.provider, run.model.priced,
            len(calls), len(calls) - len(ok), len(tools), sum(1 for s in run.steps for t in s.tools if t.error),
            sum(c.tin for c in ok), sum(c.tout for c in ok), sum(c.cread for c in ok), sum(c.cwrite for c in ok),
            max((c.tin for c in ok), default=0), run.success, run.stop_reason, tr.container, len(tr.runs), run.repeat,
            longest, max(counts.values(), default=0), _arguments_seen(tr, run), run.conversation, spans]


def _arguments_seen(tr: Trace, run: Run) -> bool:
    """Whether the tool spans carry the call arguments (or our digest of them): repeats are derivable."""
    if run.ours:
        return True
    return {"genai": run.capture, "genai_old": False}.get(tr.dialect, True)


def generate(out: str | os.PathLike[str], spans: int, *, seed: int = 1, dialects: str = "all",
             manifest: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Writes at least ``spans`` spans (whole traces) to ``out`` and the manifest; returns the manifest's totals."""
    if dialects not in ("all", "genai"):
        raise ValueError(f"dialects must be 'all' or 'genai', not {dialects!r}")
    if spans < 1:
        raise ValueError("spans must be at least 1")
    out = Path(out)
    man = Path(manifest) if manifest else out.with_name(out.name.split(".")[0] + "-manifest.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    planner = Planner(seed, dialects)
    renderer = Renderer()
    totals: dict[str, Any] = {"spans": 0, "traces": 0, "runs": 0, "model_calls": 0, "failed_model_calls": 0,
                              "tool_calls": 0, "tool_errors": 0, "input_tokens": 0, "output_tokens": 0,
                              "cache_read_tokens": 0, "cache_creation_tokens": 0, "successful_runs": 0,
                              "http_traces": 0, "job_traces": 0, "two_run_traces": 0, "lines": 0}
    by_dialect: dict[str, int] = {}
    by_model: dict[str, int] = {}
    tmp_out = tempfile.NamedTemporaryFile("w", dir=out.parent, prefix=out.name, suffix=".partial", delete=False,
                                          encoding="utf-8")
    tmp_rows = tempfile.TemporaryFile("w+", encoding="utf-8")
    buffer: dict[str, dict[str, list[dict[str, Any]]]] = {}
    buffered = 0
    try:
        with tmp_out:
            while totals["spans"] < spans:
                tr = planner.trace()
                per_run = {r.root_id: 0 for r in tr.runs}
                run_of: dict[str, str] = {}
                for dialect, container, s in renderer.trace(tr):
                    service = tr.runs[0].agent.service
                    scope = _SCOPES[dialect] if dialect else "acme.http" if container == "http" else "acme.jobs"
                    buffer.setdefault(service, {}).setdefault(scope, []).append(s)
                    buffered += 1
                    totals["spans"] += 1
                    if not container:
                        rid = s["spanId"] if s["spanId"] in per_run else run_of[s["parentSpanId"]]
                        run_of[s["spanId"]] = rid
                        per_run[rid] += 1
                    if buffered >= BATCH:
                        _flush(tmp_out, buffer)
                        totals["lines"] += 1
                        buffer, buffered = {}, 0
                totals["traces"] += 1
                totals["http_traces"] += tr.container == "http"
                totals["job_traces"] += tr.container == "job"
                totals["two_run_traces"] += len(tr.runs) > 1
                for run in tr.runs:
                    row = _run_row(tr, run, per_run[run.root_id])
                    r = dict(zip(RUN_COLUMNS, row))
                    totals["runs"] += 1
                    totals["successful_runs"] += bool(r["success"])
                    for k in ("model_calls", "failed_model_calls", "tool_calls", "tool_errors", "input_tokens",
                              "output_tokens", "cache_read_tokens", "cache_creation_tokens"):
                        totals[k] += r[k]
                    by_dialect[r["dialect"]] = by_dialect.get(r["dialect"], 0) + 1
                    by_model[r["model"]] = by_model.get(r["model"], 0) + r["model_calls"]
                    tmp_rows.write(json.dumps(row, separators=(",", ":")) + "\n")
            if buffered:
                _flush(tmp_out, buffer)
                totals["lines"] += 1
        head = {"schema_version": MANIFEST_SCHEMA, "generator": "bench.realistic", "seed": seed,
                "dialects": dialects, "traces_file": out.name, "totals": totals, "runs_by_dialect": by_dialect,
                "model_calls_by_model": by_model,
                "models": {m.name: {"provider": m.provider, "priced_by_genai_prices": m.priced} for m in
                           MODELS.values()},
                "token_semantics": "input_tokens include cache_read and cache_creation tokens (GenAI conventions)",
                "run_columns": list(RUN_COLUMNS)}
        tmp_man = man.with_name(man.name + ".partial")
        with open(tmp_man, "w", encoding="utf-8") as f:
            text = json.dumps(head, indent=1)
            f.write(text[:-2] + ',\n "run_rows": [\n')
            tmp_rows.seek(0)
            for i, line in enumerate(tmp_rows):
                f.write(("  " if i == 0 else ",\n  ") + line.rstrip("\n"))
            f.write("\n ]\n}\n")
        os.replace(tmp_out.name, out)
        os.replace(tmp_man, man)
    except BaseException:
        Path(tmp_out.name).unlink(missing_ok=True)
        raise
    finally:
        tmp_rows.close()
    return {**totals, "manifest": str(man)}


def _flush(f: Any, buffer: dict[str, dict[str, list[dict[str, Any]]]]) -> None:
    req = {"resourceSpans": [
        {"resource": {"attributes": _attrs({"service.name": service, "service.version": "2026.1",
                                            "deployment.environment.name": "prod",
                                            "telemetry.sdk.language": "python",
                                            "telemetry.sdk.name": "opentelemetry"})},
         "scopeSpans": [{"scope": {"name": scope}, "spans": spans} for scope, spans in scopes.items()]}
        for service, scopes in buffer.items()]}
    f.write(json.dumps(req, separators=(",", ":")))
    f.write("\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.realistic", description=__doc__.split("\n\n")[0])
    ap.add_argument("--spans", type=int, required=True, help="at least this many spans (whole traces)")
    ap.add_argument("--out", required=True, help="OTLP JSON lines file to write (replaced)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dialects", choices=("all", "genai"), default="all")
    ap.add_argument("--manifest", help="default: <out stem>-manifest.json next to the file")
    a = ap.parse_args(argv)
    if a.spans < 1:
        ap.error("--spans must be at least 1")
    t0 = time.perf_counter()
    totals = generate(a.out, a.spans, seed=a.seed, dialects=a.dialects, manifest=a.manifest)
    dt = time.perf_counter() - t0
    size = os.path.getsize(a.out)
    print(f"{totals['spans']:,} spans, {totals['runs']:,} runs, {totals['traces']:,} traces -> {a.out} "
          f"({size / 1e6:.1f} MB, {size / totals['spans']:.0f} B/span) in {dt:.1f} s; "
          f"ground truth: {totals['manifest']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
