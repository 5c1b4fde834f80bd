"""What every dialect driver shares: span capture, the tool and sub-agent logs, the HTTP shapes, the truth.

A driver (``gen_<name>.py``, run inside its own venv by ``generate.py``) builds a ``Script`` of replies per
run key, starts the ``ScriptedServer``, and runs its framework once per run inside ``rec.run(key, shape)``.
Tools call ``rec.tool(name, args)`` (and raise for the scripted tool error). Afterwards ``rec.write(...)``
writes the OTLP JSON lines fixture and the truth file. The truth's figures come from the server's log and
the tool log only; the captured spans are used only to name the run's trace id and top span.
"""
from __future__ import annotations

import json
import os
import sys
import threading
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

from server import Forever, Reply, Script, ScriptedServer, call, stamp  # noqa: F401  (re-exported for the drivers)

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
FIXTURES = HERE / "fixtures"
DUMMY_KEY = "sk-dummy-not-a-real-key"


def quiet_environment() -> None:
    """No hosted service: dummy keys, every framework's own telemetry off, short timeouts."""
    env = {
        "OPENAI_API_KEY": DUMMY_KEY, "TRACELOOP_TELEMETRY": "false",
        "LANGCHAIN_TRACING_V2": "false", "LANGSMITH_TRACING": "false", "LANGCHAIN_TRACING": "false",
        "MLFLOW_ENABLE_TELEMETRY": "false", "DO_NOT_TRACK": "1", "MLFLOW_DISABLE_TELEMETRY": "true",
        "LOGFIRE_SEND_TO_LOGFIRE": "false", "LANGFUSE_TRACING_ENVIRONMENT": "fixtures", "ANONYMIZED_TELEMETRY": "false",
        "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
    }
    for k, v in env.items():
        os.environ[k] = v
    for k in ("OPENAI_BASE_URL", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
              "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"):
        os.environ.pop(k, None)
    import socket
    socket.setdefaulttimeout(20)


