"""Small runs written as a user's exporter may write them, for the loaders' tests: an ``invoke_agent bot`` root and two
``chat m`` model calls under it, one request per run (scenarios/hostile_input/test_hostile_input.py gives each one
defect at a time; unit/analysis/spans/test_quality.py counts what ``check`` flags in them)."""
import json

_T0 = 1_796_053_745_000_000_000


def _bot_span(trace, span, name, parent=None, start=_T0, end=_T0 + 10 ** 9, **attrs):
    out = {"traceId": trace, "spanId": span, "name": name, "kind": 1, "startTimeUnixNano": str(start),
           "endTimeUnixNano": str(end),
           "attributes": [{"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}}
                          for k, v in attrs.items()]}
    if parent:
        out["parentSpanId"] = parent
    return out


def _bot_run(trace, tokens=100, chat_start=_T0, root_parent=None, root_start=_T0):
    chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.usage.input_tokens": tokens,
            "gen_ai.usage.output_tokens": 1}
    return [_bot_span(trace, "a" * 16, "invoke_agent bot", root_parent, start=root_start,
                      **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "bot"}),
            _bot_span(trace, "b" * 16, "chat m", "a" * 16, start=chat_start, **chat),
            _bot_span(trace, "c" * 16, "chat m", "a" * 16, **chat)]


def _bot_file(tmp_path, *runs, careful=False, name="bot.jsonl"):
    """One request per run; ``careful``: each written so that the fast path refuses it (a span kind by name beside
    one by number), to be read the careful way."""
    lines = []
    for spans in runs:
        if careful:
            spans = [dict(spans[0], kind="SPAN_KIND_INTERNAL"), *spans[1:]]
        lines.append(json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": spans}]}]}))
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path
