"""One planned trace as OTLP JSON spans, in its dialect (attribute names as each project's specification has them)."""
from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator
from typing import Any

from .plan import Run, Trace
from .world import TOOLS

INTERNAL, SERVER, CLIENT, CONSUMER = 1, 2, 3, 5


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


def attributes(d: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _v(v)} for k, v in d.items() if v is not None]


def _span(trace_id: str, span_id: str, parent: str | None, name: str, kind: int, start: int, end: int,
          attrs: dict[str, Any], error: str | None = None, message: str = "", events: list | None = None,
          ok: bool = False) -> dict[str, Any]:
    s: dict[str, Any] = {"traceId": trace_id, "spanId": span_id}
    if parent:
        s["parentSpanId"] = parent
    s.update(name=name, kind=kind, startTimeUnixNano=str(start), endTimeUnixNano=str(end), attributes=attributes(attrs))
    if events:
        s["events"] = events
    s["status"] = {"code": 2, "message": message or error or "error"} if error else ({"code": 1} if ok else {})
    return s


def _exception(t: int, etype: str, message: str) -> list[dict[str, Any]]:
    return [{"timeUnixNano": str(t), "name": "exception",
             "attributes": attributes({"exception.type": etype, "exception.message": message})}]


def _digest(name: str, args: str) -> str:
    return hashlib.sha256(f"{name}\x00{args}".encode()).hexdigest()[:10]


_ERR_MSG = {"429": "Rate limit reached for requests", "500": "The server had an error processing your request"}
SCOPES = {"genai": "opentelemetry.instrumentation.genai", "genai_old": "opentelemetry.instrumentation.openai_v2",
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
