"""Inputs of every kind the analysis reads, of a given size, generated from one seeded population of agent traces.

Each trace is an agent run as the GenAI instrumentations leave it: an ``invoke_agent`` root, model calls (``chat``,
with token counts, a model, finish reasons) and tool calls (``execute_tool``, with arguments), in the shape each
format gives it: OTLP JSON lines, pretty-printed OTLP, a JSON array of requests, a Jaeger API v3 answer (as Jaeger
writes it, and pretty-printed as a proxy might pass it on), a Jaeger UI download, Zipkin JSON, the console
exporter's output, the collector's protobuf and zstd files, tau2-bench results and a list of OpenAI-style runs, a
labels file (JSON, CSV) and a Jaeger services list. ``make(kind, size, folder)`` writes one file of about ``size``
bytes (under a temporary name, then renamed) and returns its path.
"""
from __future__ import annotations

import json
import os
import random
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

SEED = 2026
START_NS = 1_780_000_000 * 10**9
MODELS = ("gpt-4.1", "gpt-4.1-mini", "claude-sonnet-4", "gemini-2.5-pro", "o3")
TOOLS = ("search_orders", "get_order", "refund", "lookup_customer", "send_email", "get_policy")
WORDS = ("order", "refund", "customer", "jacket", "damaged", "policy", "shipping", "address", "invoice", "store",
         "return", "size", "colour", "warranty", "receipt", "account")


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def _hex(rng: random.Random, digits: int) -> str:
    return f"{rng.getrandbits(digits * 4):0{digits}x}"


def traces(seed: int = SEED) -> Iterator[list[dict[str, Any]]]:
    """An endless stream of traces, each a list of plain spans (root first): ``trace``, ``span``, ``parent``,
    ``name``, ``kind`` (OTLP number), ``start``/``end`` (ns), ``attrs`` (plain values), ``service``."""
    rng = random.Random(seed)
    t = START_NS
    n = 0
    while True:
        n += 1
        trace, root = _hex(rng, 32), _hex(rng, 16)
        model = rng.choice(MODELS)
        spans = []
        clock = t
        calls = rng.randint(2, 8)
        for _ in range(calls):
            d = rng.randint(200, 3000) * 10**6
            spans.append({"trace": trace, "span": _hex(rng, 16), "parent": root, "name": f"chat {model}", "kind": 3,
                          "start": clock, "end": clock + d, "service": "support-agent", "attrs": {
                              "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
                              "gen_ai.request.model": model, "gen_ai.response.model": model,
                              "gen_ai.usage.input_tokens": rng.randint(500, 20000),
                              "gen_ai.usage.output_tokens": rng.randint(10, 800),
                              "gen_ai.response.finish_reasons": [rng.choice(["stop", "tool_calls"])],
                              "gen_ai.response.id": f"chatcmpl-{_hex(rng, 24)}"}})
            clock += d
            if rng.random() < 0.7:
                tool = rng.choice(TOOLS)
                d = rng.randint(5, 400) * 10**6
                spans.append({"trace": trace, "span": _hex(rng, 16), "parent": root, "name": f"execute_tool {tool}",
                              "kind": 1, "start": clock, "end": clock + d, "service": "support-agent", "attrs": {
                                  "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool,
                                  "gen_ai.tool.call.id": f"call_{_hex(rng, 20)}", "gen_ai.tool.type": "function",
                                  "gen_ai.tool.call.arguments": json.dumps({"query": _text(rng, 6),
                                                                            "id": rng.randint(1, 10**6)})}})
                clock += d
        root_span = {"trace": trace, "span": root, "parent": None, "name": "invoke_agent support", "kind": 1,
                     "start": t, "end": clock + 10**6, "service": "support-agent", "attrs": {
                         "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support",
                         "gen_ai.conversation.id": f"conv-{n}", "agentobs.task.id": f"task-{n}"}}
        yield [root_span, *spans]
        t += rng.randint(1, 30) * 10**9


# -- OTLP -----------------------------------------------------------------------------------------------------------

def _otlp_value(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, list):
        return {"arrayValue": {"values": [_otlp_value(x) for x in v]}}
    return {"stringValue": str(v)}


def _otlp_attrs(attrs: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _otlp_value(v)} for k, v in attrs.items()]


def otlp_request(spans: list[dict[str, Any]]) -> dict[str, Any]:
    out = []
    for s in spans:
        span = {"traceId": s["trace"], "spanId": s["span"], "name": s["name"], "kind": s["kind"],
                "startTimeUnixNano": str(s["start"]), "endTimeUnixNano": str(s["end"]),
                "attributes": _otlp_attrs(s["attrs"]), "status": {}}
        if s["parent"]:
            span["parentSpanId"] = s["parent"]
        out.append(span)
    return {"resourceSpans": [{"resource": {"attributes": _otlp_attrs({"service.name": spans[0]["service"]})},
                               "scopeSpans": [{"scope": {"name": "bench"}, "spans": out}]}]}


# -- other trace formats ----------------------------------------------------------------------------------------------

