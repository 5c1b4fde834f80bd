"""Pricing as arithmetic (issue 17, point 1): ``analysis.pricing`` against ``genai_prices.calc_price``, call by call."""
import csv
import json
import sys
import warnings
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from genai_prices import Usage, calc_price, data_snapshot, types
from hypothesis import given, settings
from hypothesis import strategies as st
from locations import ROOT, TAU2

from agentobs.analysis.derive.pricing import price, price_calls
from agentobs.analysis.derive.runs import derive_runs
from agentobs.analysis.load.sources import load_sources
from agentobs.cli.main import cli
from agentobs.contract.pricing import Prices
from agentobs.domain import population

WHEN = datetime(2025, 10, 1, 12, 0, tzinfo=UTC)
REL = 1e-9

# Popular models across providers; the provider is None where genai-prices infers it from the name.
POPULAR = [
    ("gpt-4o", None), ("gpt-4o-mini", None), ("gpt-4o-2024-08-06", "openai"), ("gpt-4.1", None),
    ("gpt-4.1-mini", None), ("gpt-4.1-nano", None), ("o1", None), ("o3", None), ("o3-mini", None),
    ("o4-mini", None), ("gpt-5", None), ("gpt-5-mini", None), ("gpt-3.5-turbo", None),
    ("gpt-4o", "azure.ai.openai"),
    ("claude-3-5-sonnet-20241022", None), ("claude-3-5-haiku-20241022", None), ("claude-3-7-sonnet-20250219", None),
    ("claude-sonnet-4-20250514", None), ("claude-sonnet-4-5", None), ("claude-opus-4-20250514", None),
    ("claude-opus-4-1", None), ("claude-3-opus-20240229", None), ("claude-3-haiku-20240307", None),
    ("claude-haiku-4-5", None), ("anthropic.claude-3-5-sonnet-20241022-v2:0", "aws.bedrock"),
    ("gemini-1.5-flash", None), ("gemini-1.5-pro", None), ("gemini-2.0-flash", None),
    ("gemini-2.0-flash-lite", None), ("gemini-2.5-flash", None), ("gemini-2.5-pro", "gcp.gemini"),
    ("gemini-2.5-flash-lite", None),
    ("mistral-large-latest", None), ("mistral-small-latest", "mistral_ai"), ("codestral-latest", None),
    ("open-mistral-nemo", None), ("deepseek-chat", None), ("deepseek-reasoner", "deepseek"),
    ("llama-3.3-70b-versatile", "groq"), ("llama-3.1-8b-instant", "groq"), ("grok-3", None), ("grok-4", "x_ai"),
    ("command-r-plus", None),
]
TIERED = ["gemini-1.5-flash", "gemini-1.5-pro", "gemini-2.5-pro", "claude-sonnet-4-5"]


def reference(model, provider, tin, tout, cr=0, cw=0, when=WHEN):
    """genai-prices' own answer for one call; NaN when it cannot price it."""
    try:
        return float(calc_price(Usage(input_tokens=int(tin), output_tokens=int(tout), cache_read_tokens=int(cr),
                                      cache_write_tokens=int(cw)),
                                model, provider_id=_provider_id(provider), genai_request_timestamp=when).total_price)
    except Exception:  # unknown model or refused usage
        return float("nan")


def _provider_id(provider):
    """The provider as genai-prices is asked: ours passes one it does not know as 'infer from the model name'."""
    if provider is None:
        return None
    snap = data_snapshot.get_snapshot()
    return provider if data_snapshot.find_provider_by_id(snap.providers, provider) else None


def sample(rng, n, max_tokens=2_000_000):
    """Token counts from 1 to 2M spread log-uniformly, cache reads on about half the calls, writes on a third."""
    tin = np.floor(np.exp(rng.uniform(0, np.log(max_tokens), n)))
    tout = np.floor(np.exp(rng.uniform(0, np.log(200_000), n)))
    cr = np.floor(tin * rng.uniform(0, 1, n) * (rng.uniform(size=n) < 0.5))
    cw = np.floor((tin - cr) * rng.uniform(0, 1, n) * (rng.uniform(size=n) < 0.35))
    return tin, tout, cr, cw


