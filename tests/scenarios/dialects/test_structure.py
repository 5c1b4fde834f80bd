"""Runs and calls by structure (issue 41): the trap shapes that no fixture taught, and a property test.

Each trap shape is written the way real instrumentations write it (``tests/synthetic.py``); the runs table must
give the figures of the truth it was built from. The property test composes, over a random truth, wrappers,
attempts, duplicated instrumentation spans, missing roots, transport spans and run-level totals: none of them
changes any per-run figure.
"""
from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass, field

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from synthetic import Flavor, Node, http_client, http_server, otlp_lines

from agentobs.analysis import analyze
from agentobs.analysis.derive.runs import derive_runs
from agentobs.analysis.load.sources import load_sources

GENAI, OI, BARE = Flavor("genai"), Flavor("openinference"), Flavor("bare")
EXAMPLES = max(20, int(os.environ.get("AGENTOBS_PROPERTY_EXAMPLES", "2000")) // 40)


def _runs(tmp_path, traces: list[Node]) -> pd.DataFrame:
    path = tmp_path / "t.jsonl"
    path.write_text(otlp_lines(traces))
    return analyze([str(path)]).runs.sort_values("start", kind="stable").reset_index(drop=True)


def _fig(runs: pd.DataFrame, col: str) -> list:
    return [None if pd.isna(v) else int(v) for v in runs[col]]


def test_one_model_call_under_several_nested_llm_spans_counts_once(tmp_path):
    """A framework's step, its LLM wrapper and the client call each carry an LLM kind; only the innermost
    reports tokens: 4 calls, not 12."""
    agent = OI.agent("helper")
    for i in range(4):
        step, wrapper = OI.chat("gpt-4o", None), OI.chat("gpt-4o", None)
        agent.add(step.add(wrapper.add(OI.chat("gpt-4o", (100 + i, 10)))))
    runs = _runs(tmp_path, [agent])
    assert _fig(runs, "model_calls") == [4] and _fig(runs, "attempts") == [4]
    assert _fig(runs, "input_tokens") == [406] and _fig(runs, "output_tokens") == [40]


def test_wrappers_repeating_the_tokens_of_the_call_they_wrap_count_them_once(tmp_path):
    agent = GENAI.agent("helper")
    for _ in range(3):
        agent.add(GENAI.chat("m", (50, 5)).add(GENAI.chat("m", (50, 5))))
    runs = _runs(tmp_path, [agent])
    assert _fig(runs, "model_calls") == [3] and _fig(runs, "input_tokens") == [150]


def test_an_instrumentation_tool_span_around_the_frameworks_own_is_one_tool_call(tmp_path):
    agent = GENAI.agent("helper").add(GENAI.chat("m", (10, 1)))
    for city in ("Paris", "Rome"):
        agent.add(OI.tool("weather", {"city": city}).add(GENAI.tool("weather", {"city": city})))
    agent.add(GENAI.chat("m", (20, 2)))
    runs = _runs(tmp_path, [agent])
    assert _fig(runs, "tool_calls") == [2] and _fig(runs, "model_calls") == [2]
    assert _fig(runs, "max_identical_calls") == [1]


def test_a_crew_of_agents_under_one_workflow_is_one_run(tmp_path):
    crew = OI.chain("crew")
    for who in ("researcher", "writer"):
        crew.add(OI.agent(who).add(OI.chat("m", (10, 1)), OI.tool("search", {"q": who}), OI.chat("m", (20, 2))))
    runs = _runs(tmp_path, [http_server().add(crew)])
    assert len(runs) == 1
    r = runs.iloc[0]
    assert r["run_root"] == "chain" and r["model_calls"] == 4 and r["tool_calls"] == 2
    assert r["sub_agents"] == 1 and list(r["sub_agent_names"]) == ["writer"]
    assert r["run_id"] == r["trace_id"]                     # one run in its trace: a trace-id label applies


def test_sibling_agents_under_one_request_are_separate_runs(tmp_path):
    req = http_server().add(GENAI.agent("a").add(GENAI.chat("m", (1, 1))),
                            GENAI.agent("b").add(GENAI.chat("m", (2, 2))))
    runs = _runs(tmp_path, [req])
    assert len(runs) == 2 and _fig(runs, "input_tokens") == [1, 2]


def test_model_calls_without_any_operation_name_are_read_by_structure(tmp_path):
    """An SDK that writes a model id and token usage under keys no dialect names, and tools the same way."""
    root = Node("job", {"sdk.op": "loop"})
    for i in range(3):
        root.add(BARE.chat("gpt-4o-mini", (100 * (i + 1), 10)), BARE.tool("lookup", {"id": i}))
    root.add(BARE.chat("gpt-4o-mini", (400, 20)))
    path = tmp_path / "t.jsonl"
    path.write_text(otlp_lines([root]))
    report = analyze([str(path)])
    runs = report.runs
    assert len(runs) == 1 and _fig(runs, "model_calls") == [4] and _fig(runs, "tool_calls") == [3]
    assert _fig(runs, "input_tokens") == [1000] and runs["dialect"].iloc[0] == "structure"
    assert report.derivation.dialects.get("structure") == 7


def test_a_loop_span_repeating_its_calls_total_usage_is_not_a_call(tmp_path):
    """Read by structure, the loop span (model id, total usage) looks like a model call: holding several, it is
    the run's orchestration, and its total is never added."""
    loop = BARE.chat("gpt-4o-mini", (300, 30))
    loop.name = "generate"
    loop.add(BARE.chat("gpt-4o-mini", (100, 10)), BARE.tool("lookup", {"id": 1}), BARE.chat("gpt-4o-mini", (200, 20)))
    runs = _runs(tmp_path, [http_server().add(loop)])
    assert len(runs) == 1 and runs["run_root"].iloc[0] == "chain"
    assert _fig(runs, "model_calls") == [2] and _fig(runs, "input_tokens") == [300] and _fig(runs, "tool_calls") == [1]


def test_a_frameworks_span_and_the_clients_for_one_call_as_siblings_are_one_call(tmp_path):
    """Neither span made active (OpenLLMetry's LangChain.js handler beside its OpenAI instrumentation): each model
    call leaves two sibling spans that overlap in time, of one model (one dated) with the same usage: 2 calls, not 4.
    Two parallel calls that overlap but report different usage stay two calls."""
    from otlp_spans import agent, chat, span, tool, write
    tid = "ab" * 16
    spans = [span(tid, 1, None, "invoke_agent a", 0, 100, agent("a")),
             span(tid, 2, 1, "chat gpt-4o-mini", 1, 30, chat("gpt-4o-mini", 120, 18)),
             span(tid, 3, 1, "chat gpt-4o-mini", 2, 30.5, chat("gpt-4o-mini-2024-07-18", 120, 18)),
             span(tid, 4, 1, "execute_tool t", 31, 40, tool("t")),
             span(tid, 5, 1, "chat gpt-4o-mini", 41, 60, chat("gpt-4o-mini", 160, 15)),
             span(tid, 6, 1, "chat gpt-4o-mini", 41, 59, chat("gpt-4o-mini", 160, 15)),
             span(tid, 7, 1, "chat gpt-4o-mini", 61, 80, chat("gpt-4o-mini", 200, 12)),
             span(tid, 8, 1, "chat gpt-4o-mini", 62, 79, chat("gpt-4o-mini", 200, 13))]
    runs = analyze([str(write(tmp_path / "t.jsonl", spans))]).runs
    assert _fig(runs, "model_calls") == [4] and _fig(runs, "attempts") == [4]
    assert _fig(runs, "input_tokens") == [680] and _fig(runs, "output_tokens") == [58]


def test_calls_alone_in_traces_of_their_own_are_said_to_be_split(tmp_path):
    """An instrumentation that starts its spans outside the agent's context leaves each call a trace of its own:
    each is a run (no structure joins them), and the notes say why; a call under an agent is not noted."""
    from otlp_spans import agent, chat, span, tool, write
    spans = [span(f"{i:032x}", i, None, "chat m", i * 10, i * 10 + 5, chat("m", 10, 1)) for i in range(1, 4)]
    spans.append(span(f"{9:032x}", 9, None, "execute_tool t", 50, 55, tool("t")))
    report = analyze([str(write(tmp_path / "t.jsonl", spans))])
    assert len(report.runs) == 4
    assert any(n.startswith("4 runs are one model or tool call alone") for n in report.derivation.sentences())
    held = [span("ab" * 16, 1, None, "invoke_agent a", 0, 20, agent("a")),
            span("ab" * 16, 2, 1, "chat m", 1, 5, chat("m", 10, 1))]
    one = analyze([str(write(tmp_path / "one.jsonl", held))])
    assert not any("alone in a trace" in n for n in one.derivation.sentences())


def test_attempts_of_one_call_are_one_call(tmp_path):
    """One span per HTTP attempt: a call retried twice after 5xx answers is one call of three attempts."""
    agent = GENAI.agent("a").add(GENAI.chat("m", (10, 1)), GENAI.tool("t", {"x": 1}),
                                 GENAI.chat("m", None, error=True), GENAI.chat("m", None, error=True),
                                 GENAI.chat("m", (30, 3)))
    runs = _runs(tmp_path, [agent])
    assert _fig(runs, "model_calls") == [2] and _fig(runs, "attempts") == [4]
    assert _fig(runs, "errors") == [0] and _fig(runs, "retries") == [2] and _fig(runs, "input_tokens") == [40]
    assert pd.isna(runs["first_error"].iloc[0])


def test_attempts_inside_one_call_span_are_its_http_client_spans(tmp_path):
    call = GENAI.chat("m", (30, 3)).add(http_client(500), http_client(503), http_client(200))
    runs = _runs(tmp_path, [GENAI.agent("a").add(call)])
    assert _fig(runs, "model_calls") == [1] and _fig(runs, "attempts") == [3] and _fig(runs, "errors") == [0]


def test_a_call_that_failed_on_every_attempt_is_one_failed_call(tmp_path):
    agent = GENAI.agent("a").add(GENAI.chat("m", (10, 1)), *(GENAI.chat("m", None, error=True) for _ in range(3)))
    runs = _runs(tmp_path, [agent])
    assert _fig(runs, "model_calls") == [2] and _fig(runs, "attempts") == [4] and _fig(runs, "errors") == [1]


def test_parallel_tool_calls_that_fail_are_not_attempts_of_each_other(tmp_path):
    agent = GENAI.agent("a").add(GENAI.chat("m", (10, 1)), GENAI.tool("t", {"x": 1}, error=True),
                                 GENAI.tool("u", {"x": 2}), GENAI.chat("m", (20, 2)))
    runs = _runs(tmp_path, [agent])
    assert _fig(runs, "tool_calls") == [2] and _fig(runs, "errors") == [1]


def test_a_run_whose_agent_span_never_arrived_is_one_run_not_its_steps(tmp_path):
    agent = OI.agent("lost")
    agent.dropped = True
    for i in range(3):
        agent.add(OI.chain("turn").add(OI.chat("m", (10 * (i + 1), 1)), OI.tool("t", {"i": i})))
    path = tmp_path / "t.jsonl"
    path.write_text(otlp_lines([http_server().add(agent)]))
    report = analyze([str(path)])
    runs = report.runs
    assert len(runs) == 1 and _fig(runs, "model_calls") == [3] and _fig(runs, "tool_calls") == [3]
    assert pd.isna(runs["success"].iloc[0])
    assert any("lack their trace's root" in n for n in report.derivation.sentences())


def test_complete_agents_under_a_lost_request_span_stay_separate_runs(tmp_path):
    req = http_server()
    req.dropped = True
    req.add(GENAI.agent("a").add(GENAI.chat("m", (1, 1))), GENAI.agent("b").add(GENAI.chat("m", (2, 2))))
    runs = _runs(tmp_path, [req])
    assert len(runs) == 2 and runs["success"].notna().all()


def test_a_span_lost_in_the_middle_of_a_run_does_not_split_it(tmp_path):
    turn = OI.chain("turn")
    turn.dropped = True
    turn.add(OI.agent("sub").add(OI.chat("m", (5, 1))))
    root = OI.agent("main").add(OI.chat("m", (10, 1)), turn, OI.chat("m", (20, 2)))
    runs = _runs(tmp_path, [http_server().add(root), http_server().add(OI.agent("other").add(OI.chat("m", (1, 1))))])
    assert len(runs) == 2 and _fig(runs, "model_calls") == [3, 1] and _fig(runs, "sub_agents") == [1, 0]


def test_calls_without_orchestration_are_one_run_per_conversation(tmp_path):
    traces = []
    for conv, n in (("c-1", 2), ("c-2", 1), ("c-1", 1)):
        req = http_server()
        for _ in range(n):
            chat = GENAI.chat("m", (10, 1))
            chat.attrs["gen_ai.conversation.id"] = conv
            req.add(chat)
        traces.append(req)
    runs = _runs(tmp_path, traces).sort_values("run_id").reset_index(drop=True)
    assert list(runs["run_id"]) == ["c-1", "c-2"] and _fig(runs, "model_calls") == [3, 1]
    assert list(runs["run_root"]) == ["session", "session"] and list(runs["conversation_id"]) == ["c-1", "c-2"]


def test_a_second_root_call_within_one_run_is_part_of_it_and_one_outside_is_a_run_of_its_own(tmp_path):
    """A model call with no parent in a trace whose agent span is its root: its context was lost. Within the
    agent's time it belongs to that run (the run keeps its id); after it, it is one more run of the trace."""
    from otlp_spans import agent, chat, span, write
    t, u = "d4" * 16, "e5" * 16
    spans = [span(t, 1, None, "invoke_agent a", 0, 100, agent("a")), span(t, 2, 1, "chat m", 10, 20, chat("m", 5, 1)),
             span(t, 3, None, "chat m", 30, 40, chat("m", 7, 1)),
             span(u, 1, None, "invoke_agent b", 0, 100, agent("b")), span(u, 2, 1, "chat m", 10, 20, chat("m", 5, 1)),
             span(u, 3, None, "chat m", 130, 140, chat("m", 7, 1))]
    runs = analyze([str(write(tmp_path / "t.jsonl", spans))]).runs.set_index("run_id")
    assert runs.loc[t, "model_calls"] == 2 and runs.loc[t, "input_tokens"] == 12
    assert sorted(runs.index) == sorted([t, f"{u}:{1:016x}", f"{u}:{3:016x}"])


def test_a_transfer_to_people_is_a_tool_call_and_a_transfer_to_an_agent_a_handoff(tmp_path):
    """tau2's transfer_to_human_agents escalates to people: a tool like the others (its published tool-call counts
    include it); transfer_to_refunds hands the run to another agent: not a tool call."""
    from otlp_spans import agent, chat, span, tool, write
    t = "f6" * 16
    spans = [span(t, 1, None, "invoke_agent a", 0, 100, agent("a")), span(t, 2, 1, "chat m", 10, 20, chat("m", 5, 1)),
             span(t, 3, 1, "execute_tool transfer_to_refunds", 20, 30, tool("transfer_to_refunds")),
             span(t, 4, 1, "chat m", 30, 40, chat("m", 5, 1)),
             span(t, 5, 1, "execute_tool transfer_to_human_agents", 40, 50, tool("transfer_to_human_agents"))]
    runs = analyze([str(write(tmp_path / "t.jsonl", spans))]).runs
    assert len(runs) == 1 and runs.loc[0, "tool_calls"] == 1


# -- the property: transformations that leave every per-run figure as it is ---------------------------------

@dataclass
class Truth:
    model_calls: int = 0
    attempts: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    errors: int = 0
    tools: list[str] = field(default_factory=list)


def _build(rng: random.Random, flavor: Flavor, truth: Truth, name: str) -> Node:
    """One agent run in ``flavor`` with random calls, each transformed at random; ``truth`` filled as it goes."""
    agent = flavor.agent(name)
    steps = rng.randint(1, 4)
    for s in range(steps):
        last = s == steps - 1
        tokens = (rng.randint(1, 500), rng.randint(1, 50))
        truth.model_calls += 1
        truth.input_tokens += tokens[0]
        truth.output_tokens += tokens[1]
        tries = rng.choice((1, 1, 1, 2, 3))
        truth.attempts += tries
        failed = [flavor.chat("m", None, error=True) for _ in range(tries - 1)]
        call = flavor.chat("m", tokens)
        for _ in range(rng.choice((0, 0, 1, 2))):           # wrappers: framework steps, LLM wrappers
            wrapper = flavor.chat("m", tokens if rng.random() < 0.3 else None)
            call = wrapper.add(call)
        if rng.random() < 0.3 and tries == 1:              # the client's HTTP request under the call
            call.add(http_client(200))
        holder = agent
        if rng.random() < 0.4:                             # a framework's turn span around the step
            holder = flavor.chain("turn")
            agent.add(holder)
        holder.add(*failed, call)
        if last:
            break
        for t in range(rng.choice((0, 1, 2))):
            args = {"k": rng.randint(0, 3), "t": t}
            bad = rng.random() < 0.15
            tool = flavor.tool("lookup", args, error=bad)
            truth.tool_calls += 1
            truth.errors += bad
            if rng.random() < 0.3:                          # a second instrumentation's span around the tool call
                tool = OI.tool("lookup", args, error=bad).add(tool)
            holder.add(tool)
    if rng.random() < 0.3:                                  # the run's total repeated on its root
        tot = {"gen_ai.usage.input_tokens": truth.input_tokens, "gen_ai.usage.output_tokens": truth.output_tokens}
        agent.attrs.update(tot)
    return agent


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1), flavor=st.sampled_from([GENAI, OI]))
def test_structure_never_changes_a_runs_figures(tmp_path_factory, seed, flavor):
    rng = random.Random(seed)
    traces, truths = [], []
    for k in range(rng.randint(1, 4)):
        per_trace = rng.choice((1, 1, 2))
        top = http_server() if (per_trace > 1 or rng.random() < 0.5) else None
        for j in range(per_trace):
            t = Truth()
            agent = _build(rng, flavor, t, f"agent{k}{j}")
            truths.append(t)
            if per_trace == 1 and rng.random() < 0.25:      # its agent span never arrived
                agent.dropped = True
            if top is None:
                traces.append(agent)
            else:
                top.add(agent)
        if top is not None:
            traces.append(top)
    path = tmp_path_factory.mktemp("p") / "t.jsonl"
    path.write_text(otlp_lines(traces))
    runs = derive_runs(load_sources([str(path)]))[0].sort_values("start", kind="stable")
    assert len(runs) == len(truths)
    for (_, got), t in zip(runs.iterrows(), truths, strict=True):
        for col in ("model_calls", "attempts", "tool_calls", "input_tokens", "output_tokens", "errors"):
            assert int(got[col]) == getattr(t, col), (col, seed, flavor.name)


