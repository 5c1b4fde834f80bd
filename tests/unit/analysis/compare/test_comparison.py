"""Compare (issue 46, point 2): ``agentobs diff BEFORE AFTER``, or two windows of one source.

- Two halves of one simulated population (one source, two windows) show no significant change; neither do random
  halves of it, in all but a few of 40 splits (Holm's correction keeps the chance of any false alarm under 5%).
- Two different populations (a second simulation without its repeated-call and no-progress runs and most of its
  short healthy runs: another failure mix, longer runs) show the
  changes an independent computation finds: each share's change against a two-proportion z-test computed by hand,
  each percentile's and cap's against a bootstrap done the plain way (resampling the runs, numpy's percentile of
  each resample), with Holm's correction done by hand; their intervals agree.
- The resampling's shortcut (a resample's order statistic drawn through a Beta law) against the exact law computed
  by hand; Holm's adjusted p-values against a hand computation.
- Terminal (every line within 80 columns), JSON (every measure an object with before, after, change, ci,
  significant) and HTML (escaped, no script); ``--labels`` twice, each file labelling the runs its ids match.
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from locations import TESTS

from agentobs.analysis import analyze
from agentobs.analysis.assess.limits import BY_COLUMN, cap_of, within_rank
from agentobs.analysis.compare._resample import holm, order_draws, rank_of, rng_for
from agentobs.analysis.compare.comparison import QUANTILES, compare, diff, measures
from agentobs.analysis.report.summary import METRICS, Options
from agentobs.analysis.select.selection import Selection
from agentobs.cli.main import cli
from agentobs.cli.simulate import _trace_id
from agentobs.domain.population import Record, simulate
from agentobs.telemetry import configure

T0 = 1_780_000_000 * 10**9


def _population(path: Path, runs: int, seed: int, leave_out: Callable[[Record], bool] | None = None) -> Path:
    """A simulated population written as OTLP JSON lines, without the runs ``leave_out`` names (another mix)."""
    tel = configure(traces_out=path)
    records = simulate(runs, seed, observers=lambda: [tel.observer()], trace_id_of=_trace_id, start_ns=T0)
    tel.shutdown()
    if leave_out is not None:
        drop = {t for r in records if leave_out(r) for t in r.trace_ids}
        out = []
        for line in path.read_text().splitlines():
            req = json.loads(line)
            for rs in req["resourceSpans"]:
                for ss in rs["scopeSpans"]:
                    ss["spans"] = [s for s in ss["spans"] if s["traceId"] not in drop]
            out.append(json.dumps(req))
        path.write_text("\n".join(out) + "\n")
    return path


def _other_mix(r: Record) -> bool:
    """Most short healthy runs, and every repeated-call and no-progress run, left out."""
    return (r.pattern == "healthy" and r.steps < 6 and r.index % 8 != 0) or r.pattern in ("repeated_call",
                                                                                           "no_progress")


@pytest.fixture(scope="module")
def populations(tmp_path_factory) -> tuple[Path, Path]:
    work = tmp_path_factory.mktemp("diff")
    return (_population(work / "before.jsonl", 600, seed=11),
            _population(work / "after.jsonl", 600, seed=12, leave_out=_other_mix))


# -- no change where there is none -------------------------------------------------------------------------------

def test_two_halves_of_one_population_show_no_significant_change(populations):
    path = populations[0]
    runs = analyze([str(path)]).runs
    middle = runs["start"].sort_values().iloc[len(runs) // 2].to_pydatetime()
    c = diff([str(path)], [str(path)], before_options=Options(selection=Selection(until=middle)),
             after_options=Options(selection=Selection(since=middle)))
    assert c.before.runs + c.after.runs == len(runs) and abs(c.before.runs - c.after.runs) <= 1
    assert c.comparisons >= 25
    # the caps of fewer than 300 successful runs a side rest on fewer than 3 runs above them: shown, not tested
    assert {m.key for m in c.measures if m.key != "runs" and not m.tested} <= {m.key for m in c.section("caps")}
    assert [m.key for m in c.measures if m.significant] == []
    assert all(m.significant is False for m in c.measures if m.p is not None)


def test_random_halves_of_a_population_rarely_show_a_change(populations):
    """The family-wise error rate, measured: Holm keeps the chance of any false "significant" under 5%."""
    runs = analyze([str(populations[0])]).runs
    rng = np.random.default_rng(46)
    alarms = 0
    for i in range(40):
        order = rng.permutation(len(runs))
        half = len(runs) // 2
        ms = measures(runs.iloc[order[:half]], runs.iloc[order[half:]], seed=i, resamples=4000)
        alarms += any(m.significant for m in ms)
    assert alarms <= 5                     # expected about 2 (5% of 40); 6 or more has a chance under 2% at 5%


# -- the changes an independent computation finds -------------------------------------------------------------

def _z_test(k1: int, n1: int, k2: int, n2: int) -> tuple[float, tuple[float, float]]:
    """Two-proportion z-test (unpooled standard error), by hand: p-value and 95% interval of the change."""
    p1, p2 = k1 / n1, k2 / n2
    se = math.sqrt(p1 * (1 - p1) / n1 + p2 * (1 - p2) / n2)
    d = p2 - p1
    p = math.erfc(abs(d) / se / math.sqrt(2)) if se else (1.0 if d == 0 else 0.0)
    return p, (d - 1.959964 * se, d + 1.959964 * se)


def _plain_bootstrap(x: np.ndarray, y: np.ndarray, stat, b: int, seed: int) -> np.ndarray:
    """The change of ``stat`` over b resamples of each side's values, drawn the plain way."""
    rng = np.random.default_rng(seed)
    out = np.empty(b)
    for i in range(b):
        out[i] = stat(rng.choice(y, len(y))) - stat(rng.choice(x, len(x)))
    return out


