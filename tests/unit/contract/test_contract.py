"""The shared contract: standard names in step with the semantic conventions package, one digest, one retry
policy, keyword-only events of values, closed vocabularies, and the standard library only."""
import ast
import dataclasses
import importlib
import inspect
import json
import random
import subprocess
import sys
import warnings

import pytest
from locations import ROOT

from agentobs.contract import events as ev
from agentobs.contract import semconv as sc
from agentobs.contract.digest import digest, digest_arguments
from agentobs.contract.retry import RetryPolicy
from agentobs.contract.vocabulary import CATEGORY, SUSPENDING, RunStatus, StopReason, result_status, status_of
from agentobs.errors import ConfigError

# -- the standard names ------------------------------------------------------------------------------------------

UPSTREAM = ["opentelemetry.semconv._incubating.attributes.gen_ai_attributes",
            "opentelemetry.semconv._incubating.attributes.error_attributes",
            "opentelemetry.semconv._incubating.metrics.gen_ai_metrics",
            "opentelemetry.semconv.attributes.error_attributes"]
# Standard names of the GenAI conventions' standalone release that opentelemetry-semantic-conventions (whose GenAI
# constants predate it) does not carry yet. When the package gains one, the test below says so: compare it then.
NOT_IN_THE_PACKAGE = {sc.M_AGENT_DURATION, sc.M_AGENT_INFERENCE_CALLS, sc.M_AGENT_TOOL_CALLS, sc.M_TOOL_DURATION,
                      sc.EVENT_INFERENCE_DETAILS}


def _upstream_constants() -> dict[str, dict[str, str]]:
    """value -> {constant name: its docstring} over the package's GenAI and error modules, read from their source
    (the docstring after each constant says when a name is deprecated and what replaced it)."""
    out: dict[str, dict[str, str]] = {}
    for name in UPSTREAM:
        body = ast.parse(inspect.getsource(importlib.import_module(name))).body
        for node, after in zip(body, [*body[1:], None], strict=True):
            target = node.target if isinstance(node, ast.AnnAssign) else \
                node.targets[0] if isinstance(node, ast.Assign) else None
            value = getattr(node, "value", None)
            if not (isinstance(target, ast.Name) and isinstance(value, ast.Constant) and isinstance(value.value, str)):
                continue
            doc = after.value.value if (isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                                        and isinstance(after.value.value, str)) else ""
            out.setdefault(value.value, {})[target.id] = doc
    return out


def _ours() -> dict[str, str]:
    """Our standard names: every constant of the contract whose value is a gen_ai.* or error.* name."""
    return {k: v for k, v in vars(sc).items()
            if k.isupper() and isinstance(v, str) and (v.startswith("gen_ai.") or v.startswith("error."))}


def test_every_standard_name_we_emit_is_the_packages_and_not_replaced():
    upstream = _upstream_constants()
    ours = _ours()
    assert len(ours) > 25
    for const, name in ours.items():
        if name in NOT_IN_THE_PACKAGE:
            assert name not in upstream, f"{name} is in opentelemetry-semantic-conventions now: compare it"
            continue
        assert name in upstream, f"sc.{const} = {name!r} is not a name of opentelemetry-semantic-conventions"
        expected = name.upper().replace(".", "_")
        assert expected in upstream[name], (const, name, upstream[name])
        for upstream_const, doc in upstream[name].items():
            assert "Replaced by" not in doc, f"{name} ({upstream_const}) is deprecated upstream: {doc.strip()}"


def test_the_closed_values_we_emit_are_the_packages():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)       # "moved to the GenAI repository"
        from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as g
        ops = {m.value for m in g.GenAiOperationNameValues}
        tokens = {m.value for m in g.GenAiTokenTypeValues}
    assert {sc.OP_INVOKE_AGENT, sc.OP_CHAT, sc.OP_EXECUTE_TOOL} <= ops
    assert {sc.TOKEN_TYPE_INPUT, sc.TOKEN_TYPE_OUTPUT} <= tokens


