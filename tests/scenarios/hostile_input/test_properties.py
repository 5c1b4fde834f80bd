"""Bad input everywhere, generated (issue 6, item 4): 0 tracebacks, every rejection a clear message.

Each property runs ``AGENTOBS_PROPERTY_EXAMPLES`` cases (default 2,000 in `make test`; the full
10,000 with `make test-full`). Hypothesis is derandomized so a CI run is repeatable.
"""
import json
import os
import random
import string

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentobs import Budget, ConfigError, FunctionModel, InputError
from agentobs.analysis.assess.labels import read_labels
from agentobs.analysis.formats.transcripts import transcripts_to_spans
from agentobs.analysis.otlp.load import load_bytes
from agentobs.analysis.spans.checks import check
from agentobs.cli.main import cli
from agentobs.domain.scenarios import SEED000, go
from agentobs.telemetry import configure

EXAMPLES = int(os.environ.get("AGENTOBS_PROPERTY_EXAMPLES", "2000"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False),
                         st.text(max_size=20))
json_values = st.recursive(json_scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                                 st.dictionaries(st.text(max_size=12), inner,
                                                                                 max_size=4)), max_leaves=12)


@pytest.fixture(scope="module")
def valid_line(tmp_path_factory):
    path = tmp_path_factory.mktemp("seed") / "a.jsonl"
    tel = configure(traces_out=path)
    SEED000["A normal run"]([tel.observer()])
    tel.shutdown()
    return path.read_text().splitlines()[0]


def _mutate_json(obj, rng: random.Random, value):
    """Replaces one random node of a parsed OTLP request with ``value``."""
    nodes = []

    def walk(o, parent, key):
        nodes.append((parent, key))
        if isinstance(o, dict):
            for k, v in o.items():
                walk(v, o, k)
        elif isinstance(o, list):
            for i, v in enumerate(o):
                walk(v, o, i)
    walk(obj, None, None)
    parent, key = nodes[rng.randrange(1, len(nodes))]
    parent[key] = value
    return obj


@SETTINGS
@given(seed=st.integers(0, 2**32), value=json_values, cut=st.integers(0, 10_000),
       noise=st.binary(max_size=40), mode=st.sampled_from(["node", "cut", "noise", "random"]))
def test_loader_never_raises_on_mutated_otlp(valid_line, seed, value, cut, noise, mode):
    rng = random.Random(seed)
    if mode == "node":
        data = json.dumps(_mutate_json(json.loads(valid_line), rng, value)).encode()
    elif mode == "cut":
        data = valid_line.encode()[: cut % (len(valid_line) + 1)] + b"\n" + valid_line.encode()
    elif mode == "noise":
        raw = bytearray(valid_line.encode())
        pos = rng.randrange(len(raw))
        raw[pos:pos + len(noise)] = noise
        data = bytes(raw)
    else:
        data = json.dumps(value).encode()
    ss = check(load_bytes(data, "mutated"))
    assert ss.spans is not None and ss.quality is not None


transcript_messages = st.lists(st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool", "system", 7, None]),
     "content": st.one_of(st.text(max_size=30), st.none(), json_values)},
    optional={"tool_calls": st.one_of(json_values, st.lists(st.fixed_dictionaries(
        {"id": st.one_of(st.text(max_size=5), st.integers()), "name": st.one_of(st.text(max_size=8), st.none())},
        optional={"arguments": json_values, "requestor": st.sampled_from(["assistant", "user"]),
                  "function": json_values}), max_size=3)),
        "usage": st.one_of(json_values, st.fixed_dictionaries(
            {"prompt_tokens": st.one_of(st.integers(-5, 10**6), st.text(max_size=3)),
             "completion_tokens": st.one_of(st.integers(-5, 10**6), st.none())})),
        "timestamp": st.one_of(st.text(max_size=25), st.integers(), st.just("2025-06-01T10:00:00")),
        "tool_call_id": st.text(max_size=5), "id": st.text(max_size=5), "error": json_values}), max_size=8)
transcript_docs = st.one_of(
    json_values,
    st.lists(st.fixed_dictionaries({"messages": transcript_messages},
                                   optional={"id": json_values, "success": json_values, "label": json_values,
                                             "model": json_values}), max_size=4),
    st.fixed_dictionaries({"simulations": st.lists(st.fixed_dictionaries(
        {"id": json_values, "messages": transcript_messages},
        optional={"reward_info": json_values, "termination_reason": json_values, "agent_cost": json_values,
                  "start_time": json_values}), max_size=3)}, optional={"info": json_values}),
)


@SETTINGS
@given(doc=transcript_docs)
def test_transcript_importer_never_raises(doc):
    ss = transcripts_to_spans(doc, "generated")
    assert ss.spans is not None


