"""Attribute keys of their own on every span cost columns, not the report (issue 43, point 2: memory bounded by the
input).

Every attribute key is a column as long as the span table, so keys that each sit on one span cost spans x keys:
4 MB of OTLP JSON lines (4,000 spans with ten keys of their own each) took 3 GB and 27 s, 8 MB more than the
machine had; one span with a million attributes did not finish in two minutes. The columns kept are now bounded by
what the input holds (``agentobs.analysis.spans.key_bound``): the contract's keys always, the others from the most
spans to the fewest; the keys left out are counted (``too_many_keys``), and every run is still reported.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentobs.analysis.input.limits import InputLimits
from agentobs.analysis.load.sources import load_sources
from agentobs.analysis.otlp.load import load_file
from agentobs.analysis.report.engine import analyze
from agentobs.analysis.spans import key_bound
from bench.memory_child import measure

T0 = 1_767_225_600_000_000_000


def _attr(key: str, value: str) -> dict:
    return {"key": key, "value": {"stringValue": value}}


def _request(run: int, own_keys: list[str], shared: int = 0) -> str:
    """One run (an agent span and its model call) whose spans carry ``own_keys`` (one value each), and ``shared``
    keys every run carries."""
    trace = f"{run + 1:032x}"
    common = [_attr(f"team.field{i}", "x") for i in range(shared)]
    half = len(own_keys) // 2
    agent = [_attr("gen_ai.operation.name", "invoke_agent"), _attr("gen_ai.agent.name", "bot"), *common,
             *(_attr(k, "v") for k in own_keys[:half])]
    chat = [_attr("gen_ai.operation.name", "chat"), _attr("gen_ai.request.model", "m"),
            {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "7"}}, *common,
            *(_attr(k, "v") for k in own_keys[half:])]
    spans = [{"traceId": trace, "spanId": f"{1:016x}", "name": "invoke_agent bot", "kind": 1,
              "startTimeUnixNano": str(T0), "endTimeUnixNano": str(T0 + 10**9), "attributes": agent},
             {"traceId": trace, "spanId": f"{2:016x}", "parentSpanId": f"{1:016x}", "name": "chat", "kind": 3,
              "startTimeUnixNano": str(T0), "endTimeUnixNano": str(T0 + 10**8), "attributes": chat}]
    return json.dumps({"resourceSpans": [{"resource": {"attributes": [_attr("service.name", "svc")]},
                                          "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]}]})


def _write(path: Path, runs: int, keys_per_run: int, shared: int = 0, first: int = 0) -> Path:
    lines = [_request(first + r, [f"u{first + r}.k{j}" for j in range(keys_per_run)], shared) for r in range(runs)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _attribute_columns(df) -> list[str]:
    return [c for c in df.columns if not key_bound.always(c)]


def _within_bound(ss) -> None:
    spans = ss.spans
    extra = _attribute_columns(spans)
    entries = int(spans.count().sum())
    assert len(extra) <= key_bound.MAX_KEYS
    assert len(extra) * len(spans) <= max(key_bound.FLOOR_CELLS, key_bound.CELLS_PER_ENTRY * entries)


def test_keys_of_their_own_on_every_span_are_bounded_counted_and_every_run_kept(tmp_path):
    path = _write(tmp_path / "wide.jsonl", runs=1500, keys_per_run=20, shared=3)
    ss = load_file(path)
    _within_bound(ss)
    assert ss.quality.count("too_many_keys") > 0
    finding = next(f for f in ss.quality.issues if f.kind == "too_many_keys")
    assert "attribute keys left out" in finding.examples[0]
    # the keys every span carries are kept (rarest first to go), and so is what the contract names
    assert {"team.field0", "team.field1", "team.field2", "gen_ai.agent.name"} <= set(ss.spans.columns)
    report = analyze([str(path)])
    assert len(report.runs) == 1500
    assert int(report.runs["input_tokens"].sum()) == 1500 * 7


def test_a_file_read_in_many_pieces_and_a_folder_of_files_stay_within_the_bound(tmp_path):
    """Each piece (and each file) is within its bound; the pieces of a file and the files of a folder together are
    held to it again, or the union of their keys would be the same blow-up."""
    path = _write(tmp_path / "wide.jsonl", runs=1200, keys_per_run=12)
    ss = load_file(path, limits=InputLimits(chunk_bytes=64 * 1024, max_line_bytes=64 * 1024))
    _within_bound(ss)
    assert ss.quality.count("too_many_keys") > 0
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(6):
        _write(folder / f"part{i}.jsonl", runs=250, keys_per_run=12, first=i * 250)
    ss = load_sources([str(folder)])
    _within_bound(ss)
    assert len(ss.spans) == 6 * 250 * 2


def test_a_file_of_ordinary_keys_keeps_every_column(tmp_path):
    """The bound is far from what instrumentations write: a few dozen keys on every span, all kept, nothing
    counted."""
    path = _write(tmp_path / "plain.jsonl", runs=300, keys_per_run=0, shared=60)
    ss = load_file(path)
    assert ss.quality.count("too_many_keys") == 0
    assert {f"team.field{i}" for i in range(60)} <= set(ss.spans.columns)


def test_one_span_with_a_hundred_thousand_attributes(tmp_path):
    path = tmp_path / "one.jsonl"
    line = json.loads(_request(0, []))
    line["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"] += [_attr(f"a{i}", "v")
                                                                            for i in range(100_000)]
    path.write_text(json.dumps(line) + "\n" + _request(1, []) + "\n")
    ss = load_file(path)
    _within_bound(ss)
    assert ss.quality.count("too_many_keys") == 100_000 - key_bound.MAX_KEYS
    assert len(analyze([str(path)]).runs) == 2


@pytest.mark.parametrize("runs", [2000])
def test_peak_memory_of_keys_of_their_own_is_a_few_times_the_file(tmp_path, runs):
    """By the child's VmHWM, as the other readers are measured: 3 GB for 4 MB before the bound."""
    path = _write(tmp_path / "wide.jsonl", runs=runs, keys_per_run=20)
    got = measure("otlp-lines", path)
    assert not got["error"], got
    size_mib = path.stat().st_size / (1 << 20)
    assert got["growth_mib"] < 40 * size_mib + 150, (got, size_mib)