def encoder() -> Callable:
    """agentobs.telemetry.otlp_json.encode_request; loaded from its file when agentobs's own dependencies are not
    installed (a venv whose framework pins an older OpenTelemetry: the module needs only the OTel SDK)."""
    try:
        from agentobs.telemetry.otlp_json import encode_request
    except ImportError:
        import importlib.util
        spec = importlib.util.spec_from_file_location("_otlp_json", REPO / "agentobs" / "telemetry" / "otlp_json.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        encode_request = mod.encode_request
    return encode_request


# -- span capture ------------------------------------------------------------------------------------

class MemoryCapture:
    """A TracerProvider with an InMemorySpanExporter behind a SimpleSpanProcessor (set as the global one)."""

    def __init__(self, service: str, *, set_global: bool = True):
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        if set_global:
            trace.set_tracer_provider(self.provider)

    def flush(self) -> None:
        self.provider.force_flush()

    def records(self) -> list[tuple[dict, dict, dict]]:
        """(resource, scope, span) in OTLP JSON form, in the order the spans ended."""
        encode_request = encoder()
        out = []
        for s in self.exporter.get_finished_spans():
            req = encode_request([s])
            rs = req["resourceSpans"][0]
            ss = rs["scopeSpans"][0]
            out.append((rs.get("resource", {}), ss.get("scope", {}), ss["spans"][0]))
        return out


# -- logs ------------------------------------------------------------------------------------------------

class Recorder:
    """The tool-execution log, the sub-agent log, and which spans ended during which run.

    ``versions`` replaces the installed-package look-up (a JavaScript fixture's versions come from its
    node_modules), ``runtime`` names the interpreter (default: this Python) and ``paths`` maps more folders to
    the labels they get in the committed fixture (scrubbed like the venv's). ``answer_tools`` names the tools
    through which the framework's model gives its final answer (smolagents' ``final_answer``): a reply that calls
    only those is a final answer, and they are not the run's tool calls.
    """

    def __init__(self, name: str, capture: Any, script: Script, *, records_tokens: bool = True,
                 packages: tuple[str, ...] = (), notes: tuple[str, ...] = (),
                 versions: dict[str, str] | None = None, runtime: dict[str, str] | None = None,
                 paths: dict[str, str] | None = None, answer_tools: tuple[str, ...] = ()):
        self.name, self.capture, self.script = name, capture, script
        self.answer_tools = answer_tools
        self.records_tokens = records_tokens
        self.packages = packages
        self.fixed_versions = versions
        self.runtime = runtime or {"python": sys.version.split()[0]}
        self.paths = paths or {}
        self.current: str | None = None
        self.tools: list[dict] = []
        self.agents: list[dict] = []
        self.runs: list[dict] = []
        self.open: dict[str, dict] = {}
        self.notes: list[str] = list(notes)
        self.lock = threading.Lock()

    # tools call this; it raises for a scripted tool failure
    def tool(self, name: str, args: dict, *, fail: bool = False, run: str | None = None) -> None:
        with self.lock:
            self.tools.append({"run": run or self.current, "tool": name, "args": args, "error": fail,
                               "seq": stamp()})
        if fail:
            raise RuntimeError(f"{name} failed (scripted tool error)")

    def sub_agent(self, name: str, how: str = "agent_tool", *, run: str | None = None) -> None:
        """A nested agent started: ``how`` is "handoff" or "agent_tool" (an agent called from a tool)."""
        with self.lock:
            self.agents.append({"run": run or self.current, "agent": name, "how": how})

    def start_run(self, key: str, shape: str, group: str | None = None) -> None:
        """A run begins (the spans of earlier runs must have reached the capture: flushed first)."""
        self.capture.flush()
        self.open[key] = {"shape": shape, "group": group or key, "before": len(self.capture.records())}

    def end_run(self, key: str, raised: str | None) -> None:
        """A run ended; ``raised`` is "Type: message" when it raised (its spans must have been flushed)."""
        o = self.open.pop(key)
        self.capture.flush()
        spans = [r[2] for r in self.capture.records()[o["before"]:]]
        self.runs.append({"run": key, "shape": o["shape"], "group": o["group"], "raised": raised,
                          "span_ids": [s["spanId"] for s in spans],
                          "trace_ids": sorted({s["traceId"] for s in spans})})

    @contextmanager
    def run(self, key: str, shape: str, group: str | None = None) -> Iterator[None]:
        """One agent run; ``group`` names the trace it shares with other runs (two_runs shapes)."""
        self.start_run(key, shape, group)
        prev, self.current = self.current, key
        error = None
        try:
            yield
        except Exception as e:  # a scripted failure ends the run; the driver goes on
            error = raised_text(e)
        finally:
            self.current = prev
            self.end_run(key, error)

    # -- outputs ---------------------------------------------------------------------------------------

    def truth(self) -> dict:
        recs = self.capture.records()
        by_id = {s["spanId"]: s for _, _, s in recs}
        bad = [e for e in self.script.log if e["status"] == 404]
        if bad:
            raise SystemExit(f"{self.name}: unscripted model requests {bad[:3]}")
        for k in self.script.runs:
            if self.script.pos[k] == 0:
                raise SystemExit(f"{self.name}: run {k} was never served")
        traces: dict[str, dict] = {}
        for r in self.runs:
            figures = run_figures(r["run"], self.script.log, self.tools, self.agents, self.records_tokens,
                                  r["raised"], self.answer_tools)
            own = [by_id[i] for i in r["span_ids"] if i in by_id]
            ids = {s["spanId"] for s in own}
            tops = sorted((s for s in own if s.get("parentSpanId") not in ids),
                          key=lambda s: int(s["startTimeUnixNano"]))
            trace_id = tops[0]["traceId"] if tops else None
            if len(r["trace_ids"]) > 1:
                self.notes.append(f"run {r['run']}: spans in {len(r['trace_ids'])} traces")
            entry = {"run_key": r["run"], "shape": r["shape"], "trace_id": trace_id,
                     "root_span_id": tops[0]["spanId"] if tops else None,
                     "root_span_name": tops[0]["name"] if tops else None,
                     "top_spans": len(tops), "raised": r["raised"], **figures}
            t = traces.setdefault(trace_id or r["group"], {"trace_id": trace_id, "shape": r["shape"], "runs": []})
            t["runs"].append(entry)
        out_traces = list(traces.values())
        for t in out_traces:
            t["n_runs"] = len(t["runs"])
        packages = self.fixed_versions if self.fixed_versions is not None else versions(self.packages)
        return {"dialect": self.name, "packages": packages, **self.runtime, "truth_version": 2,
                "tokens_recorded": self.records_tokens, "notes": self.notes, "traces": out_traces}

    def write(self, out_dir: Path = FIXTURES) -> None:
        out_dir.mkdir(parents=True, exist_ok=True)
        truth = self.truth()
        lines = otlp_lines(self.capture.records())
        jsonl = out_dir / f"{self.name}.jsonl"
        tmp = jsonl.with_suffix(".jsonl.tmp")
        tmp.write_text("".join(scrub(line, self.paths) + "\n" for line in lines), encoding="utf-8")
        tmp.replace(jsonl)
        tp = out_dir / f"{self.name}.truth.json"
        tmp = tp.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(truth, indent=1) + "\n", encoding="utf-8")
        tmp.replace(tp)
        n = sum(len(t["runs"]) for t in truth["traces"])
        print(f"{self.name}: {len(truth['traces'])} traces, {n} runs, {len(self.capture.records())} spans -> {jsonl}")