def assert_same(got, want, what):
    got, want = np.asarray(got, float), np.asarray(want, float)
    assert np.array_equal(np.isnan(got), np.isnan(want)), (what, np.flatnonzero(np.isnan(got) != np.isnan(want)))
    ok = ~np.isnan(want)
    err = np.abs(got[ok] - want[ok])
    assert (err <= REL * np.maximum(np.abs(want[ok]), 1e-6)).all(), (what, float(err.max()))
    assert (err <= 1e-4).all()


def check_models(pairs, rng, n=120):
    models = [m for m, _ in pairs for _ in range(n)]
    providers = [p for _, p in pairs for _ in range(n)]
    tin, tout, cr, cw = sample(rng, len(models))
    got = price(models, providers, tin, output_tokens=tout, cache_read_tokens=cr,
                cache_creation_tokens=cw, as_of=WHEN)
    want = [reference(m, p, *t) for m, p, *t in zip(models, providers, tin, tout, cr, cw, strict=True)]
    assert_same(got.cost, want, "sample")
    unknown = {m for (m, p) in pairs if np.isnan(reference(m, p, 1000, 100))}
    assert set(got.unknown_models) == unknown
    assert all(got.unknown_models[m] == n * sum(1 for mm, _ in pairs if mm == m) for m in unknown)
    return got


# -- the models we test on, and popular ones ------------------------------------------------------

def test_popular_models_are_priced_exactly_as_calc_price():
    got = check_models(POPULAR, np.random.default_rng(17))
    assert not got.unknown_models                         # every one of them is known to genai-prices
    assert got.library_calls == 0                         # and vectorized
    assert len(POPULAR) >= 30


@pytest.mark.skipif(not TAU2.exists(), reason="shared tau2 data not present")
def test_models_of_the_tau2_transcripts():
    spans = load_sources([str(TAU2)]).spans
    chats = spans[spans["gen_ai.operation.name"] == "chat"]
    pairs = sorted(set(zip(chats["gen_ai.request.model"], chats["gen_ai.provider.name"], strict=True)))
    assert ("gpt-4.1", "openai") in pairs
    got = check_models(pairs, np.random.default_rng(5))
    assert list(got.unknown_models) == ["ft:gpt-4.1-2025-04-14:sierra:tau2-full-sft:BzrYdMNm"]   # a fine-tune
    # and the transcripts' own token counts
    tin, tout = chats["gen_ai.usage.input_tokens"].to_numpy(float), chats["gen_ai.usage.output_tokens"].to_numpy(float)
    cost = price_calls(chats["gen_ai.request.model"], chats["gen_ai.provider.name"], tin, output_tokens=tout,
                       as_of=WHEN)
    want = [reference(m, p, i, o) for m, p, i, o in zip(chats["gen_ai.request.model"], chats["gen_ai.provider.name"],
                                                         tin, tout, strict=True)]
    assert_same(cost, want, "tau2 tokens")
    assert np.isfinite(cost).sum() == (chats["gen_ai.request.model"] == "gpt-4.1").sum()


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    d = tmp_path_factory.mktemp("sim")
    out = d / "sim.jsonl"
    res = CliRunner().invoke(cli, ["simulate", "--runs", "120", "--seed", "5", "--traces-out", str(out)])
    assert res.exit_code == 0, res.output
    manifest = json.loads((d / "sim-manifest.json").read_text())
    return load_sources([str(out)]).spans, manifest


def test_models_of_the_simulate_output_and_the_kernel_agree(simulated):
    spans, manifest = simulated
    chats = spans[spans["gen_ai.operation.name"] == "chat"]
    pairs = sorted(set(zip(chats["gen_ai.request.model"], chats["gen_ai.provider.name"], strict=True)))
    priced_as = [(population.PRICE_AS, None), ("gemini-3.5-flash", None)]     # the models simulate prices with
    got = check_models(pairs + priced_as, np.random.default_rng(9))
    assert set(got.unknown_models) == {"support-policy-sim"}
    # the kernel's recorded cost of every call is what the vectorized path computes for its priced-as model
    pattern = {t: r["pattern"] for r in manifest["runs"] for t in r["trace_ids"]}
    model = np.where(chats["trace_id"].map(pattern) == "budget_exhausted", "gemini-3.5-flash", population.PRICE_AS)
    assert (model == "gemini-3.5-flash").any() and (model == population.PRICE_AS).any()
    tin = chats["gen_ai.usage.input_tokens"].to_numpy(float)
    tout = chats["gen_ai.usage.output_tokens"].to_numpy(float)
    recorded = chats["agentobs.call.cost_usd"].to_numpy(float)
    assert np.isfinite(recorded).all()
    assert_same(price_calls(model, None, tin, output_tokens=tout), recorded, "kernel")