def _hand_holm(p: dict[str, float]) -> dict[str, float]:
    keys = sorted(p, key=p.get)
    m, running, out = len(keys), 0.0, {}
    for rank, k in enumerate(keys):
        running = max(running, min(1.0, (m - rank) * p[k]))
        out[k] = running
    return out


def test_two_different_populations_show_the_changes_an_independent_computation_finds(populations):
    before, after = (analyze([str(p)]) for p in populations)
    got = {m.key: m for m in compare(before, after, seed=3).measures}
    b, a = before.runs, after.runs
    hand_p: dict[str, float] = {}
    hand_ci: dict[str, tuple[float, float]] = {}
    hand_d: dict[str, np.ndarray] = {}
    # shares: the success rate among labelled runs, each signature's share of runs
    ok = [(int((r["success"] == True).sum()), int(r["success"].notna().sum())) for r in (b, a)]  # noqa: E712
    hand_p["success_rate"], hand_ci["success_rate"] = _z_test(*ok[0], *ok[1])
    for key, _m in got.items():
        if key.startswith("signatures."):
            name = key.split(".", 1)[1]
            k = [int(r["signatures"].map(lambda xs, name=name: name in xs).sum()) for r in (b, a)]
            hand_p[key], hand_ci[key] = _z_test(k[0], len(b), k[1], len(a))
    # percentiles and caps: resampled the plain way
    for metric in METRICS:
        x, y = (r[metric].dropna().to_numpy(dtype=float) for r in (b, a))
        for name, q in QUANTILES.items():
            d = _plain_bootstrap(x, y, lambda v, q=q: np.percentile(v, q * 100, method="inverted_cdf"), 4000,
                                 seed=len(hand_p))
            hand_p[f"percentiles.{metric}.{name}"] = min(1, 2 * (min((d <= 0).sum(), (d >= 0).sum()) + 1) / 4001)
            hand_d[f"percentiles.{metric}.{name}"] = d
    for key in [k for k in got if k.startswith("caps.")]:
        dim = BY_COLUMN[key.split(".", 1)[1]]
        x, y = (r.loc[r["success"] == True, dim.column].dropna().to_numpy(dtype=float) for r in (b, a))  # noqa: E712

        def cap(v: np.ndarray, dim=dim) -> float:
            return cap_of(float(np.sort(v)[within_rank(len(v), 0.01) - 1]), dim, 0.10)
        d = _plain_bootstrap(x, y, cap, 4000, seed=len(hand_p))
        hand_p[key] = min(1, 2 * (min((d <= 0).sum(), (d >= 0).sum()) + 1) / 4001)
        hand_d[key] = d
    assert set(hand_p) == {k for k, m in got.items() if m.p is not None}
    adjusted = _hand_holm(hand_p)
    # the changes the hand computation calls significant, clearly (3 times under the level) or clearly not, agree
    clear = {k for k, p in adjusted.items() if p <= 0.05 / 3 or p >= 0.15}
    assert len(clear) >= 0.7 * len(adjusted)
    disagree = {k: (adjusted[k], got[k].p_adjusted) for k in clear if (adjusted[k] <= 0.05) != got[k].significant}
    assert not disagree
    found = {k for k in clear if adjusted[k] <= 0.05}
    assert {"signatures.repeated_call", "signatures.no_progress"} <= found            # left out
    assert "percentiles.steps.p50" in found and got["percentiles.steps.p50"].change > 0   # short runs left out
    assert len(found) >= 4 and len(found) < len(clear)
    # the intervals agree: a share's with the normal approximation's; the others' ends lie where the plain
    # bootstrap's draws put their 1.5% to 3.5% and 96.5% to 98.5% points (its own draws vary that much)
    for key, (lo, hi) in hand_ci.items():
        tol = 0.15 * (hi - lo) + 0.006
        assert abs(got[key].ci[0] - lo) <= tol and abs(got[key].ci[1] - hi) <= tol, (key, got[key].ci, (lo, hi))
    for key, d in hand_d.items():
        band = np.quantile(d, [0.015, 0.035, 0.965, 0.985], method="inverted_cdf")
        lo, hi = got[key].ci
        assert band[0] <= lo <= band[1] and band[2] <= hi <= band[3], (key, got[key].ci, band)


