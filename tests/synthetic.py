"""Synthetic traces with a known truth, for the structural tests (runs by structure, logical calls).

A trace is a tree of ``Node``s laid out in time depth-first (children one after the other inside their parent),
written as OTLP JSON lines. A node marked ``dropped`` is left out of the output while its children keep its span
id as their parent: a root that never arrived. ``Flavor`` writes a role in one span dialect: the current GenAI
names, OpenInference, or none at all (attribute keys no dialect knows, read by structure alone).
"""
from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field

_ids = itertools.count(1)


@dataclass
class Node:
    name: str
    attrs: dict = field(default_factory=dict)
    children: list[Node] = field(default_factory=list)
    error: bool = False
    kind: int = 1                  # OTLP span kind: 1 internal, 2 server, 3 client
    dropped: bool = False
    span_id: str = ""

    def __post_init__(self) -> None:
        self.span_id = f"{next(_ids):016x}"

    def add(self, *nodes: Node) -> Node:
        self.children.extend(nodes)
        return self


@dataclass(frozen=True)
class Flavor:
    """How a role is written: ``genai``, ``openinference`` or ``bare`` (structure only)."""
    name: str

    def agent(self, name: str, **extra: object) -> Node:
        if self.name == "openinference":
            return Node(name, {"openinference.span.kind": "AGENT", "agent.name": name, **extra})
        if self.name == "bare":
            return Node(f"run {name}", {"myfw.agent": name, **extra})
        return Node(f"invoke_agent {name}", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name,
                                             **extra})

    def chain(self, name: str) -> Node:
        if self.name == "openinference":
            return Node(name, {"openinference.span.kind": "CHAIN"})
        return Node(name, {"gen_ai.operation.name": "invoke_workflow"} if self.name == "genai" else {})

    def chat(self, model: str, tokens: tuple[int, int] | None, *, error: bool = False) -> Node:
        a: dict = {}
        if self.name == "openinference":
            a = {"openinference.span.kind": "LLM", "llm.model_name": model}
            if tokens:
                a |= {"llm.token_count.prompt": tokens[0], "llm.token_count.completion": tokens[1]}
        elif self.name == "bare":
            a = {"myfw.llm.model": model}
            if tokens:
                a |= {"myfw.usage.input_tokens": tokens[0], "myfw.usage.output_tokens": tokens[1]}
            elif error:
                a |= {"myfw.usage.input_tokens": None}
        else:
            a = {"gen_ai.operation.name": "chat", "gen_ai.request.model": model}
            if tokens:
                a |= {"gen_ai.usage.input_tokens": tokens[0], "gen_ai.usage.output_tokens": tokens[1]}
        return Node(f"chat {model}" if self.name != "bare" else "llm", {k: v for k, v in a.items() if v is not None},
                    error=error)

    def tool(self, name: str, args: dict, *, error: bool = False) -> Node:
        text = json.dumps(args, sort_keys=True)
        if self.name == "openinference":
            a = {"openinference.span.kind": "TOOL", "tool.name": name, "input.value": text}
        elif self.name == "bare":
            a = {"myfw.tool.name": name, "myfw.tool.arguments": text}
        else:
            a = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, "gen_ai.tool.call.arguments": text}
        return Node(f"execute_tool {name}" if self.name != "bare" else "tool", a, error=error)


def http_server(route: str = "/run") -> Node:
    return Node(f"GET {route}", {"http.method": "GET", "http.route": route}, kind=2)


def http_client(status: int = 200) -> Node:
    return Node("POST", {"http.request.method": "POST", "http.response.status_code": status}, kind=3,
                error=status >= 500)


def otlp_lines(traces: list[Node], *, service: str = "synthetic", t0: int = 1_700_000_000_000_000_000) -> str:
    """One ExportTraceServiceRequest line per trace; each trace's spans laid out from its own start."""
    lines = []
    for k, root in enumerate(traces):
        trace_id = f"{k + 1:032x}"
        spans: list[dict] = []
        _layout(root, None, t0 + k * 10_000_000_000, trace_id, spans)
        req = {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name",
                                                               "value": {"stringValue": service}}]},
                                  "scopeSpans": [{"scope": {"name": "synthetic"}, "spans": spans}]}]}
        lines.append(json.dumps(req))
    return "\n".join(lines) + "\n"


def _value(v: object) -> dict:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    return {"stringValue": str(v)}


def _layout(node: Node, parent: str | None, start: int, trace_id: str, out: list[dict]) -> int:
    """Writes ``node`` and its subtree starting at ``start``; returns its end."""
    t = start + 1_000_000
    for c in node.children:
        t = _layout(c, node.span_id, t, trace_id, out) + 1_000_000
    end = t + 1_000_000
    if not node.dropped:
        span = {"traceId": trace_id, "spanId": node.span_id, "name": node.name, "kind": node.kind,
                "startTimeUnixNano": str(start), "endTimeUnixNano": str(end),
                "attributes": [{"key": k, "value": _value(v)} for k, v in node.attrs.items()],
                "status": {"code": 2} if node.error else {}}
        if parent is not None:
            span["parentSpanId"] = parent
        out.append(span)
    return end