def test_every_model_genai_prices_knows():
    """The whole table: each model of each provider, by its id, at two dates (one at DeepSeek's off-peak hour)."""
    snap = data_snapshot.get_snapshot()
    pairs = [(m.id, p.id) for p in snap.providers for m in p.models]
    assert len(pairs) > 500
    rng = np.random.default_rng(23)
    models = [m for m, _ in pairs for _ in range(4)]
    providers = [p for _, p in pairs for _ in range(4)]
    tin, tout, cr, cw = sample(rng, len(models))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for when in (WHEN, datetime(2026, 9, 20, 2, 0, tzinfo=UTC)):
            got = price(models, providers, tin, output_tokens=tout, cache_read_tokens=cr,
                        cache_creation_tokens=cw, as_of=when)
            want = [reference(m, p, *t, when=when)
                    for m, p, *t in zip(models, providers, tin, tout, cr, cw, strict=True)]
            assert_same(got.cost, want, when)
            assert np.isfinite(got.cost).mean() > 0.9
            assert got.library_calls < 50                  # only the odd model is priced call by call


# -- tiers, dates, custom prices ------------------------------------------------------------------

def _tier_starts(model):
    mp = calc_price(Usage(input_tokens=1, output_tokens=1), model, genai_request_timestamp=WHEN).model_price
    starts = {t.start for v in mp.__dict__.values() if isinstance(v, types.TieredPrices) for t in v.tiers}
    assert starts, model
    return sorted(starts)


def test_calls_across_a_tier_boundary():
    rows = []
    for model in TIERED:
        for start in _tier_starts(model):
            for tin in (start - 1, start, start + 1, start + 2, 2 * start):
                for cr in (0, tin // 3):
                    rows.append((model, tin, 1234, cr, tin // 10 if cr else 0))
    models, tin, tout, cr, cw = (list(c) for c in zip(*rows, strict=True))
    got = price_calls(models, None, tin, output_tokens=tout, cache_read_tokens=cr, cache_creation_tokens=cw,
                      as_of=WHEN)
    assert_same(got, [reference(m, None, *t) for m, *t in rows], "tiers")
    # the cliff: one token more than the start prices the whole call at the tier's rate
    below, above = price_calls(["gemini-2.5-pro"] * 2, None, [200_000, 200_001], output_tokens=[0, 0], as_of=WHEN)
    assert above / 200_001 > below / 200_000 * 1.5


@settings(max_examples=150, deadline=None)
@given(model=st.sampled_from(TIERED), tin=st.integers(0, 3_000_000), tout=st.integers(0, 300_000),
       cached=st.floats(0, 1), written=st.floats(0, 1))
def test_random_token_counts_on_tiered_models(model, tin, tout, cached, written):
    cr = int(tin * cached)
    cw = int((tin - cr) * written)
    got = price_calls([model], None, [tin], output_tokens=[tout], cache_read_tokens=[cr], cache_creation_tokens=[cw],
                      as_of=WHEN)
    assert_same(got, [reference(model, None, tin, tout, cr, cw)], (model, tin, tout, cr, cw))


def test_prices_follow_the_date_and_the_hour():
    # o3 got cheaper on 2025-06-10; deepseek-chat has an off-peak price by time of day (UTC)
    for model, whens in (("o3", [datetime(2025, 6, 1, tzinfo=UTC), datetime(2025, 6, 20, tzinfo=UTC)]),
                         ("deepseek-chat", [datetime(2025, 9, 1, 1, 0, tzinfo=UTC),
                                            datetime(2025, 9, 1, 20, 0, tzinfo=UTC)])):
        costs = [price_calls([model], None, [100_000], output_tokens=[5_000], cache_read_tokens=[20_000], as_of=w)[0]
                 for w in whens]
        assert costs[0] != costs[1]
        assert_same(costs, [reference(model, None, 100_000, 5_000, 20_000, when=w) for w in whens], model)


def test_each_call_is_priced_when_it_was_made_whenever_the_report_runs(tmp_path, monkeypatch):
    """A run's cost is what its calls paid when they were made (deepseek-chat off-peak and at the full price, an
    old o3 call before its price cut), the same at any hour the report runs."""
    off_peak, peak = datetime(2025, 9, 1, 17, 0, tzinfo=UTC), datetime(2025, 9, 1, 3, 0, tzinfo=UTC)
    calls = [("deepseek-chat", off_peak), ("deepseek-chat", peak), ("o3", datetime(2025, 6, 1, tzinfo=UTC))]
    spans = [{"traceId": "a" * 32, "spanId": "1" * 16, "name": "invoke_agent helper", "kind": 1,
              "startTimeUnixNano": str(int(datetime(2025, 6, 1, tzinfo=UTC).timestamp()) * 10**9),
              "endTimeUnixNano": str(int(off_peak.timestamp() + 60) * 10**9),
              "attributes": [_attr("gen_ai.operation.name", "invoke_agent")]}]
    for i, (model, at) in enumerate(calls):
        t = int(at.timestamp()) * 10**9
        spans.append({"traceId": "a" * 32, "spanId": f"{i + 2:016x}", "parentSpanId": "1" * 16,
                      "name": f"chat {model}", "kind": 3, "startTimeUnixNano": str(t),
                      "endTimeUnixNano": str(t + 10**9),
                      "attributes": [_attr("gen_ai.operation.name", "chat"), _attr("gen_ai.request.model", model),
                                     _attr("gen_ai.usage.input_tokens", 100_000),
                                     _attr("gen_ai.usage.output_tokens", 5_000)]})
    path = tmp_path / "calls.jsonl"
    path.write_text(json.dumps({"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [
        {"scope": {"name": "x"}, "spans": spans}]}]}) + "\n")
    want = sum(reference(m, None, 100_000, 5_000, when=at) for m, at in calls)
    assert want != pytest.approx(sum(reference(m, None, 100_000, 5_000, when=peak) for m, _ in calls))
    costs = []
    for hour in (2, 20):                     # the report runs at the full price's hour, then off-peak
        now = datetime(2026, 12, 1, hour, tzinfo=UTC)
        monkeypatch.setattr("agentobs.analysis.derive.pricing.datetime", type("D", (datetime,), {
            "now": staticmethod(lambda tz=None, _n=now: _n)}))
        runs, _, _ = derive_runs(load_sources([str(path)]))
        costs.append(float(runs["cost_usd"].iloc[0]))
    assert costs[0] == costs[1] == pytest.approx(want, rel=1e-9)