# -- the pieces, by hand -----------------------------------------------------------------------------------------

def test_a_resampled_order_statistic_has_its_exact_law():
    """P(r-th smallest of a resample <= v_j) = P(Binomial(n, F_j) >= r), computed by hand, against 200,000 draws."""
    xs = np.array([1, 2, 2, 3, 5, 8, 8, 13.0])
    n = len(xs)
    for q in (0.5, 0.9, 0.99):
        r = rank_of(q, n)
        assert xs[r - 1] == np.percentile(xs, q * 100, method="inverted_cdf")
        draws = order_draws(xs, r, rng_for(7, f"exact-{q}", 0), 200_000)
        for v in np.unique(xs):
            f = float((xs <= v).mean())
            exact = sum(math.comb(n, k) * f**k * (1 - f) ** (n - k) for k in range(r, n + 1))
            assert abs(float((draws <= v).mean()) - exact) < 0.005, (q, v)


def test_holm_adjusts_as_by_hand():
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == [1.0, 1.0] and holm([]) == []


def test_the_same_input_gives_the_same_comparison(populations):
    before, after = (analyze([str(p)]) for p in populations)
    one, two = compare(before, after, seed=5), compare(before, after, seed=5)
    assert [m.to_dict() for m in one.measures] == [m.to_dict() for m in two.measures]


# -- the command line -------------------------------------------------------------------------------------------

def _invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_json_has_every_measure_as_an_object(populations):
    done = _invoke("diff", *map(str, populations), "--format", "json")
    assert done.exit_code == 0, done.output
    out = json.loads(done.stdout)
    assert out["method"]["correction"] == "holm" and out["method"]["comparisons"] >= 30
    objects = [out["runs"], out["success_rate"], *out["signatures"].values(),
               *(o for per in out["percentiles"].values() for o in per.values()), *out["caps"].values()]
    assert len(objects) == out["method"]["comparisons"] + 1
    for o in objects:
        assert {"before", "after", "change", "ci", "significant"} <= set(o)
    assert set(out["percentiles"]) == set(METRICS) and set(out["percentiles"]["steps"]) == {"p50", "p90", "p99"}
    assert out["runs"]["ci"] is None and out["runs"]["significant"] is None
    p50 = out["percentiles"]["steps"]["p50"]
    assert p50["significant"] is True and p50["change"] > 0
    assert out["signatures"]["repeated_call"]["after"] == 0 and out["signatures"]["repeated_call"]["significant"]


def test_the_terminal_tables_fit_80_columns(populations, monkeypatch, capsys):
    from agentobs.cli import diff_cmd
    monkeypatch.setenv("COLUMNS", "80")          # the width tables are laid out to (as a terminal of 80 columns)
    before, after = (analyze([str(p)]) for p in populations)
    capsys.readouterr()
    diff_cmd.print_diff(compare(before, after))
    text = capsys.readouterr().out
    tables = [line for line in text.splitlines() if line.startswith(("success rate", "steps p", "max_", "cost_usd"))]
    assert len(tables) >= 10
    assert all(len(line.rstrip()) <= 80 for line in tables) and "…" not in "\n".join(tables)
    assert "yes" in text and "Holm-adjusted p <= 0.05" in text


