"""Hand-made OTLP JSON lines for the explorer's tests (unit/analysis/explorer/test_explorer.py and, in a real
browser, scenarios/explorer/test_html_browser.py): spans of any shape, and a run with a sub-agent."""
import json

T0 = 1_780_000_000_000_000_000
S = 10**9


def _value(v):
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, list):
        return {"arrayValue": {"values": [_value(x) for x in v]}}
    if isinstance(v, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": _value(x)} for k, x in v.items()]}}
    return {"stringValue": v}


def _span(trace, span, parent, name, t0, t1, attrs, *, error=None, events=()):
    s = {"traceId": trace, "spanId": span, "name": name, "kind": 1, "startTimeUnixNano": str(t0),
         "endTimeUnixNano": str(t1), "attributes": [{"key": k, "value": _value(v)} for k, v in attrs.items()],
         "status": {"code": 2, "message": error} if error else {"code": 0},
         "events": [{"name": n, "timeUnixNano": str(t), "attributes": [{"key": k, "value": _value(v)}
                                                                         for k, v in a.items()]} for n, t, a in events]}
    if parent:
        s["parentSpanId"] = parent
    return s


def _line(spans, resource=None):
    return json.dumps({"resourceSpans": [{"resource": {"attributes": [
        {"key": k, "value": _value(v)} for k, v in {"service.name": "desk", **(resource or {})}.items()]},
        "scopeSpans": [{"scope": {"name": "test"}, "spans": spans}]}]})


TRACE = "ab" * 16


def _nested_run():
    """A planner that calls a model, runs a researcher sub-agent (a failing tool call, a model call) and a tool."""
    def sid(n):
        return f"{n:016x}"
    return [
        _span(TRACE, sid(1), None, "invoke_agent planner", T0, T0 + 10 * S, {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner", "api_key": "sk-live-000",
            "app.note": "mail bob@example.com"}),
        _span(TRACE, sid(2), sid(1), "chat gpt-4o", T0 + 1 * S, T0 + 2 * S, {
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.provider.name": "openai",
            "gen_ai.usage.input_tokens": 1000, "gen_ai.usage.output_tokens": 200}),
        _span(TRACE, sid(3), sid(1), "invoke_agent researcher", T0 + 3 * S, T0 + 8 * S, {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "researcher"}),
        _span(TRACE, sid(4), sid(3), "execute_tool search", T0 + 4 * S, T0 + 5 * S, {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search", "error.type": "Timeout"},
            error="search timed out", events=[("retry", T0 + 4 * S + 500_000_000, {"attempt": 2})]),
        _span(TRACE, sid(5), sid(3), "chat gpt-4o", T0 + 5 * S, T0 + 6 * S + 250_000, {
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.provider.name": "openai",
            "gen_ai.usage.input_tokens": 50, "gen_ai.usage.output_tokens": 5, "gen_ai.usage.cost": 0.25}),
        _span(TRACE, sid(6), sid(1), "execute_tool write", T0 + 8500 * 10**6, T0 + 9 * S, {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "write"}),
    ]