def test_custom_prices_agree_with_the_kernel_and_take_precedence():
    custom = {"my-model": (1.5, 6.0), "gpt-4o": (1.0, 1.0)}
    kernel = Prices(custom)
    rng = np.random.default_rng(3)
    tin, tout, cr, _ = sample(rng, 300)
    models = rng.choice(["my-model", "gpt-4o", "gpt-4o-mini"], 300)
    got = price_calls(models, None, tin, output_tokens=tout, cache_read_tokens=cr, custom=custom, as_of=WHEN)
    want = [kernel.cost(m, None, int(i), int(o)) for m, i, o in zip(models, tin, tout, strict=True)]
    mini = models == "gpt-4o-mini"          # no custom price: genai-prices, cache reads at the cache price
    want = np.where(mini, [reference(m, None, i, o, c) for m, i, o, c in zip(models, tin, tout, cr, strict=True)], want)
    assert_same(got, want, "custom")
    only = price(models, None, tin, output_tokens=tout, custom=custom, use_genai_prices=False)
    assert np.isnan(only.cost[mini]).all() and only.unknown_models == {"gpt-4o-mini": int(mini.sum())}


def test_what_cannot_be_priced_is_nan_and_counted():
    models = ["gpt-4o", "gpt-4o", None, "no-such-model", "gpt-4o", "gpt-4o", "llama-3.3-70b-versatile",
              "support-policy-sim"]
    providers = ["openai", "openai", "openai", None, "agentobs", "x_ai", "openai", "agentobs"]
    tin = [1000, None, 1000, 1000, 1000, 1000, 1000, 1000]
    tout = [10, 10, 10, 10, 10, 10, 10, 10]
    cr = [2000, 0, 0, 0, 0, 0, 0, 0]                      # more cache reads than input tokens: refused
    got = price(models, providers, tin, output_tokens=tout, cache_read_tokens=cr)
    assert np.isnan(got.cost[:4]).all()
    # a provider genai-prices does not know ("agentobs", semconv's "x_ai") is inferred from the model name
    assert got.cost[4] == got.cost[5] == pytest.approx(reference("gpt-4o", None, 1000, 10, when=None))
    # a provider it knows that has no such model: not priced, as calc_price says
    assert np.isnan(got.cost[6]) and np.isnan(got.cost[7])
    assert got.no_model == 1 and got.bad_usage == 2
    assert got.unknown_models == {"no-such-model": 1, "llama-3.3-70b-versatile": 1, "support-policy-sim": 1}
    assert got.unpriced == 6
    assert len(price_calls([], None, [], output_tokens=[])) == 0