def test_one_source_in_two_windows(populations, tmp_path):
    path = str(populations[0])
    runs = analyze([path]).runs
    middle = runs["start"].sort_values().iloc[len(runs) // 2].to_pydatetime().isoformat()
    done = _invoke("diff", path, "--before-until", middle, "--after-since", middle, "--format", "json")
    assert done.exit_code == 0, done.output
    out = json.loads(done.stdout)
    assert out["before"]["runs"] + out["after"]["runs"] == len(runs)
    assert out["before"]["select"]["until"] and out["after"]["select"]["since"]
    done = _invoke("diff", path)
    assert done.exit_code == 2 and "give each side what tells it apart" in done.stderr
    done = _invoke("diff", path, str(tmp_path / "missing.jsonl"))
    assert done.exit_code == 2 and done.stderr.count("\n") == 1 and "no such file" in done.stderr
    done = _invoke("diff", path, "--before-since", "2030-01-01")
    assert done.exit_code == 2 and done.stderr.startswith("agentobs: error: the before side: no run in")


def test_html_is_a_plain_escaped_page(populations, tmp_path):
    odd = tmp_path / "<b>after&.jsonl"
    odd.write_bytes(populations[1].read_bytes())
    out = tmp_path / "diff.html"
    done = _invoke("diff", str(populations[0]), str(odd), "--out", str(out))
    assert done.exit_code == 0, done.output
    page = out.read_text()
    assert "<script" not in page and "&lt;b&gt;after&amp;.jsonl" in page and "<b>after" not in page
    assert page.count("<table>") >= 4 and 'class="significant"' in page


def test_labels_given_twice_label_each_sides_runs(populations, tmp_path):
    """Each file labels the runs its ids match, whichever side they are on; an id that matches neither is said."""
    before, after = (analyze([str(p)]).runs for p in populations)
    first, second = tmp_path / "before.csv", tmp_path / "after.csv"
    # (both simulations number their tasks alike: the runs are named by their trace and root span)
    first.write_text("trace_id,root_span_id,success\n" + "".join(
        f"{t[0]},{s},true\n" for t, s in zip(before["trace_ids"], before["root_span_id"], strict=True)))
    second.write_text("trace_id,root_span_id,success\n" + "".join(
        f"{t[0]},{s},false\n" for t, s in zip(after["trace_ids"], after["root_span_id"], strict=True))
        + f"{'0' * 31}1,{'0' * 15}1,true\n")
    done = _invoke("diff", *map(str, populations), "--labels", str(first), "--labels", str(second),
                   "--format", "json")
    assert done.exit_code == 0, done.output
    out = json.loads(done.stdout)
    assert out["success_rate"]["before"] == 1.0 and out["success_rate"]["after"] == 0.0
    assert out["labels"]["files"] == [str(first), str(second)]
    assert out["labels"]["matched_before"] == len(before) and out["labels"]["matched_after"] == len(after)
    assert out["labels"]["unmatched"] == 1 and out["labels"]["unmatched_example"] == f"{'0' * 31}1:{'0' * 15}1"
    kinds = {i["kind"] for side in ("before", "after") for i in side and out[side]["data_quality"]["issues"]}
    assert "unmatched_label" not in kinds
    table = _invoke("diff", *map(str, populations), "--labels", str(first), "--labels", str(second))
    assert "1 ids match a run on neither side" in table.stdout


def test_each_side_may_be_told_apart_by_its_own_service():
    fixtures = str(TESTS / "dialects" / "fixtures")
    done = _invoke("diff", fixtures, "--before-service", "dialect-openai_agents",
                   "--after-service", "dialect-langgraph", "--format", "json")
    assert done.exit_code == 0, done.output
    out = json.loads(done.stdout)
    runs = analyze([fixtures]).runs
    assert out["before"]["select"]["service"] == ["dialect-openai_agents"]
    assert out["before"]["runs"] == (runs["service"] == "dialect-openai_agents").sum()
    assert out["after"]["runs"] == (runs["service"] == "dialect-langgraph").sum()


def test_two_labels_files_that_disagree_on_an_id_label_it_nothing(populations, tmp_path):
    from agentobs.analysis.assess.labels import read_label_files
    runs = analyze([str(populations[0])]).runs
    one, other = str(runs["run_id"].iloc[0]), str(runs["run_id"].iloc[1])
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text(f"run_id,success\n{one},true\n{other},true\n")
    b.write_text(f"run_id,success\n{one},false\nnobody,true\n")
    lf = read_label_files([a, b])
    assert lf.labels == {other: True, "nobody": True} and lf.file_of("nobody") == str(b)
    assert [f for f, _ in lf.conflicts] == [str(b)] and "labelled true in" in lf.conflicts[0][1]
    report = analyze([str(populations[0])], Options(labels=(str(a), str(b))))
    labelled = report.runs.set_index("run_id")["success"]
    assert labelled[other] == True and pd.isna(labelled[one])  # noqa: E712
    issues = {(i.kind, i.source) for i in report.quality.issues}
    assert ("conflicting_label", str(b)) in issues and ("unmatched_label", str(b)) in issues
    assert report.to_dict()["options"]["labels"] == [str(a), str(b)]
