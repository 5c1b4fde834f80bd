"""A folder holding every kind of bad input beside a good file (truncated, invalid, wrong types, orphans, duplicates,
negative durations, empty, unknown formats): scenarios/hostile_input/test_bad_input.py counts each kind in the
report, unit/analysis/report/dask/test_dask_engine.py checks the Dask engine counts the same."""
import copy
import json

from agentobs.domain.scenarios import SEED000
from agentobs.telemetry import configure


def _good_lines(tmp_path):
    path = tmp_path / "src.jsonl"
    tel = configure(traces_out=path)
    for name in ("A normal run", "B same call repeated"):
        SEED000[name]([tel.observer()])
    tel.shutdown()
    return path.read_text().splitlines()


def _spans(line):
    """The spans of one trace (the first one with a root) in an OTLP JSON line."""
    spans = json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"]
    tid = next(s["traceId"] for s in spans if "parentSpanId" not in s)
    return [s for s in spans if s["traceId"] == tid]


def _with_spans(line, spans):
    obj = json.loads(line)
    obj["resourceSpans"][0]["scopeSpans"][0]["spans"] = spans
    return json.dumps(obj)


def write_bad_folder(tmp_path):
    """The folder ``in`` under ``tmp_path``."""
    lines = _good_lines(tmp_path)
    base = lines[0]
    spans = _spans(base)
    d = tmp_path / "in"
    d.mkdir()
    (d / "good.jsonl").write_text("\n".join(lines) + "\n")
    (d / "truncated.jsonl").write_text(base[: len(base) // 2] + "\n" + base + "\n")
    (d / "invalid.jsonl").write_text("{not json at all\n" + base + "\n")
    wrong = [dict(s, traceId="ef" * 16) for s in copy.deepcopy(spans)]
    root = next(s for s in wrong if "parentSpanId" not in s)
    for a in root.get("attributes", []):
        if a["key"] == "gen_ai.usage.input_tokens":
            a["value"] = {"stringValue": "lots"}
        if a["key"] == "agentobs.steps":
            a["value"] = {"boolValue": True}
    next(s for s in wrong if "parentSpanId" in s)["startTimeUnixNano"] = True   # not a timestamp: dropped
    (d / "wrongtypes.jsonl").write_text(_with_spans(base, wrong) + "\n")
    root_id = next(s["spanId"] for s in spans if "parentSpanId" not in s)
    orphans = [dict(s, traceId="ab" * 16) for s in spans if s["spanId"] != root_id]
    (d / "orphans.jsonl").write_text(_with_spans(base, orphans) + "\n")
    (d / "duplicates.jsonl").write_text(base + "\n")   # the same spans as good.jsonl's first line
    neg = [dict(s, traceId="cd" * 16, startTimeUnixNano=s["endTimeUnixNano"], endTimeUnixNano=s["startTimeUnixNano"])
           for s in spans]
    (d / "negative.jsonl").write_text(_with_spans(base, neg) + "\n")
    (d / "empty.jsonl").write_text("")
    (d / "unknown.csv").write_text("run_id,steps\nr1,4\n")
    (d / "binary.bin").write_bytes(bytes(range(256)))
    return d