def test_the_conventions_version_is_recorded_once_and_shown_in_the_docs():
    text = (ROOT / "docs" / "telemetry.md").read_text()
    assert f"v{sc.GENAI_SEMCONV_VERSION}" in text and sc.SCHEMA_URL in text and sc.SEMCONV_VERSION in text
    hits = [p for p in (ROOT / "agentobs").rglob("*.py") if '"0.1.0"' in p.read_text() and p.name != "__init__.py"]
    assert hits == [ROOT / "agentobs" / "contract" / "semconv.py"]


def test_span_kinds_are_span_kind_names():
    from opentelemetry.trace import SpanKind
    for kind in (sc.KIND_INVOKE_AGENT, sc.KIND_STEP, sc.KIND_CHAT, sc.KIND_EXECUTE_TOOL):
        assert kind in SpanKind.__members__
    assert sc.KIND_INVOKE_AGENT == "INTERNAL"          # an in-process agent


# -- one digest ----------------------------------------------------------------------------------------------------

def test_the_digest_of_our_calls_is_unchanged():
    # pinned: traces and snapshots written before the contract carry these
    assert digest("get_order", {"order_id": "ord_1001"}) == "e4f24328fd"
    refund = {"order_id": "ord_1001", "amount_cents": 3000, "reason": "damaged"}
    assert digest("issue_refund", refund) == "979e207a41"
    assert digest("issue_refund", dict(reversed(list(refund.items())))) == "979e207a41"      # key order


def test_a_recorded_arguments_string_digests_like_the_call_that_made_it():
    args = {"order_id": "ord_1001", "amount_cents": 3000, "reason": "damaged", "items": [1, {"b": 2, "a": None}]}
    for text in (json.dumps(args), json.dumps(args, indent=2), json.dumps(args, sort_keys=True, separators=(",", ":")),
                 json.dumps(dict(reversed(list(args.items()))))):
        assert digest_arguments("issue_refund", text) == digest("issue_refund", args)
    assert digest_arguments("t", "not json {") == digest("t", "not json {")      # text that is not JSON
    assert digest_arguments("t", '"x"') == digest("t", "x")                      # a JSON string is its value
    assert digest_arguments("t", "[" * 100_000) == digest("t", "[" * 100_000)    # too deep to parse: as text
    assert digest_arguments("a", "{}") != digest_arguments("b", "{}")


# -- one retry policy ----------------------------------------------------------------------------------------------

def test_retry_policy_waits_are_deterministic_and_bounded():
    p = RetryPolicy(attempts=4, base_s=0.06, factor=2.0)
    assert [p.wait_s(n) for n in (1, 2, 3)] == [0.06, 0.12, 0.24]
    assert [p.may_retry(n) for n in (1, 3, 4)] == [True, True, False]
    capped = RetryPolicy(attempts=10, base_s=1.0, factor=3.0, max_wait_s=5.0)
    assert [capped.wait_s(n) for n in (1, 2, 3, 8)] == [1.0, 3.0, 5.0, 5.0]
    jittered = RetryPolicy(base_s=1.0, jitter=0.5)
    waits = [jittered.wait_s(1, random.Random(7)) for _ in range(3)]
    assert waits == [jittered.wait_s(1, random.Random(7))] * 3 and 0.5 <= waits[0] <= 1.5
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.attempts = 9  # type: ignore[misc]
    with pytest.raises(TypeError):
        RetryPolicy(3)  # type: ignore[misc]   # keyword-only


@pytest.mark.parametrize("bad", [dict(attempts=0), dict(attempts=True), dict(base_s=-1), dict(factor=0.5),
                                 dict(max_wait_s=float("nan")), dict(jitter=2.0), dict(base_s=float("inf"))])
def test_retry_policy_refuses_what_makes_no_sense(bad):
    with pytest.raises(ConfigError, match="RetryPolicy: "):
        RetryPolicy(**bad)


def test_the_kernels_retries_follow_the_budgets_policy():
    from agentobs import Budget
    p = Budget(max_attempts=4, backoff_s=0.05).retry_policy()
    assert (p.attempts, [p.wait_s(n) for n in (1, 2, 3)], p.jitter) == (4, [0.05, 0.1, 0.2], 0.0)