def test_a_model_id_with_its_provider_in_front_is_priced_as_that_providers_model():
    """Genkit's ``openai/gpt-4o-mini``, LiteLLM's ``anthropic/...``, a gateway's: not a model id genai-prices knows,
    so the part after the slash is looked up as a model of the provider before it (one it does not know, Genkit's
    ``googleai``, is inferred from the model name); an id that matches nothing either way stays unpriced."""
    models = ["openai/gpt-4o-mini", "googleai/gemini-2.5-flash", "anthropic/claude-sonnet-4-5", "local/no-such-model"]
    got = price(models, None, [1000] * 4, output_tokens=[100] * 4, as_of=WHEN)
    want = [reference("gpt-4o-mini", "openai", 1000, 100), reference("gemini-2.5-flash", None, 1000, 100),
            reference("claude-sonnet-4-5", "anthropic", 1000, 100), float("nan")]
    assert_same(got.cost, want, "provider/model ids")
    assert not np.isnan(want[:3]).any()
    assert got.unknown_models == {"local/no-such-model": 1}


# -- through the analysis --------------------------------------------------------------------------

def _attr(k, v):
    return {"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}}


def test_runs_price_foreign_calls_with_cache_tokens_and_provider(tmp_path):
    """Spans of another instrumentation (no recorded cost) through ``agentobs runs``: each run's cost is the sum
    of calc_price over its calls, with cache tokens and provider, the response model when the request's is absent;
    a run with a call genai-prices cannot price (mystery-7b) has no cost, not the sum of the calls it could price."""
    rng = np.random.default_rng(1)
    calls = {"t1": [("gemini-2.5-pro", None, "gcp.gemini", 150_000, 800, 60_000, 0),
                    ("gemini-2.5-pro", None, "gcp.gemini", 250_000, 900, 200_000, 0),
                    (None, "claude-sonnet-4-5", "anthropic", 30_000, 700, 10_000, 5_000)],
             "t2": [("gpt-4.1-mini", None, "openai", int(x), 300, int(x) // 2, 0) for x in rng.integers(1, 9e4, 6)],
             "t3": [("llama-3.3-70b-versatile", None, "groq", 4000, 200, 0, 0),
                    ("mystery-7b", None, None, 10, 1, 0, 0)]}
    spans = []
    for t, (_tid, rows) in enumerate(calls.items()):
        trace = f"{t + 1:032x}"
        root = f"{t + 1:015x}0"
        spans.append({"traceId": trace, "spanId": root, "name": "invoke_agent helper", "kind": 1,
                      "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000009000000000",
                      "attributes": [_attr("gen_ai.operation.name", "invoke_agent")]})
        for i, (req, resp, prov, tin, tout, cr, cw) in enumerate(rows):
            attrs = [_attr("gen_ai.operation.name", "chat"), _attr("gen_ai.usage.input_tokens", tin),
                     _attr("gen_ai.usage.output_tokens", tout), _attr("gen_ai.usage.cache_read.input_tokens", cr),
                     _attr("gen_ai.usage.cache_creation.input_tokens", cw)]
            attrs += [_attr(k, v) for k, v in (("gen_ai.request.model", req), ("gen_ai.response.model", resp),
                                              ("gen_ai.provider.name", prov)) if v]
            spans.append({"traceId": trace, "spanId": f"{t + 1:014x}{i + 1:02x}", "parentSpanId": root,
                          "name": f"chat {req or resp}", "kind": 3, "attributes": attrs,
                          "startTimeUnixNano": str(1700000000000000000 + i * 10**9),
                          "endTimeUnixNano": str(1700000000500000000 + i * 10**9)})
    path = tmp_path / "foreign.jsonl"
    doc = {"resourceSpans": [{"resource": {"attributes": [_attr("service.name", "helper")]},
                              "scopeSpans": [{"scope": {"name": "x"}, "spans": spans}]}]}
    path.write_text(json.dumps(doc) + "\n")
    out = tmp_path / "runs.csv"
    res = CliRunner().invoke(cli, ["runs", str(path), "--out", str(out)])
    assert res.exit_code == 0, res.output
    got = {r["trace_id"]: r["cost_usd"] for r in csv.DictReader(out.open())}
    for t, rows in enumerate(calls.values()):
        each = [reference(req or resp, prov, tin, tout, cr, cw, when=None)
                for req, resp, prov, tin, tout, cr, cw in rows]
        if t == 2:
            assert not np.isnan(each[0]) and np.isnan(each[1]) and got[f"{t + 1:032x}"] == ""
            continue
        assert float(got[f"{t + 1:032x}"]) == pytest.approx(sum(each), rel=1e-9)
    report = tmp_path / "report.json"
    res = CliRunner().invoke(cli, ["report", str(path), "--out", str(report)])
    assert res.exit_code == 0, res.output
    notes = json.loads(report.read_text())["not_derived"]["notes"]
    assert any(n.startswith("1 runs have model calls that could not be priced") for n in notes), notes


def test_realistic_benchmark_data_is_priced_call_by_call_as_calc_price(tmp_path):
    """The realistic generator's traces (many models and providers, cache tokens, errors): every chat span priced
    as calc_price prices it, the models the generator declares unknown to genai-prices are the unpriced ones,
    and the runs table agrees with the generator's ground truth."""
    sys.path.insert(0, str(ROOT))
    from bench.realistic import generate

    path = tmp_path / "realistic.jsonl"
    totals = generate(path, 4000, seed=3, dialects="genai")
    manifest = json.loads(Path(totals["manifest"]).read_text())
    spans = load_sources([str(path)]).spans
    chats = spans[(spans["gen_ai.operation.name"] == "chat") & spans["gen_ai.usage.input_tokens"].notna()]
    cols = ["gen_ai.request.model", "gen_ai.provider.name", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens",
            "gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_creation.input_tokens"]
    m, p, tin, tout, cr, cw = (chats[c].to_numpy(dtype=object) for c in cols)
    cr, cw = (np.array([0 if v is None or v is pd.NA else v for v in x], dtype=float) for x in (cr, cw))
    assert (cr > 0).any() and (cw > 0).any() and len(set(m)) >= 8
    got = price(m, p, tin.astype(float), output_tokens=tout.astype(float), cache_read_tokens=cr,
                cache_creation_tokens=cw, as_of=WHEN)
    want = [reference(*row, when=WHEN) for row in zip(m, p, tin, tout, cr, cw, strict=True)]
    assert_same(got.cost, want, "realistic")
    unpriced = {k for k, v in manifest["models"].items() if not v["priced_by_genai_prices"]}
    assert set(got.unknown_models) == unpriced & set(m)
    # the runs table against the ground truth, for single-run traces (derive_runs alone: the caps' candidate
    # tables are not what this test is about)
    runs = derive_runs(load_sources([str(path)]))[0]
    runs = runs[runs["agent"].notna()].set_index("trace_id")
    truth = pd.DataFrame(manifest["run_rows"], columns=manifest["run_columns"])
    truth = truth[truth["runs_in_trace"] == 1].set_index("trace_id")
    assert len(truth) > 50
    for col in ("tool_calls", "input_tokens", "output_tokens", "success"):
        assert (runs.loc[truth.index, col].astype(float).to_numpy() == truth[col].astype(float).to_numpy()).all(), col
    # the generator counts model call spans; a call that failed (a 429) and was made again is one logical call of
    # two attempts: the spans are the attempts
    mine = runs.loc[truth.index]
    assert (mine["attempts"].astype(float).to_numpy() == truth["model_calls"].astype(float).to_numpy()).all()
    assert (mine["model_calls"] <= mine["attempts"]).all() and (mine["model_calls"] < mine["attempts"]).any()
    priced = ~truth["model"].isin(unpriced).to_numpy()
    assert runs.loc[truth.index, "cost_usd"][priced].notna().all()
    assert runs.loc[truth.index, "cost_usd"][~priced].isna().all()
