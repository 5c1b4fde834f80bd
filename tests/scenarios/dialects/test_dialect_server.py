"""The dialect fixtures' scripted server and truth rules (tests/dialects/server.py, common.py) with the real OpenAI
client: what a real client accepts (chat and Responses streams), how retries and timeouts are logged, and how
the truth groups attempts into logical calls and finds a run's stop reason. No framework is needed."""
from __future__ import annotations

import sys

import pytest
from locations import TESTS

openai = pytest.importorskip("openai")

sys.path.insert(0, str(TESTS / "dialects"))
from common import Forever, Reply, Script, ScriptedServer, call, outcome, run_figures  # noqa: E402

KEY = "sk-dummy-not-a-real-key"


def _client(srv: ScriptedServer, **kw: object) -> openai.OpenAI:
    return openai.OpenAI(base_url=srv.base_url, api_key=KEY, **{"max_retries": 0, "timeout": 10, **kw})


def _msgs(key: str) -> list[dict]:
    return [{"role": "system", "content": "[agent:assistant] hi"}, {"role": "user", "content": f"[run:{key}] go"}]


def test_chat_stream_is_what_the_client_assembles_with_usage_only_when_asked():
    script = Script({"s": [Reply(tool_calls=[call("get_weather", city="Paris"), call("get_time", city="Paris")]),
                           Reply(content="It is sunny in Paris today.", prompt_tokens=7, completion_tokens=3)]})
    with ScriptedServer(script) as srv:
        c = _client(srv)
        with c.chat.completions.stream(model="m", messages=_msgs("s")) as s:
            first = s.get_final_completion()
        chunks = list(c.chat.completions.create(model="m", messages=_msgs("s"), stream=True,
                                                stream_options={"include_usage": True}))
    calls = first.choices[0].message.tool_calls
    assert [(t.function.name, t.function.arguments) for t in calls] == [
        ("get_weather", '{"city": "Paris"}'), ("get_time", '{"city": "Paris"}')]
    assert first.choices[0].finish_reason == "tool_calls" and first.usage is None
    assert "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices) == "It is sunny in Paris today."
    assert chunks[-1].choices == [] and chunks[-1].usage.prompt_tokens == 7
    assert [e["usage"] is None for e in script.log] == [True, False]
    assert all(e["stream"] for e in script.log)


def test_responses_stream_parses_to_the_final_response_with_usage():
    script = Script({"r": [Reply(tool_calls=[call("lookup_order", order_id="A-1")], prompt_tokens=11),
                           Reply(content="Order A-1 is delivered.", completion_tokens=5)]})
    with ScriptedServer(script) as srv:
        c = _client(srv)
        with c.responses.stream(model="m", input="[run:r] go", instructions="[agent:x] hi") as s:
            first = s.get_final_response()
        with c.responses.stream(model="m", input="[run:r] go") as s:
            kinds = [e.type for e in s]
            second = s.get_final_response()
    assert first.output[0].type == "function_call" and first.output[0].name == "lookup_order"
    assert first.usage.input_tokens == 11
    assert second.output_text == "Order A-1 is delivered." and second.usage.output_tokens == 5
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert "response.output_text.delta" in kinds
    assert script.log[0]["agent"] == "x"


def test_retries_are_attempts_of_one_call_and_an_endless_script_never_ends():
    script = Script({"t": [Reply(tool_calls=[call("get_time", city="Oslo")]), Reply(status=500), Reply(status=500),
                           Reply(content="09:00")],
                     "x": [Reply(status=503)] * 3,
                     "f": Forever(make=lambda i: Reply(tool_calls=[call("lookup_order", order_id=f"T-{i}")]))})
    with ScriptedServer(script) as srv:
        c = _client(srv, max_retries=2)
        c.chat.completions.create(model="m", messages=_msgs("t"))
        c.chat.completions.create(model="m", messages=_msgs("t"))
        with pytest.raises(openai.InternalServerError):
            c.chat.completions.create(model="m", messages=_msgs("x"))
        for _ in range(5):
            c.chat.completions.create(model="m", messages=_msgs("f"))
    t = run_figures("t", script.log, [], [], True)
    assert (t["model_calls"], t["attempts"], t["failed_attempts"], t["model_errors"]) == (2, 4, 2, 0)
    assert (t["outcome"], t["stop_reason"]) == ("success", "done")
    x = run_figures("x", script.log, [], [], True, "InternalServerError: 503")
    assert (x["model_calls"], x["attempts"], x["model_errors"], x["stop_reason"]) == (1, 3, 1, "model_error")
    f = run_figures("f", script.log, [], [], True)
    assert f["model_calls"] == 5 and f["stop_reason"] == "turn_limit"