def raised_text(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e)[:120]}"


def logical_calls(served: list[dict]) -> list[list[dict]]:
    """The run's requests grouped into logical model calls: a request whose canonical body equals the previous
    request's, when that one got a non-200 answer, is another attempt of the same call."""
    calls: list[list[dict]] = []
    for e in served:
        prev = calls[-1][-1] if calls else None
        if prev is not None and prev["status"] != 200 and prev["body_hash"] == e["body_hash"]:
            calls[-1].append(e)
        else:
            calls.append([e])
    return calls


STOP_REASONS = ("done", "model_error", "tool_error", "turn_limit", "exception")


def asked_tools(e: dict, answer_tools: tuple[str, ...] = ()) -> list:
    """The tool calls a served reply asked for, less the framework's answer tools."""
    return [c for c in e["tool_calls"] if c[0] not in answer_tools]


def forced_answer(served: list[dict]) -> bool:
    """The last request offered no tools and the previous one, which did, was answered with tool calls: the
    framework took the tools away to get a final answer (its turn limit; its prompt for that answer may not be
    the agent's own system prompt, so the agent marker is not compared)."""
    if len(served) < 2 or served[-1].get("tools_offered", True):
        return False
    prev = served[-2]
    return prev["status"] == 200 and bool(prev["tool_calls"]) and prev.get("tools_offered", True)


def outcome(served: list[dict], tools: list[dict], raised: str | None,
            answer_tools: tuple[str, ...] = ()) -> tuple[str, str]:
    """(outcome, stop_reason) of a run from its requests and tool executions (both in log order) and whether
    it raised. See the README's truth section for the rules."""
    last = served[-1]
    final_answer = last["status"] == 200 and not asked_tools(last, answer_tools)
    if raised is None and final_answer:
        return ("failed", "turn_limit") if forced_answer(served) else ("success", "done")
    if logical_calls(served)[-1][-1]["status"] != 200:
        return "failed", "model_error"
    events = sorted([(e["seq"], "model", e) for e in served] + [(e["seq"], "tool", e) for e in tools],
                    key=lambda x: x[0])
    if events[-1][1] == "tool" and events[-1][2]["error"]:
        return "failed", "tool_error"
    if last["status"] == 200 and (asked_tools(last, answer_tools) or forced_answer(served)):
        return "failed", "turn_limit"
    return "failed", "exception"


