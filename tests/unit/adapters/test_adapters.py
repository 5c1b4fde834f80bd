"""The kernel's provider adapters, through the official SDKs against a scripted server on 127.0.0.1 (issue 13).

The server plays the seed's support policy on the wire (tool calls for plans, task tools and final answers),
answers with usage blocks (cached and reasoning tokens), 429 with Retry-After, 500, slow answers and
malformed tool arguments; it counts every request, so a test sees that nothing went out past a limit.
"""
from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import pytest

pytest.importorskip("openai")
pytest.importorskip("anthropic")

from providers import Call, ProviderServer, RawJSON, Reply, call

from agentobs import Budget, Kernel, ModelRequest, Prices, RealClock, StopReason
from agentobs.adapters.anthropic_messages import AnthropicMessagesModel
from agentobs.adapters.openai_chat import OpenAIChatModel
from agentobs.contract import TokenUsage
from agentobs.contract.events import ModelReturned
from agentobs.domain.policies import SupportPolicy
from agentobs.domain.scenarios import new_state
from agentobs.domain.support import CATALOG, FACTS, SupportDesk
from agentobs.errors import ConfigError
from agentobs.testing import EventLog

ROOMY = dict(max_tokens=100_000, max_output_tokens=300)
SCHEMAS = {"get_order": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}
KINDS = ["openai", "anthropic"]
REQUEST = ModelRequest(view="{}", max_output_tokens=300, timeout_s=10.0)


def make(kind: str, srv: ProviderServer, model: str | None = None, **kw) -> OpenAIChatModel | AnthropicMessagesModel:
    if kind == "openai":
        return OpenAIChatModel(model or "gpt-4.1-mini", tools=list(CATALOG.values()), schemas=SCHEMAS,
                               base_url=srv.openai_base_url, api_key="test", **kw)
    return AnthropicMessagesModel(model or "claude-3-5-haiku-latest", tools=list(CATALOG.values()), schemas=SCHEMAS,
                                  base_url=srv.base_url, api_key="test", **kw)


def policy_on_the_wire(**extra) -> callable:
    """The seed's support policy, reading the view the kernel sent, answering as a provider would."""
    pol = SupportPolicy()

    def script(c: Call) -> Reply:
        r = pol.next(json.loads(c.last_user_text()))
        if r["type"] == "plan":
            return Reply(tool_calls=[call("agentobs_plan", steps=r["steps"])], **extra)
        if r["type"] == "final":
            return Reply(tool_calls=[call("agentobs_final", outcome=r["outcome"], text=r["text"])], **extra)
        return Reply(tool_calls=[call(r["name"], **r["args"], plan_step=r["plan_step"])], **extra)
    return script


def kernel(model, budget: Budget, desk: SupportDesk | None = None, **kw) -> tuple[Kernel, SupportDesk]:
    desk = desk or SupportDesk()
    return Kernel(model, desk, budget=budget, facts=FACTS, clock=RealClock(), **kw), desk


@pytest.mark.parametrize("kind", KINDS)
def test_the_seed_request_runs_to_done_through_the_sdk(kind):
    with ProviderServer(policy_on_the_wire()) as srv:
        k, desk = kernel(make(kind, srv), Budget(max_usd=0.05, **ROOMY))
        st = k.run(new_state())
    assert st.stop == "done" and st.answer == "Refund issued and confirmation sent."
    assert desk.effects == [("refund", "ord_1001", 3000), ("email", "ord_1001")]
    assert srv.count == st.step == 5
    assert st.tokens == srv.tokens()                       # the provider's usage, not an estimate
    assert st.cost_usd > 0 and st.unpriced_calls == 0
    body = srv.log[0]["body"]
    assert body["model"] == k.model.name
    cap = body.get("max_completion_tokens", body.get("max_tokens"))
    assert cap == 300
    names = [t["function"]["name"] if "function" in t else t["name"] for t in body["tools"]]
    assert names[-2:] == ["agentobs_plan", "agentobs_final"] and "get_order" in names
    schema = next(t.get("input_schema") or t["function"]["parameters"] for t in body["tools"]
                  if (t.get("name") or t.get("function", {}).get("name")) == "get_order")
    assert schema["required"] == ["order_id"] and "plan_step" in schema["properties"]


