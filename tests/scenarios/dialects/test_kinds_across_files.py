"""A key whose values come in several kinds reads the same whether its spans are in one file or spread over
several (``otlp._arrow_unify.unify`` for the pieces of one file, ``spanset.widen_column`` for the frames of several)."""
from __future__ import annotations

import json

import pytest

from agentobs.analysis.load.sources import load_sources


def _line(n: int, value: dict) -> str:
    span = {"traceId": f"{n + 1:032x}", "spanId": f"{n + 1:016x}", "name": "x", "kind": 1,
            "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000001000000000",
            "attributes": [{"key": "custom.value", "value": value}]}
    return json.dumps({"resourceSpans": [{"resource": {"attributes": [
        {"key": "service.name", "value": {"stringValue": "s"}}]}, "scopeSpans": [{"scope": {}, "spans": [span]}]}]})


VALUES = {
    "bool": {"boolValue": True},
    "whole double": {"doubleValue": 2.0},
    "double": {"doubleValue": 0.25},
    "int": {"intValue": "7"},
    "array": {"arrayValue": {"values": [{"stringValue": "a"}, {"stringValue": "b"}]}},
}


@pytest.mark.parametrize("kind", sorted(VALUES))
def test_a_key_of_two_kinds_reads_the_same_in_one_file_or_two(tmp_path, kind):
    first, second = _line(0, VALUES[kind]), _line(1, {"stringValue": "text"})
    one = tmp_path / "one.jsonl"
    one.write_text(first + "\n" + second + "\n")
    (tmp_path / "a.jsonl").write_text(first + "\n")
    (tmp_path / "b.jsonl").write_text(second + "\n")
    together = load_sources([str(one)]).spans
    apart = load_sources([str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")]).spans
    assert together["custom.value"].tolist() == apart["custom.value"].tolist()
    assert str(together["custom.value"].dtype) == str(apart["custom.value"].dtype) == "string"
    assert together["custom.value"].tolist()[1] == "text"


def test_whole_numbers_and_fractions_widen_to_one_number_column_either_way(tmp_path):
    first, second = _line(0, {"intValue": "3"}), _line(1, {"doubleValue": 0.5})
    one = tmp_path / "one.jsonl"
    one.write_text(first + "\n" + second + "\n")
    (tmp_path / "a.jsonl").write_text(first + "\n")
    (tmp_path / "b.jsonl").write_text(second + "\n")
    together = load_sources([str(one)]).spans["custom.value"].tolist()
    apart = load_sources([str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")]).spans["custom.value"].tolist()
    assert together == apart == [3.0, 0.5]