@pytest.mark.parametrize("flavor", [GENAI, OI, BARE], ids=lambda f: f.name)
def test_each_flavor_reads_the_same_run(tmp_path, flavor):
    truth = Truth()
    agent = _build(random.Random(7), flavor, truth, "x")
    runs = _runs(tmp_path, [http_server().add(agent)])
    assert len(runs) == 1
    assert int(runs["model_calls"].iloc[0]) == truth.model_calls
    assert int(runs["input_tokens"].iloc[0]) == truth.input_tokens


def _asking(model: str, tokens: tuple[int, int], *calls: tuple[str, dict]) -> Node:
    """A GenAI model call whose output messages ask for ``calls`` (tool name, arguments)."""
    parts = [{"type": "tool_call", "id": f"c{i}", "name": n, "arguments": a} for i, (n, a) in enumerate(calls)]
    chat = GENAI.chat(model, tokens)
    chat.attrs["gen_ai.output.messages"] = json.dumps([{"role": "assistant", "parts": parts,
                                                        "finish_reason": "tool_calls"}])
    return chat


def test_spans_named_after_the_tools_the_model_asked_for_are_its_tool_calls(tmp_path):
    """An app traces its tools by their names (``@openlit.trace``, ``@logfire.instrument("tool {name}")``): no
    attribute marks them, the model call before them asked for them. Calls, arguments (repeats) and errors count;
    a span of another name, or one before any model call asked, is no tool call."""
    agent = Node("assistant", kind=3).add(
        Node("load_config"),
        _asking("m", (10, 1), ("lookup", {"id": 1}), ("get_time", {"city": "Paris"})),
        Node("lookup"), Node("tool get_time"),
        _asking("m", (20, 1), ("lookup", {"id": 1})),
        Node("tools.lookup", error=True), Node("audit log"),
        GENAI.chat("m", (30, 1)))
    runs = _runs(tmp_path, [agent])
    assert _fig(runs, "tool_calls") == [3] and _fig(runs, "errors") == [1]
    assert _fig(runs, "max_identical_calls") == [2] and _fig(runs, "max_consecutive_identical") == [1]