@pytest.mark.parametrize("kind", KINDS)
def test_usage_keeps_cache_and_reasoning_tokens_and_the_model_id(kind):
    def script(c):
        return Reply(tool_calls=[call("get_order", order_id="ord_1001", plan_step="s1")], input_tokens=900,
                                 cached_tokens=600, cache_creation_tokens=100 if kind == "anthropic" else None,
                                 reasoning_tokens=40, output_tokens=60, model="served-model-2026-01-01")
    with ProviderServer(script) as srv:
        m = make(kind, srv)
        resp = m.propose(REQUEST)
        aresp = asyncio.run(m.apropose(REQUEST))
        log = EventLog()
        k, _ = kernel(m, Budget(max_steps=1, **ROOMY), observers=[log])
        k.run(new_state())
    assert replace(resp, latency_s=0) == replace(aresp, latency_s=0)   # sync and async share every conversion
    assert resp.reply == {"type": "tool", "name": "get_order", "args": {"order_id": "ord_1001"}, "plan_step": "s1"}
    assert (resp.input_tokens, resp.output_tokens) == (900, 60)        # the whole prompt, cached parts included
    parts = (resp.cache_read_input_tokens, resp.cache_creation_input_tokens, resp.reasoning_output_tokens)
    assert parts == ((600, None, 40) if kind == "openai" else (600, 100, None))
    assert resp.response_model == "served-model-2026-01-01"
    assert resp.finish_reason in ("tool_calls", "tool_use")
    # the kernel charges input and output and passes the provider's parts on with its event (and so to telemetry)
    (returned,) = log.of(ModelReturned)
    assert returned.usage == TokenUsage(input_tokens=900, output_tokens=60, source="reported",
                                        cache_read_input_tokens=parts[0], cache_creation_input_tokens=parts[1],
                                        reasoning_output_tokens=parts[2])
    assert returned.response_model == "served-model-2026-01-01"


@pytest.mark.parametrize("kind", KINDS)
def test_a_429_waits_its_retry_after_inside_the_run_then_succeeds(kind):
    wire = policy_on_the_wire()
    def script(c):
        return Reply(status=429, retry_after="0.3") if c.n == 1 else wire(c)
    with ProviderServer(script) as srv:
        k, _desk = kernel(make(kind, srv), Budget(**ROOMY))
        st = k.run(new_state())
    assert st.stop == "done"
    assert srv.count == 6                       # one refused request, then the five of the run; no SDK retry
    assert st.elapsed >= 0.3                    # the wait is charged to the run's active time


@pytest.mark.parametrize("kind", KINDS)
def test_5xx_is_retried_by_the_kernel_policy_only_then_model_error(kind):
    with ProviderServer(lambda c: Reply(status=500)) as srv:
        k, _ = kernel(make(kind, srv), Budget(max_attempts=3, backoff_s=0.01, **ROOMY))
        st = k.run(new_state())
    assert st.stop == StopReason.MODEL_ERROR.value
    assert srv.count == 3                       # the kernel's three attempts; the SDK's own retries are off


DEEP = 100_000           # levels: past Python's recursion limit, as text the SDK or the adapter must parse
MALFORMED_CALLS = {
    "invalid JSON": ("{not json", RawJSON('"not an object"')),
    "not an object": ("[1, 2]", RawJSON("[1, 2]")),
    "nested past Python's reader": ("[" * DEEP + "]" * DEEP, RawJSON('{"d": ' + "[" * DEEP + "]" * DEEP + "}")),
    "a number past Python's digits": ('{"n": ' + "7" * 5000 + "}", RawJSON('{"n": ' + "7" * 5000 + "}")),
}


