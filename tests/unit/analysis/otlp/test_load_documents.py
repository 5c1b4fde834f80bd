"""OTLP JSON written over several lines (pretty-printed, as ``jq .`` or ``json.dumps(indent=2)`` write it) loads as
the same spans as the JSON lines it was made from; built from the real instrumentations' fixtures."""
import gzip
import json
import zlib
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from locations import TESTS

from agentobs.analysis.input.limits import InputLimits
from agentobs.analysis.otlp.load import load_bytes, load_file
from agentobs.cli.main import cli

FIXTURES = TESTS / "dialects" / "fixtures"
NAMES = sorted(p.stem for p in FIXTURES.glob("*.jsonl"))


def _spans(ss) -> pd.DataFrame:
    cols = ["trace_id", "span_id", "parent_span_id", "name", "start_ns", "end_ns", "kind", "status_code"]
    return ss.spans[cols].sort_values(["trace_id", "span_id"]).reset_index(drop=True)


def _requests(name: str) -> list[dict]:
    return [json.loads(line) for line in (FIXTURES / f"{name}.jsonl").read_text().splitlines() if line.strip()]


def _copies(reqs: list[dict], n: int) -> list[dict]:
    """``n`` copies of the requests, each copy's traces under other trace ids."""
    out = []
    for k in range(n):
        for r in reqs:
            text = json.dumps(r)
            for tid in {s["traceId"] for rs in r["resourceSpans"] for ss in rs.get("scopeSpans", [])
                        for s in ss.get("spans", [])}:
                text = text.replace(tid, f"{k:04x}" + tid[4:])
            out.append(json.loads(text))
    return out


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("layout", ["one document", "jq ., gzip", "tabs and CRLF", "jq ., over 1 MiB"])
def test_a_pretty_printed_file_loads_the_same_spans_as_its_json_lines(tmp_path, name, layout):
    reqs = _requests(name)
    if layout == "jq ., over 1 MiB":        # past the reader's first block (1 MiB), ending in a line break
        reqs = _copies(reqs, 1 + (1 << 21) // len(json.dumps(reqs, indent=2)))
        lines = tmp_path / "lines.jsonl"
        lines.write_text("".join(json.dumps(r) + "\n" for r in reqs))
        want = load_file(lines)
    else:
        want = load_file(FIXTURES / f"{name}.jsonl")
    assert len(want.spans) > 0
    if layout == "jq ., over 1 MiB":
        p = tmp_path / "docs.json"
        p.write_text("".join(json.dumps(r, indent=2) + "\n" for r in reqs))
        assert p.stat().st_size > 1 << 20
    elif layout == "one document":            # every request's spans in one request, indented
        doc = {"resourceSpans": [rs for r in reqs for rs in r["resourceSpans"]]}
        p = tmp_path / "doc.json"
        p.write_text(json.dumps(doc, indent=2))
    elif layout == "jq ., gzip":            # the requests one after another, each pretty-printed
        p = tmp_path / "docs.json.gz"
        p.write_bytes(gzip.compress("\n".join(json.dumps(r, indent=2) for r in reqs).encode() + b"\n"))
    else:
        p = tmp_path / "docs.json"
        p.write_bytes("".join(json.dumps(r, indent="\t") for r in reqs).replace("\n", "\r\n").encode())
    got = load_file(p)
    pd.testing.assert_frame_equal(_spans(got), _spans(want))
    assert not [i for i in got.quality.issues if i.kind in ("invalid_json", "careful_path", "unreadable")]


def test_a_bad_value_in_one_pretty_printed_request_costs_only_that_request(tmp_path):
    reqs = _requests(NAMES[0])
    assert len(reqs) > 1
    bad = json.loads(json.dumps(reqs[0]))
    bad["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["kind"] = {"not": "a kind"}
    p = tmp_path / "docs.json"
    p.write_text("\n".join(json.dumps(r, indent=2) for r in [bad, *reqs[1:]]))
    got = load_file(p)
    rest = tmp_path / "rest.jsonl"
    rest.write_text("".join(json.dumps(r) + "\n" for r in reqs[1:]))
    want = load_file(rest)
    kept = set(zip(got.spans.trace_id, got.spans.span_id, strict=True))
    assert set(zip(want.spans.trace_id, want.spans.span_id, strict=True)) <= kept        # the good requests, whole
    assert got.quality.count("careful_path") == 1                           # only the bad request, on its own
    assert next(e for i in got.quality.issues if i.kind == "careful_path" for e in i.examples).startswith("line 1:")


def test_json_lines_whose_first_line_is_cut_short_still_load_line_by_line(tmp_path):
    lines = (FIXTURES / f"{NAMES[0]}.jsonl").read_text().splitlines()
    p = tmp_path / "cut.jsonl"
    p.write_text(lines[0][: len(lines[0]) // 2] + "\n" + "\n".join(lines[1:]) + "\n")
    rest = tmp_path / "rest.jsonl"
    rest.write_text("\n".join(lines[1:]) + "\n")
    got, want = load_file(p), load_file(rest)
    pd.testing.assert_frame_equal(_spans(got), _spans(want))
    assert got.quality.count("invalid_json") == 1


def test_a_pretty_printed_file_over_the_document_limit_says_which_limit_to_raise(tmp_path):
    p = tmp_path / "doc.json"
    p.write_text(json.dumps({"resourceSpans": [rs for r in _requests(NAMES[0]) for rs in r["resourceSpans"]]},
                            indent=2))
    got = load_file(p, limits=InputLimits(max_document_bytes=1000))
    examples = [e for i in got.quality.issues if i.kind == "unreadable" for e in i.examples]
    assert examples and "AGENTOBS_MAX_DOCUMENT_BYTES" in examples[0]


def test_a_pretty_printed_answer_held_in_memory_loads(tmp_path):
    reqs = _requests(NAMES[0])
    data = "\n".join(json.dumps(r, indent=2) for r in reqs).encode()
    want = load_file(FIXTURES / f"{NAMES[0]}.jsonl")
    pd.testing.assert_frame_equal(_spans(load_bytes(data, "answer")), _spans(want))


def test_agentobs_report_reads_a_pretty_printed_file(tmp_path):
    reqs = _requests(NAMES[0])
    p = tmp_path / "doc.json"
    p.write_text(json.dumps({"resourceSpans": [rs for r in reqs for rs in r["resourceSpans"]]}, indent=2))
    pretty = CliRunner().invoke(cli, ["report", str(p), "--format", "json"])
    lines = CliRunner().invoke(cli, ["report", str(FIXTURES / f"{NAMES[0]}.jsonl"), "--format", "json"])
    assert pretty.exit_code == 0 and lines.exit_code == 0, pretty.output
    got, want = json.loads(pretty.output), json.loads(lines.output)
    assert got.pop("read")["spellings"] == {str(p): {"canonical, multi-line JSON": 1}}
    want.pop("read")
    assert got.pop("data_quality")["issues"] == want.pop("data_quality")["issues"] == []
    assert got.pop("sources") == [str(p)]
    want.pop("sources")
    got.pop("generated_at"), want.pop("generated_at")          # the second each report was made
    assert got == want


# -- a JSON array of requests ([request, request, ...]: a list of requests saved with json.dump) ---------------


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("shape", ["compact", "indented", "indented, gzip", "Jaeger answers, indented"])
def test_a_json_array_of_requests_loads_the_same_spans_as_its_json_lines(tmp_path, name, shape):
    reqs = _requests(name)
    want = load_file(FIXTURES / f"{name}.jsonl")
    assert len(want.spans) > 0
    p = tmp_path / "requests.json"
    if shape == "compact":
        p.write_text(json.dumps(reqs))
    elif shape == "indented":
        p.write_text(json.dumps(reqs, indent=2) + "\n")
    elif shape == "indented, gzip":
        p = tmp_path / "requests.json.gz"
        p.write_bytes(gzip.compress(json.dumps(reqs, indent=2).encode()))
    else:
        p.write_text(json.dumps([{"result": r} for r in reqs], indent=2))
    got = load_file(p)
    pd.testing.assert_frame_equal(_spans(got), _spans(want))
    assert not [i for i in got.quality.issues if i.kind in ("invalid_json", "careful_path", "unreadable")]


def test_agentobs_report_reads_a_json_array_of_requests_as_its_json_lines(tmp_path):
    p = tmp_path / "requests.json"
    p.write_text(json.dumps(_requests(NAMES[0]), indent=2))
    array = CliRunner().invoke(cli, ["report", str(p), "--format", "json"])
    lines = CliRunner().invoke(cli, ["report", str(FIXTURES / f"{NAMES[0]}.jsonl"), "--format", "json"])
    assert array.exit_code == 0 and lines.exit_code == 0, array.output
    got, want = json.loads(array.output), json.loads(lines.output)
    assert got.pop("read")["spellings"] == {str(p): {"canonical, JSON array": len(_requests(NAMES[0]))}}
    want.pop("read")
    assert got.pop("data_quality")["issues"] == want.pop("data_quality")["issues"] == []
    assert got.pop("sources") == [str(p)]
    want.pop("sources")
    got.pop("generated_at"), want.pop("generated_at")
    assert got == want


def test_elements_of_an_array_that_are_not_requests_cost_only_themselves(tmp_path):
    reqs = _requests(NAMES[0])
    p = tmp_path / "requests.json"
    p.write_text(json.dumps([*reqs[:2], {"foo": 1}, "text", 7, *reqs[2:]]))
    got = load_file(p)
    pd.testing.assert_frame_equal(_spans(got), _spans(load_file(FIXTURES / f"{NAMES[0]}.jsonl")))
    assert got.quality.count("not_otlp") == 3
    # on one line, each element is read as a line of its own: "line N" is the N-th element
    examples = [e for i in got.quality.issues if i.kind == "not_otlp" for e in i.examples]
    assert examples[0] == "line 3"


def test_an_empty_array_is_no_usable_run_with_a_reason(tmp_path):
    p = tmp_path / "requests.json"
    p.write_text("[ ]\n")
    r = CliRunner().invoke(cli, ["report", str(p)])
    assert r.exit_code == 2
    assert r.output.startswith(f"agentobs: error: no usable run in {p}: the input holds no spans")


def test_an_array_of_chat_transcripts_is_still_read_as_transcripts(tmp_path):
    from agentobs.analysis.formats import reader_of
    p = tmp_path / "runs.json"
    p.write_text(json.dumps([{"messages": [{"role": "user", "content": "resourceSpans"}]}]))
    assert reader_of(p).name == "transcripts"
    q = tmp_path / "requests.json"
    q.write_text(" \n[\n  {\n    \"resourceSpans\": []\n  }\n]\n")
    assert reader_of(q).name == "otlp"


# -- a document cut short or damaged keeps what it can --------------------------------------------


def _complete(reqs: list[dict], text: str, dump) -> list[dict]:
    """The requests whose text is whole in ``text`` (a prefix of the requests dumped one after another)."""
    out, pos = [], 0
    for r in reqs:
        at = text.find(dump(r), pos)
        if at < 0:
            break
        out.append(r)
        pos = at + len(dump(r))
    return out


@pytest.mark.parametrize("shape", ["array", "jq ."])
def test_a_document_cut_short_keeps_the_requests_before_the_cut(tmp_path, shape):
    reqs = _copies(_requests(NAMES[0]), 3)
    if shape == "array":
        text = json.dumps(reqs, indent=2)
        dump = lambda r: "\n".join("  " + x for x in json.dumps(r, indent=2).splitlines()).lstrip()  # noqa: E731
    else:
        text = "\n".join(json.dumps(r, indent=2) for r in reqs)
        dump = lambda r: json.dumps(r, indent=2)  # noqa: E731
    cut = text[: len(text) * 2 // 3 + 500]                     # (two thirds of the copies, and a little more)
    kept = _complete(reqs, cut, dump)
    assert 0 < len(kept) < len(reqs)
    p = tmp_path / "cut.json"
    p.write_text(cut)
    lines = tmp_path / "kept.jsonl"
    lines.write_text("".join(json.dumps(r) + "\n" for r in kept))
    got = load_file(p)
    pd.testing.assert_frame_equal(_spans(got), _spans(load_file(lines)))
    assert got.quality.count("invalid_json") == 1           # the request cut short, once


def test_a_corrupt_request_in_a_document_costs_only_itself(tmp_path):
    reqs = _requests(NAMES[0])
    docs = [json.dumps(r, indent=2) for r in reqs]
    docs[1] = docs[1].replace('"traceId"', '"traceId" oops', 1)        # no longer JSON
    p = tmp_path / "docs.json"
    p.write_text("\n".join(docs) + "\n")
    rest = tmp_path / "rest.jsonl"
    rest.write_text("".join(json.dumps(r) + "\n" for i, r in enumerate(reqs) if i != 1))
    got = load_file(p)
    pd.testing.assert_frame_equal(_spans(got), _spans(load_file(rest)))
    assert got.quality.count("invalid_json") == 1


def test_a_cut_gzip_stream_of_a_document_keeps_what_came_before_and_says_so(tmp_path):
    reqs = _copies(_requests(NAMES[0]), 1 + (4 << 20) // len(json.dumps(_requests(NAMES[0]), indent=2)))
    docs = [json.dumps(r, indent=2) for r in reqs]
    packed = gzip.compress("\n".join(docs).encode())
    cut = packed[: len(packed) * 3 // 4]
    p = tmp_path / "docs.json.gz"
    p.write_bytes(cut)
    got = load_file(p)
    examples = [e for i in got.quality.issues if i.kind == "unreadable" for e in i.examples]
    assert examples and "ends early or is corrupt" in examples[0]
    # every request whole in what the cut stream inflates to is kept
    text = zlib.decompressobj(wbits=31).decompress(cut).decode("utf-8", "replace")
    whole = [r for r, d in zip(reqs, docs, strict=True) if d in text]
    assert 0 < len(whole) < len(reqs)
    got_ids = set(zip(got.spans.trace_id, got.spans.span_id, strict=True))
    want = load_file(_write(tmp_path, whole))
    assert set(zip(want.spans.trace_id, want.spans.span_id, strict=True)) <= got_ids
    whole = load_file(_write(tmp_path, reqs)).spans
    assert got_ids < set(zip(whole.trace_id, whole.span_id, strict=True))


def _write(tmp_path: Path, reqs: list[dict]) -> Path:
    p = tmp_path / "all.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in reqs))
    return p


def test_a_bad_value_in_one_element_of_an_indented_array_costs_only_that_element(tmp_path):
    reqs = _requests(NAMES[0])
    bad = json.loads(json.dumps(reqs[1]))
    bad["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["kind"] = {"not": "a kind"}
    p = tmp_path / "requests.json"
    p.write_text(json.dumps([reqs[0], bad, *reqs[2:]], indent=4))
    got = load_file(p)
    rest = tmp_path / "rest.jsonl"
    rest.write_text("".join(json.dumps(r) + "\n" for i, r in enumerate(reqs) if i != 1))
    assert set(zip(*[load_file(rest).spans[c] for c in ("trace_id", "span_id")], strict=True)) <= set(
        zip(got.spans.trace_id, got.spans.span_id, strict=True))                        # the good elements, whole
    assert got.quality.count("careful_path") == 1                           # only the bad element, on its own


def test_spans_without_an_agent_run_say_so_not_that_the_input_is_empty(tmp_path):
    """A file of valid spans none of which is an agent run (a health check's) said "the input holds no spans"
    (found by fuzzing)."""
    p = tmp_path / "plain.jsonl"
    span = {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331", "name": "GET /health",
            "kind": 2, "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000001000000000"}
    p.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}) + "\n")
    r = CliRunner().invoke(cli, ["report", str(p)])
    assert r.exit_code == 2
    assert r.output == f"agentobs: error: no usable run in {p}: 1 span read, and none looks like a model call (a " \
                       "model id with token usage), a tool call or an agent, in any dialect agentobs reads or by " \
                       "structure; the most common span names: 'GET /health' (1)\n"