def test_application_spans_under_one_request_are_runs_each(tmp_path):
    """Two agents one after the other in one HTTP request, each in a span no dialect knows: two runs, the request
    span in neither; with a model call right under the request, the trace stays one run."""
    two = http_server("/two").add(Node("assistant answering").add(GENAI.chat("m", (10, 1))),
                                  Node("assistant answering").add(GENAI.chat("m", (20, 1)), GENAI.chat("m", (5, 1))))
    mixed = http_server("/mixed").add(Node("assistant answering").add(GENAI.chat("m", (10, 1))),
                                      GENAI.chat("m", (20, 1)))
    runs = _runs(tmp_path, [two, mixed])
    assert _fig(runs, "model_calls") == [1, 2, 2] and list(runs["run_root"]) == ["chain", "chain", "trace"]


def test_an_application_span_inside_a_tool_holding_model_calls_is_a_sub_agent(tmp_path):
    tool = GENAI.tool("ask_translator", {"text": "hi"}).add(Node("translator").add(GENAI.chat("m", (5, 1))))
    agent = GENAI.agent("assistant").add(GENAI.chat("m", (10, 1)), tool, GENAI.chat("m", (20, 1)))
    runs = _runs(tmp_path, [agent])
    assert _fig(runs, "sub_agents") == [1] and list(runs["sub_agent_names"][0]) == ["translator"]