@pytest.mark.parametrize("case", MALFORMED_CALLS)
@pytest.mark.parametrize("kind", KINDS)
def test_malformed_tool_arguments_are_a_malformed_reply_charged_as_reported(kind, case):
    """Tool arguments nested 100,000 deep were a provider failure: retried three times, 0 tokens charged for three
    paid calls (and malformed arguments of any kind followed the retry policy the same way). Each is now a
    malformed_reply the model sees on its next step, charged the usage the provider reported; nothing is retried.
    (Anthropic's arguments are a JSON value of the body: the SDK cannot parse the deep or long-numbered ones, and
    the adapter reads the body's usage member alone.)"""
    bad = MALFORMED_CALLS[case][0 if kind == "openai" else 1]
    give_up = Reply(tool_calls=[call("agentobs_final", outcome="cannot_complete", text="giving up")])
    def script(c):
        return Reply(tool_calls=[("get_order", bad)], input_tokens=500, output_tokens=40) if c.n == 1 \
            else give_up
    with ProviderServer(script) as srv:
        k, desk = kernel(make(kind, srv), Budget(max_attempts=3, backoff_s=0.01, **ROOMY))
        st = k.run(new_state())
        view = json.loads(srv.log[1]["body"]["messages"][-1]["content"])
    assert st.stop == "done" and st.outcome == "cannot_complete" and desk.calls == 0
    assert srv.count == 2                                   # one paid call per step: no retry
    first = next(a for a in st.audit if "model" in a)
    assert first["error"] == "malformed_reply" and first["reply"] is None
    assert (first["input_tokens"], first["output_tokens"]) == (500, 40)      # as the provider reported them
    assert st.tokens == srv.tokens()
    assert view["last_result"]["code"] == "malformed_reply"                   # the model was told
    assert "answer with one proposal" in view["last_result"]["detail"]


@pytest.mark.parametrize("kind", KINDS)
def test_an_unreadable_answer_is_the_same_in_sync_and_async(kind):
    bad = MALFORMED_CALLS["nested past Python's reader"][0 if kind == "openai" else 1]
    with ProviderServer(lambda c: Reply(tool_calls=[("get_order", bad)], input_tokens=500, output_tokens=40)) as srv:
        m = make(kind, srv)
        resp, aresp = m.propose(REQUEST), asyncio.run(m.apropose(REQUEST))
    assert replace(resp, latency_s=0) == replace(aresp, latency_s=0)
    assert resp.reply is None and "nested deeper than Python's JSON reader goes" in resp.malformed
    assert (resp.input_tokens, resp.output_tokens) == (500, 40)


def test_the_usage_member_is_read_alone_from_a_body_python_cannot_parse():
    from agentobs.adapters._common import top_level_member

    deep = "[" * DEEP + "]" * DEEP
    body = ('{"id": "m", "content": [{"input": {"d": ' + deep + ', "s": "\\"usage\\": 1}"}}], "n": ' + "9" * 5000
            + ', "usage": {"a": 1}}')
    assert top_level_member(body, "usage") == {"a": 1}
    assert top_level_member('{"usage": 5, "x": [1]}', "usage") == 5
    assert top_level_member('{"x": {"usage": 5}}', "usage") is None           # only a member of the object itself
    assert top_level_member('{"x": "usage", "y": 2}', "usage") is None        # a value is no member name
    for broken in ('[{"usage": 1}]', '{"usage": ', '{"usage": {"a": ', '"usage"', "", '{"a": "unterminated'):
        assert top_level_member(broken, "usage") is None


@pytest.mark.parametrize("kind", KINDS)
def test_a_slow_answer_is_cut_off_at_the_time_left(kind):
    with ProviderServer(lambda c: Reply(text="late", delay_s=5.0)) as srv:
        k, _ = kernel(make(kind, srv), Budget(deadline_s=0.4, **ROOMY))
        st = k.run(new_state())
    assert st.stop == StopReason.DEADLINE.value
    assert srv.count == 1


@pytest.mark.parametrize("kind", KINDS)
def test_a_retry_after_past_the_deadline_ends_the_run_at_the_deadline_without_waiting(kind):
    with ProviderServer(lambda c: Reply(status=429, retry_after="120")) as srv:
        k, _ = kernel(make(kind, srv), Budget(deadline_s=5.0, **ROOMY))
        st = k.run(new_state())
    assert st.stop == StopReason.DEADLINE.value
    assert srv.count == 1 and st.elapsed < 5.0 + 1e-9