def run_figures(key: str, served: list[dict], tools: list[dict], agents: list[dict], tokens: bool,
                raised: str | None = None, answer_tools: tuple[str, ...] = ()) -> dict:
    """The per-run truth from the server log and the tool log (never from spans)."""
    s = [e for e in served if e["run"] == key]
    ok = [e for e in s if e["status"] == 200]
    t = [e for e in tools if e["run"] == key]

    def total(field: str) -> int | None:
        vals = [e["usage"][field] for e in ok if e["usage"] and e["usage"][field] is not None]
        return sum(vals) if vals else None
    fps = [json.dumps([e["tool"], e["args"]], sort_keys=True) for e in t]
    counts: dict[str, int] = {}
    for f in fps:
        counts[f] = counts.get(f, 0) + 1
    consec, best = 0, 0
    for i, f in enumerate(fps):
        consec = consec + 1 if i and fps[i - 1] == f else 1
        best = max(best, consec)
    subs = [a for a in agents if a["run"] == key]
    calls = logical_calls(s)
    model_errors = sum(1 for c in calls if c[-1]["status"] != 200)
    tool_errors = sum(1 for e in t if e["error"])
    fed_back = sum(1 for e in t if e["error"] and any(m["seq"] > e["seq"] for m in s))
    result, stop = outcome(s, t, raised, answer_tools)
    return {
        "model_calls": len(calls), "attempts": len(s), "failed_attempts": sum(1 for e in s if e["status"] != 200),
        "tool_calls": len(t),
        "input_tokens": total("prompt_tokens") if tokens else None,
        "output_tokens": total("completion_tokens") if tokens else None,
        "cache_read_tokens": total("cached_tokens") if tokens else None,
        "reasoning_tokens": total("reasoning_tokens") if tokens else None,
        "served_input_tokens": total("prompt_tokens"), "served_output_tokens": total("completion_tokens"),
        "errors": model_errors + tool_errors, "model_errors": model_errors, "tool_errors": tool_errors,
        "tool_errors_fed_back": fed_back,
        "streamed": any(e["stream"] for e in s),
        "max_parallel_tool_calls": max((len(asked_tools(e, answer_tools)) for e in ok), default=0),
        "outcome": result, "stop_reason": stop,
        "max_identical_calls": max(counts.values()) if counts else 0,
        "max_consecutive_identical": best,
        "tools": [e["tool"] for e in t],
        "sub_agents": {"count": len(subs), "names": [a["agent"] for a in subs],
                       "handoffs": sum(1 for a in subs if a["how"] == "handoff")},
        "agents_served": sorted({e["agent"] for e in s if e.get("agent")}),
        "models": sorted({e["model"] for e in ok}),
    }


def otlp_lines(records: list[tuple[dict, dict, dict]]) -> list[str]:
    """One ExportTraceServiceRequest per trace (spans by resource and scope), traces by first start."""
    by_trace: dict[str, list] = {}
    for rec in records:
        by_trace.setdefault(rec[2]["traceId"], []).append(rec)
    order = sorted(by_trace, key=lambda t: min(int(r[2]["startTimeUnixNano"]) for r in by_trace[t]))
    lines = []
    for t in order:
        groups: dict[str, dict] = {}
        for res, scope, span in sorted(by_trace[t], key=lambda r: int(r[2]["startTimeUnixNano"])):
            rk = json.dumps(res, sort_keys=True)
            g = groups.setdefault(rk, {"resource": res, "scopes": {}})
            key = json.dumps(scope, sort_keys=True)
            g["scopes"].setdefault(key, {"scope": scope, "spans": []})["spans"].append(span)
        req = {"resourceSpans": [{"resource": g["resource"], "scopeSpans": list(g["scopes"].values())}
                                 for g in groups.values()]}
        lines.append(json.dumps(req, separators=(",", ":")))
    return lines


def scrub(text: str, paths: dict[str, str] | None = None) -> str:
    """No machine-specific paths in a committed fixture."""
    for path, label in (*(paths or {}).items(), (sys.prefix, "<venv>"), (sys.base_prefix, "<python>"),
                        (str(REPO), "<repo>"), (str(Path.home()), "<home>")):
        text = text.replace(path, label)
    return text