def test_a_held_answer_is_a_timeout_attempt():
    script = Script({"h": [Reply(status=504, hold=3.0), Reply(content="late but there")]})
    with ScriptedServer(script) as srv:
        c = _client(srv, max_retries=1, timeout=1.0)
        assert c.chat.completions.create(model="m", messages=_msgs("h")).choices[0].message.content == \
            "late but there"
    h = run_figures("h", script.log, [], [], True)
    assert (h["model_calls"], h["attempts"], h["failed_attempts"]) == (1, 2, 1)


def _req(seq: int, status: int = 200, tools: int = 0, body: str = "b") -> dict:
    return {"seq": seq, "status": status, "tool_calls": [["t", {}]] * tools, "body_hash": body}


def test_stop_reasons_follow_the_last_events():
    ok_tool, bad_tool = {"seq": 2, "error": False}, {"seq": 2, "error": True}
    assert outcome([_req(1, tools=1), _req(3)], [ok_tool], None) == ("success", "done")
    assert outcome([_req(1, tools=1), _req(3)], [ok_tool], "ValueError: x") == ("failed", "exception")
    assert outcome([_req(1, tools=1)], [bad_tool], "RuntimeError: x") == ("failed", "tool_error")
    assert outcome([_req(1, tools=1)], [bad_tool], None) == ("failed", "tool_error")
    assert outcome([_req(1, tools=1), _req(3, tools=1)], [bad_tool], None) == ("failed", "turn_limit")
    assert outcome([_req(1, tools=1), _req(3, 500)], [ok_tool], "E: 500") == ("failed", "model_error")
    # a new body after a failure is a new call: the failed call stays failed, the last one decides
    assert outcome([_req(1, 500, body="a"), _req(3, body="c")], [], None) == ("success", "done")


def test_a_request_without_tools_in_an_endless_script_gets_the_forced_answer_and_is_the_turn_limit():
    turn = Reply(tool_calls=[call("lookup_order", order_id="T")])
    script = Script({"f": Forever(make=lambda i: turn, forced=Reply(content="out of steps"))})
    tool = {"type": "function", "function": {"name": "lookup_order", "parameters": {"type": "object"}}}
    with ScriptedServer(script) as srv:
        c = _client(srv)
        asked = [c.chat.completions.create(model="m", messages=_msgs("f"), tools=[tool]) for _ in range(2)]
        forced = c.chat.completions.create(model="m", messages=_msgs("f"))
    assert all(r.choices[0].message.tool_calls for r in asked)
    assert forced.choices[0].message.content == "out of steps"
    assert [e["tools_offered"] for e in script.log] == [True, True, False]
    f = run_figures("f", script.log, [{"run": "f", "tool": "lookup_order", "args": {}, "error": False, "seq": 0}],
                    [], True)
    assert (f["model_calls"], f["outcome"], f["stop_reason"]) == (3, "failed", "turn_limit")


def test_an_answer_tool_is_a_final_answer_and_not_a_tool_call():
    reqs = [_req(1, tools=1), {**_req(3), "tool_calls": [["final_answer", {"answer": "x"}]]}]
    assert outcome(reqs, [{"seq": 2, "error": False}], None) == ("failed", "turn_limit")
    assert outcome(reqs, [{"seq": 2, "error": False}], None, ("final_answer",)) == ("success", "done")
    log = [{**r, "run": "a", "stream": False, "usage": None, "model": "m"} for r in reqs]
    a = run_figures("a", log, [], [], True, None, ("final_answer",))
    assert (a["max_parallel_tool_calls"], a["outcome"]) == (1, "success")