@pytest.mark.parametrize("kind", KINDS)
def test_dollar_budget_needs_a_price_and_stops_before_the_crossing_call(kind):
    with ProviderServer(policy_on_the_wire()) as srv:
        with pytest.raises(ConfigError, match="no price"):
            kernel(make(kind, srv, model="my-local-model"), Budget(max_usd=0.01, **ROOMY))
        assert srv.count == 0
        k, _ = kernel(make(kind, srv, model="my-local-model"), Budget(max_usd=0.005, **ROOMY),
                      prices=Prices({"my-local-model": (2.0, 8.0)}))
        st = k.run(new_state())
    assert st.stop == StopReason.MAX_USD.value
    assert st.cost_usd <= 0.005           # the system prompt and tool schemas are priced ahead too
    assert srv.count == st.step < 5


@pytest.mark.parametrize("kind", KINDS)
def test_a_plain_text_answer_is_the_final_answer_and_json_text_is_a_proposal(kind):
    with ProviderServer(lambda c: Reply(text="All done.") if c.n == 1 else
                        Reply(text='{"type": "plan", "steps": []}')) as srv:
        m = make(kind, srv)
        first = m.propose(REQUEST).reply
        second = m.propose(REQUEST).reply
    assert first == {"type": "final", "outcome": "completed", "text": "All done."}
    assert second == {"type": "plan", "steps": []}


@pytest.mark.parametrize("kind", KINDS)
def test_an_empty_cut_off_or_refused_answer_is_no_completed_task(kind):
    """An empty answer, one the provider cut off at max_tokens (half a JSON tool call), and an OpenAI refusal each
    ended the run 'done' with outcome 'completed' (found by fuzzing). The first two are now errors the model sees
    (malformed_reply, reply_too_long); a refusal is a final answer that the task cannot be completed."""
    cut = "length" if kind == "openai" else "max_tokens"
    final = Reply(tool_calls=[call("agentobs_final", outcome="cannot_complete", text="giving up")])
    declined = Reply(refusal="I can't help with that.") if kind == "openai" else final
    script = {1: Reply(text="  "), 2: Reply(text='{"type": "tool", "name": "issue_ref', finish_reason=cut),
              3: declined}
    with ProviderServer(lambda c: script.get(c.n, final)) as srv:
        k, desk = kernel(make(kind, srv), Budget(**ROOMY))
        st = k.run(new_state())
    assert [a.get("error") for a in st.audit if "model" in a] == ["malformed_reply", "reply_too_long", None]
    assert st.stop == "done" and st.outcome == "cannot_complete" and desk.effects == []
    assert st.answer == ("I can't help with that." if kind == "openai" else "giving up")


def test_bad_configuration_is_one_clear_error():
    with pytest.raises(ConfigError, match="reserved"):
        OpenAIChatModel("m", tools=[type(CATALOG["get_order"])(name="agentobs_final", effect="read")])
    with pytest.raises(ConfigError, match="not in tools"):
        OpenAIChatModel("m", tools=[CATALOG["get_order"]], schemas={"nope": {"type": "object"}})
    with pytest.raises(ConfigError, match="token_param"):
        OpenAIChatModel("m", token_param="max_output")
    with pytest.raises(ConfigError, match="type 'object'"):
        AnthropicMessagesModel("m", tools=[CATALOG["get_order"]], schemas={"get_order": {"type": "string"}})


@pytest.mark.parametrize("kind", KINDS)
def test_token_cap_holds_with_the_system_prompt_and_tool_schemas_counted_ahead(kind):
    with ProviderServer(policy_on_the_wire()) as srv:
        k, _ = kernel(make(kind, srv), Budget(max_tokens=3000, max_output_tokens=300))
        st = k.run(new_state())
    assert k.overhead_tokens == k.model.request_overhead_tokens > 0     # the adapter declares what the kernel adds
    assert st.stop == StopReason.MAX_TOKENS.value
    assert srv.tokens() == st.tokens <= 3000                           # without the overhead the last call crosses
    assert 1 <= srv.count == st.step < 5