replies = st.one_of(
    json_values,
    st.fixed_dictionaries({"type": st.sampled_from(["tool", "plan", "final", "dance", None])},
                          optional={"name": st.one_of(st.sampled_from(["get_order", "issue_refund",
                                                                       "send_status_email", "search_policy",
                                                                       "escalate_to_human"]), json_values),
                                    "args": st.one_of(st.fixed_dictionaries(
                                        {"order_id": st.sampled_from(["ord_1001", "ord_1004", "x"])},
                                        optional={"amount_cents": st.one_of(st.integers(-10, 20000), json_values)}),
                                        json_values),
                                    "plan_step": st.one_of(st.none(), st.sampled_from(["s1", "s2", "s3"]), json_values),
                                    "steps": st.one_of(json_values, st.lists(st.fixed_dictionaries(
                                        {"id": json_values, "tool": json_values}, optional={"depends_on": json_values}),
                                        max_size=4)),
                                    "outcome": st.one_of(st.sampled_from(["completed", "cannot_complete"]),
                                                         json_values),
                                    "text": json_values}))


@SETTINGS
@given(script=st.lists(replies, min_size=1, max_size=10), latency=st.sampled_from([0.5, 1.5, 4.0]))
def test_kernel_never_raises_on_random_replies(script, latency):
    budget = Budget()
    model = FunctionModel(lambda v, i: script[(i - 1) % len(script)], latency=latency)
    st_, desk, _ = go(model, budget)
    assert st_.stop is not None and st_.step <= budget.max_steps and st_.tokens <= budget.max_tokens
    assert all(o["refunded"] <= o["total"] for o in desk.orders.values())


@SETTINGS
@given(text=st.one_of(st.text(max_size=200), json_values.map(json.dumps),
                      st.lists(st.tuples(st.text(alphabet=string.ascii_letters + string.digits + "-_",
                                                 max_size=10), st.sampled_from(["true", "false", "1", "0", "yes",
                                                                                "maybe", ""])), max_size=6)
                      .map(lambda rows: "run_id,success\n" + "\n".join(f"{a},{b}" for a, b in rows))))
def test_labels_files_parse_or_say_what_is_wrong(tmp_path_factory, text):
    path = tmp_path_factory.getbasetemp() / "labels.txt"
    path.write_text(text)
    try:
        labels, _problems, _conflicts = read_labels(path)
        assert labels and all(isinstance(v, bool) for v in labels.values())
    except InputError as exc:
        msg = str(exc)
        assert msg.startswith("labels file") and "\n" not in msg


WORDS = ["demo", "simulate", "report", "caps", "runs", "trace", "--format", "table", "json", "html", "--runs",
         "--seed", "--out", "--labels", "--target", "--margin", "--segment", "--success-attr", "--traces-out",
         "--help", "-h", "0", "1", "3", "-1", "0.5", "2.5", "nan", "x=y", "novalue", "missing.jsonl", "*.nope",
         "good.jsonl", "bad.jsonl", "out/report.html", "--version", "", "--jaeger-url", "http://127.0.0.1:9"]


@SETTINGS
@given(args=st.lists(st.one_of(st.sampled_from(WORDS), st.text(max_size=6)), max_size=6))
def test_cli_never_shows_a_traceback(cli_dir, args):
    if args[:1] in (["demo"], ["simulate"]) and "--help" not in args and "-h" not in args:
        args = [*args, "--runs", "3"]         # keep generated populations small
    res = CliRunner().invoke(cli, args, catch_exceptions=True)
    assert res.exit_code in (0, 1, 2), (args, res.exit_code, res.output)
    assert "Traceback" not in res.output, (args, res.output)
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise AssertionError(f"{args}: {type(res.exception).__name__}: {res.exception}")
    if res.exit_code == 2:           # a rejection: one clear line (or, with no command at all, the usage)
        last = [ln for ln in res.output.strip().splitlines() if ln.strip()][-1]
        assert last.startswith(("Error:", "agentobs: error:")) or res.output.startswith("Usage:"), (args, res.output)


@pytest.fixture(scope="module")
def cli_dir(tmp_path_factory, valid_line):
    d = tmp_path_factory.mktemp("cli")
    (d / "good.jsonl").write_text(valid_line + "\n")
    (d / "bad.jsonl").write_text("{oops\n")
    old = os.getcwd()
    os.chdir(d)
    yield d
    os.chdir(old)


def test_budget_construction_rejects_nonsense_with_a_message():
    for kw in ({"max_steps": 0}, {"max_tokens": -1}, {"deadline_s": float("inf")}, {"max_usd": 0}):
        with pytest.raises(ConfigError, match=r"^Budget: \w+"):
            Budget(**kw)