def _jaeger_tag(k: str, v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"key": k, "type": "bool", "value": v}
    if isinstance(v, int):
        return {"key": k, "type": "int64", "value": v}
    return {"key": k, "type": "string", "value": json.dumps(v) if isinstance(v, list) else str(v)}


def jaeger_trace(spans: list[dict[str, Any]]) -> dict[str, Any]:
    out = []
    for s in spans:
        tags = [_jaeger_tag(k, v) for k, v in s["attrs"].items()]
        tags.append({"key": "span.kind", "type": "string", "value": "client" if s["kind"] == 3 else "internal"})
        refs = ([{"refType": "CHILD_OF", "traceID": s["trace"], "spanID": s["parent"]}] if s["parent"] else [])
        out.append({"traceID": s["trace"], "spanID": s["span"], "operationName": s["name"], "references": refs,
                    "startTime": s["start"] // 1000, "duration": (s["end"] - s["start"]) // 1000, "tags": tags,
                    "logs": [], "processID": "p1", "warnings": None})
    return {"traceID": spans[0]["trace"], "spans": out,
            "processes": {"p1": {"serviceName": spans[0]["service"], "tags": []}}, "warnings": None}


def zipkin_spans(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for s in spans:
        z = {"traceId": s["trace"], "id": s["span"], "name": s["name"], "timestamp": s["start"] // 1000,
             "duration": (s["end"] - s["start"]) // 1000, "localEndpoint": {"serviceName": s["service"]},
             "tags": {k: json.dumps(v) if isinstance(v, list) else str(v) for k, v in s["attrs"].items()}}
        if s["kind"] == 3:
            z["kind"] = "CLIENT"
        if s["parent"]:
            z["parentId"] = s["parent"]
        out.append(z)
    return out


def _iso(ns: int) -> str:
    from datetime import UTC, datetime
    return datetime.fromtimestamp(ns // 10**9, UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{ns % 10**9 // 1000:06d}Z"


def console_spans(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"name": s["name"], "context": {"trace_id": "0x" + s["trace"], "span_id": "0x" + s["span"],
                                            "trace_state": "[]"},
             "kind": "SpanKind.CLIENT" if s["kind"] == 3 else "SpanKind.INTERNAL",
             "parent_id": "0x" + s["parent"] if s["parent"] else None, "start_time": _iso(s["start"]),
             "end_time": _iso(s["end"]), "status": {"status_code": "UNSET"}, "attributes": s["attrs"], "events": [],
             "links": [], "resource": {"attributes": {"service.name": s["service"]}, "schema_url": ""}}
            for s in spans]


# -- transcripts ----------------------------------------------------------------------------------------------------

def _messages(rng: random.Random, spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [{"role": "user", "content": _text(rng, 30)}]
    for s in spans[1:]:
        a = s["attrs"]
        if a["gen_ai.operation.name"] == "chat":
            msgs.append({"role": "assistant", "content": _text(rng, 40),
                         "usage": {"prompt_tokens": a["gen_ai.usage.input_tokens"],
                                   "completion_tokens": a["gen_ai.usage.output_tokens"]}})
        else:
            call = a["gen_ai.tool.call.id"]
            msgs[-1].setdefault("tool_calls", []).append({"id": call, "type": "function", "function": {
                "name": a["gen_ai.tool.name"], "arguments": a["gen_ai.tool.call.arguments"]}})
            msgs.append({"role": "tool", "tool_call_id": call, "content": _text(rng, 80)})
    return msgs


def tau2_simulation(rng: random.Random, n: int, spans: list[dict[str, Any]]) -> dict[str, Any]:
    msgs = _messages(rng, spans)
    for m in msgs:
        if "tool_call_id" in m:
            m["id"] = m.pop("tool_call_id")
    return {"id": f"sim-{n}", "task_id": str(n % 50), "trial": 0, "termination_reason": "agent_stop",
            "agent_cost": 0.01, "reward_info": {"reward": float(rng.random() < 0.7)}, "messages": msgs}


# -- writers ---------------------------------------------------------------------------------------------------------

def _write(path: Path, size: int, head: bytes, items: Iterator[bytes], sep: bytes, tail: bytes) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.partial")
    written = 0
    with open(tmp, "wb") as f:
        f.write(head)
        first = True
        for item in items:
            if not first:
                f.write(sep)
            f.write(item)
            first = False
            written += len(item) + len(sep)
            if written >= size:
                break
        f.write(tail)
    os.replace(tmp, path)


def _dumps(obj: Any, indent: int | None = None) -> bytes:
    return json.dumps(obj, indent=indent, separators=None if indent else (",", ":")).encode()


def _proto_records() -> Iterator[bytes]:
    from google.protobuf import json_format
    from opentelemetry.proto.trace.v1.trace_pb2 import TracesData
    for spans in traces():
        msg = json_format.ParseDict(otlp_request(spans), TracesData())
        data = msg.SerializeToString()
        yield struct.pack(">I", len(data)) + data


def _zstd_records() -> Iterator[bytes]:
    import zstandard
    comp = zstandard.ZstdCompressor()
    for spans in traces():
        data = comp.compress(_dumps(otlp_request(spans)) + b"\n")
        yield struct.pack(">I", len(data)) + data


def _labels_rows() -> Iterator[tuple[str, bool]]:
    rng = random.Random(SEED)
    while True:
        yield f"{_hex(rng, 32)}", rng.random() < 0.7


def _transcript_items(kind: str) -> Iterator[bytes]:
    rng = random.Random(SEED)
    for n, spans in enumerate(traces()):
        if kind == "tau2":
            yield _dumps(tau2_simulation(rng, n, spans))
        else:
            yield _dumps({"id": f"run-{n}", "agent": "support", "model": spans[1]["attrs"].get(
                "gen_ai.request.model", "gpt-4.1"), "success": rng.random() < 0.7, "messages": _messages(rng, spans)})


def _services() -> Iterator[bytes]:
    for n in range(1 << 62):
        yield json.dumps(f"service-{n:08d}").encode()


# kind -> (file name suffix, writer(path, size))
KINDS: dict[str, tuple[str, Callable[[Path, int], None]]] = {
    "otlp-lines": (".jsonl", lambda p, n: _write(p, n, b"", (_dumps(otlp_request(t)) for t in traces()), b"\n",
                                                 b"\n")),
    "otlp-pretty": (".json", lambda p, n: _write(p, n, b"", (_dumps(otlp_request(t), 2) for t in traces()), b"\n",
                                                 b"\n")),
    "otlp-array": (".json", lambda p, n: _write(p, n, b"[", (_dumps(otlp_request(t)) for t in traces()), b",",
                                                b"]\n")),
    "jaeger-answer": (".json", lambda p, n: _write(
        p, n, b'{"result":{"resourceSpans":[',
        (_dumps(rs) for t in traces() for rs in otlp_request(t)["resourceSpans"]), b",", b"]}}")),
    "jaeger-answer-late": (".json", lambda p, n: _write(
        p, n, b'{"took_ms":12,"result":{"resourceSpans":[',
        (_dumps(rs) for t in traces() for rs in otlp_request(t)["resourceSpans"]), b",", b"]}}")),
    "jaeger-answer-bad": (".json", lambda p, n: _write(
        p, n, b'{"result":{"resourceSpans":[',
        (_dumps(rs).replace(b'"name":"chat', b'"name":{"wrong":"type"},"was":"chat', 1) if i == 3 else _dumps(rs)
         for i, rs in enumerate(rs for t in traces() for rs in otlp_request(t)["resourceSpans"])), b",", b"]}}")),
    "jaeger-answer-pretty": (".json", lambda p, n: _write(
        p, n, b'{\n  "result": {\n    "resourceSpans": [\n',
        (_dumps(rs, 2) for t in traces() for rs in otlp_request(t)["resourceSpans"]), b",\n", b"\n]}}\n")),
    "jaeger-ui": (".json", lambda p, n: _write(p, n, b'{"data":[', (_dumps(jaeger_trace(t)) for t in traces()),
                                               b",", b'],"total":0,"limit":0,"offset":0,"errors":null}')),
    "zipkin": (".json", lambda p, n: _write(p, n, b"[", (_dumps(z) for t in traces() for z in zipkin_spans(t)), b",",
                                            b"]")),
    "console": (".txt", lambda p, n: _write(p, n, b"", (_dumps(c, 4) for t in traces() for c in console_spans(t)),
                                            b"\n", b"\n")),
    "proto": (".pb", lambda p, n: _write(p, n, b"", _proto_records(), b"", b"")),
    "zstd": (".jsonl.zst", lambda p, n: _write(p, n, b"", _zstd_records(), b"", b"")),
    "tau2": (".json", lambda p, n: _write(p, n, b'{"info":{"agent_info":{"implementation":"llm_agent","llm":'
                                                b'"gpt-4.1"}},"simulations":[', _transcript_items("tau2"), b",",
                                          b"]}")),
    "openai": (".json", lambda p, n: _write(p, n, b"[", _transcript_items("openai"), b",", b"]")),
    "labels-json": (".json", lambda p, n: _write(p, n, b"[", (_dumps({"run_id": r, "success": s})
                                                                for r, s in _labels_rows()), b",", b"]")),
    "labels-csv": (".csv", lambda p, n: _write(p, n, b"run_id,success\n", (f"{r},{str(s).lower()}".encode()
                                                                          for r, s in _labels_rows()), b"\n", b"\n")),
    "services": (".json", lambda p, n: _write(p, n, b'{"services":[', _services(), b",", b"]}")),
}


def make(kind: str, size: int, folder: str | os.PathLike[str]) -> Path:
    """The file of ``kind`` of about ``size`` bytes in ``folder`` (written once)."""
    suffix, writer = KINDS[kind]
    path = Path(folder) / f"memory-{kind}-{size}{suffix}"
    if not path.exists():
        writer(path, size)
    return path