def versions(packages: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for p in packages:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            out[p] = "not installed"
    return out


# -- the HTTP shapes -------------------------------------------------------------------------------------

class HttpApp:
    """A WSGI server on 127.0.0.1 behind OpenTelemetry's WSGI middleware (real SERVER spans).

    ``GET /run?key=K`` runs one agent; ``GET /two?key=A&key=B`` runs two, one after the other, in one request.
    ``runner(key)`` runs the agent of run ``key``; the HTTP client is plain urllib (uninstrumented), so the
    SERVER span is the trace root.
    """

    def __init__(self, rec: Recorder, runner: Callable[[str], Any], tracer_provider: Any):
        from wsgiref.simple_server import WSGIRequestHandler, make_server

        from opentelemetry.instrumentation.wsgi import OpenTelemetryMiddleware
        self.rec, self.runner = rec, runner

        def app(environ: dict, start_response: Callable) -> list[bytes]:
            path = environ.get("PATH_INFO", "")
            keys = urllib.parse.parse_qs(environ.get("QUERY_STRING", "")).get("key", [])
            shape = "http" if path == "/run" else "two_runs"
            group = "+".join(keys)
            for k in keys:
                with rec.run(k, shape, group):
                    runner(k)
            start_response("200 OK", [("Content-Type", "text/plain")])
            return [b"ok"]

        class Quiet(WSGIRequestHandler):
            def log_message(self, *a: Any) -> None:
                pass
        self.httpd = make_server("127.0.0.1", 0, OpenTelemetryMiddleware(app, tracer_provider=tracer_provider),
                                 handler_class=Quiet)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> HttpApp:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def get(self, path: str, keys: list[str]) -> None:
        q = urllib.parse.urlencode([("key", k) for k in keys])
        url = f"http://127.0.0.1:{self.httpd.server_address[1]}{path}?{q}"
        with urllib.request.urlopen(url, timeout=120) as resp:
            resp.read()


def standard_script(prefix: str = "", *, model: str = "gpt-4o-mini-2024-07-18") -> dict[str, list[Reply]]:
    """The plain shape's runs, shared by every dialect (keys are stable across regenerations).

    tools:   two different tool calls, then the answer (cached and reasoning tokens served on the last reply)
    repeat:  lookup(A), lookup(A), lookup(B), lookup(A): 3 identical calls, 2 of them back to back
    tool_error: a tool that raises, then the answer (if the framework hands the error back to the model)
    model_error: one tool call, then the server answers HTTP 500 (clients are set to no retries)
    final:   the answer only
    """
    p = prefix
    return {
        f"{p}tools": [Reply(tool_calls=[call("get_weather", city="Paris")], prompt_tokens=120, completion_tokens=18),
                      Reply(tool_calls=[call("get_time", city="Paris")], prompt_tokens=160, completion_tokens=15),
                      Reply(content="It is sunny in Paris at 10:00.", prompt_tokens=200, completion_tokens=12,
                            cached_tokens=128, reasoning_tokens=6)],
        f"{p}repeat": [*(Reply(tool_calls=[call("lookup_order", order_id=order)], prompt_tokens=tokens,
                               completion_tokens=14)
                         for order, tokens in (("A-1", 110), ("A-1", 140), ("B-2", 170), ("A-1", 200))),
                       Reply(content="Order A-1 is delivered.", prompt_tokens=230, completion_tokens=9)],
        f"{p}tool_error": [Reply(tool_calls=[call("charge_card", amount=42)], prompt_tokens=90, completion_tokens=16),
                           Reply(content="The card could not be charged.", prompt_tokens=130, completion_tokens=10)],
        f"{p}model_error": [Reply(tool_calls=[call("get_weather", city="Rome")], prompt_tokens=100,
                                  completion_tokens=17),
                            Reply(status=500)],
        f"{p}final": [Reply(content="Hello! How can I help?", model="gpt-4o-2024-08-06", prompt_tokens=50,
                            completion_tokens=8, cached_tokens=32)],
    }


PLAIN = ("tools", "repeat", "tool_error", "model_error", "final")


def shape_script(prefix: str = "") -> dict[str, list[Reply]]:
    """The runs of the http shape (one run in a SERVER span) and the two_runs shape (two in one request)."""
    p = prefix
    return {
        f"{p}http": [Reply(tool_calls=[call("get_weather", city="Berlin")], prompt_tokens=115, completion_tokens=16),
                     Reply(content="Cloudy in Berlin.", prompt_tokens=150, completion_tokens=7)],
        f"{p}two-a": [Reply(tool_calls=[call("get_time", city="Oslo")], prompt_tokens=105, completion_tokens=15),
                      Reply(content="It is 09:00 in Oslo.", prompt_tokens=140, completion_tokens=9)],
        f"{p}two-b": [Reply(content="Goodbye!", model="gpt-4o-2024-08-06", prompt_tokens=60, completion_tokens=4)],
    }


# The shapes beyond plain/http/two_runs: run key -> shape. Each driver runs the ones its framework supports.
SHAPE_OF = {"retries": "retries", "retries_exhausted": "retries", "streaming": "streaming", "parallel": "parallel",
            "tool_error_fed_back": "tool_error", "tool_error_fatal": "tool_error", "turn_limit": "turn_limit",
            "multi_agent": "multi_agent"}
RETRIES = 2          # the client's retries in the retries shape (3 attempts at most)
TURN_LIMIT = 3       # the framework's turn / step / recursion limit in the turn_limit shape


def _turn(i: int) -> Reply:
    return Reply(tool_calls=[call("lookup_order", order_id=f"T-{i + 1}")], prompt_tokens=100 + 30 * i,
                 completion_tokens=14)


def extra_script(*keys: str) -> dict[str, list[Reply] | Forever]:
    """The scripts of the named runs of the shapes beyond plain (keys of ``SHAPE_OF``; stable across releases).

    retries:            get_weather(Madrid), then HTTP 500 twice, then the answer: one logical call retried twice
                        (the client's retries set to ``RETRIES``)
    retries_exhausted:  get_time(Lima), then HTTP 500 on every attempt: the model error after the retries
    streaming:          the ``tools`` run with the client streaming (usage in the last chunk when asked for)
    parallel:           one reply with two tool calls (get_weather Paris, get_time Paris), then the answer
    tool_error_fed_back, tool_error_fatal: the ``tool_error`` run with the framework set to the behaviour its
                        default ``tool_error`` run does not show
    turn_limit:         endless replies asking for one more lookup_order; the framework's limit set to TURN_LIMIT (a
                        request without tools, a framework's forced final answer at its limit, gets text)
    multi_agent:        the orchestrator calls ask_translator, whose tool runs the translator agent (the request
                        of the sub-agent carries the run marker in the tool's argument), then answers
    """
    std = standard_script()
    scripts: dict[str, list[Reply] | Forever] = {
        "retries": [Reply(tool_calls=[call("get_weather", city="Madrid")], prompt_tokens=110, completion_tokens=15),
                    Reply(status=500), Reply(status=500),
                    Reply(content="Sunny in Madrid.", prompt_tokens=150, completion_tokens=8)],
        "retries_exhausted": [Reply(tool_calls=[call("get_time", city="Lima")], prompt_tokens=105,
                                    completion_tokens=15)] + [Reply(status=500)] * (RETRIES + 1),
        "streaming": std["tools"],
        "parallel": [Reply(tool_calls=[call("get_weather", city="Paris"), call("get_time", city="Paris")],
                           prompt_tokens=130, completion_tokens=30),
                     Reply(content="Sunny and 10:00 in Paris.", prompt_tokens=190, completion_tokens=11)],
        "tool_error_fed_back": std["tool_error"],
        "tool_error_fatal": std["tool_error"],
        "turn_limit": Forever(make=_turn, forced=Reply(content="I could not finish within the step limit.",
                                                       prompt_tokens=260, completion_tokens=9)),
        "multi_agent": [Reply(tool_calls=[call("ask_translator", text="[run:multi_agent] Translate 'good morning'")],
                              prompt_tokens=125, completion_tokens=20),
                        Reply(content="bonjour", model="gpt-4o-2024-08-06", prompt_tokens=40, completion_tokens=3),
                        Reply(content="In French: bonjour.", prompt_tokens=170, completion_tokens=8)],
    }
    unknown = [k for k in keys if k not in scripts]
    if unknown:
        raise SystemExit(f"no script for run(s) {unknown}; known: {sorted(scripts)}")
    return {k: scripts[k] for k in keys}


def make_tools(rec: Recorder) -> dict[str, Callable]:
    """The plain Python tools every driver registers; each execution is logged by ``rec``."""

    def get_weather(city: str) -> str:
        """Current weather for a city."""
        rec.tool("get_weather", {"city": city})
        return f"sunny, 21C in {city}"

    def get_time(city: str) -> str:
        """Local time in a city."""
        rec.tool("get_time", {"city": city})
        return f"10:00 in {city}"

    def lookup_order(order_id: str) -> str:
        """Status of an order."""
        rec.tool("lookup_order", {"order_id": order_id})
        return f"order {order_id}: delivered"

    def charge_card(amount: int) -> str:
        """Charge the customer's card (always fails in the fixtures)."""
        rec.tool("charge_card", {"amount": amount}, fail=True)
        return "charged"
    return {f.__name__: f for f in (get_weather, get_time, lookup_order, charge_card)}


def prompt(key: str, text: str = "Please help.") -> str:
    return f"[run:{key}] {text}"


def run_shapes(rec: Recorder, run: Callable[[str], object], provider: object, *, extras: tuple[str, ...]) -> None:
    """The runs of a fixture whose driver is one function of the run's key: each plain script, the HTTP shapes (one
    run in a request, two in one), then each extra shape."""
    for key in PLAIN:
        with rec.run(key, "plain"):
            run(key)
    with HttpApp(rec, run, provider) as app:
        app.get("/run", ["http"])
        app.get("/two", ["two-a", "two-b"])
    for key in extras:
        with rec.run(key, SHAPE_OF[key]):
            run(key)