# -- events: keyword-only values -----------------------------------------------------------------------------------

EVENT_TYPES = [t for t in vars(ev).values() if isinstance(t, type) and dataclasses.is_dataclass(t)]


def test_events_and_snapshots_are_keyword_only_frozen_slotted_values():
    assert len(EVENT_TYPES) == 22
    for t in EVENT_TYPES:
        params = t.__dataclass_params__  # type: ignore[attr-defined]
        assert params.frozen and "__slots__" in vars(t), t
        assert all(f.kw_only for f in dataclasses.fields(t)), t
        hints = inspect.get_annotations(t)
        for name, hint in hints.items():      # values and snapshots: nothing of the kernel, no Any but the payloads
            assert "State" not in str(hint) and "Budget" not in str(hint), (t.__name__, name, hint)
            if hint in ("Any", "Mapping[str, Any]"):
                assert name in ("reply", "args", "result"), (t.__name__, name)


def test_an_event_cannot_be_built_positionally():
    with pytest.raises(TypeError):
        ev.StepStarted(1, 2)  # type: ignore[misc]
    e = ev.StepStarted(index=1, at_ns=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.index = 3  # type: ignore[misc]


def test_the_kernel_emits_snapshots_not_its_state():
    from agentobs import EventLog
    from agentobs.domain.scenarios import SEED000
    log = EventLog()
    r = SEED000["A normal run"]([log])
    started, finished = log.of(ev.RunStarted)[0], log.of(ev.RunFinished)[0]
    assert started.limits == ev.Limits(max_steps=8, max_tool_calls=6, max_tokens=4000, max_output_tokens=300,
                                       max_usd=None, deadline_s=30.0, max_repeat=2, max_stalls=3, max_plan_steps=6)
    assert (finished.stop, finished.status, finished.outcome) == (StopReason.DONE, RunStatus.STOPPED, "completed")
    assert finished.totals == r.state.totals() and finished.totals.tokens == 708
    r.state.tokens += 1                                 # the state moves on; the event does not
    assert finished.totals.tokens == 708
    assert log.of(ev.PlanAccepted)[0].plan_step_ids == ("s1", "s2", "s3")


# -- vocabularies --------------------------------------------------------------------------------------------------

def test_vocabularies_are_closed_and_complete():
    assert set(CATEGORY) == set(StopReason) and {StopReason.NEEDS_APPROVAL} == SUSPENDING
    assert [status_of(s) for s in (StopReason.DONE, StopReason.NEEDS_APPROVAL)] == [RunStatus.STOPPED,
                                                                                    RunStatus.SUSPENDED]
    assert str(StopReason.MAX_USD) == f"{StopReason.MAX_USD}" == "max_usd"
    assert [result_status(r) for r in ({"status": "ok"}, {"status": "error", "code": "not_found"},
                                       {"status": "error"}, {"status": 3}, {})] == \
        ["ok", "not_found", "error", "error", "error"]


# -- the standard library only ---------------------------------------------------------------------------------------

def test_the_contract_imports_only_the_standard_library():
    allowed_lazy = {("pricing.py", "genai_prices"),     # the price table, looked up on first use
                    ("linear_rx.py", "re2")}            # the redaction rules' linear-time engine (google-re2)
    for path in sorted((ROOT / "agentobs" / "contract").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                assert node.level == 1 or node.module == "errors", (path.name, node.module)   # ours: errors only
                continue
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) else []
            for name in names:
                top = name.split(".")[0]
                assert top in sys.stdlib_module_names or (path.name, top) in allowed_lazy, (path.name, name)


def test_the_contract_imports_and_prices_without_genai_prices():
    code = ("import sys; sys.modules['genai_prices'] = None\n"
            "import agentobs.contract as c\n"
            "print(c.Prices({'m': (1.0, 2.0)}).cost('m', None, 1_000_000, 1_000_000))\n"
            "print(sorted(m for m in sys.modules if m.startswith(('agentobs.', 'opentelemetry'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0] == "3.0"
    assert all(m.startswith(("agentobs.contract", "agentobs.errors")) for m in eval(out[1])), out[1]
