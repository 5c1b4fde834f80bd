"""Every valid OTLP JSON spelling gives the same runs table as the canonical file, on the fast path (issue 16).

The spellings are written by the real writers where one exists: protobuf's ``json_format`` on the
SDK's own OTLP encoding (``MessageToJson``: base64 ids, enum names, int64 as strings; with
``preserving_proto_field_name`` snake_case; with ``use_integers_for_enums`` integers). The others
(upper-case hex, 64-bit numbers, optional fields present, a saved Jaeger answer, gzip) are rewrites of
the canonical file that OTLP/JSON readers accept.
"""
import base64
import gzip
import itertools
import json
import random
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from google.protobuf import json_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentobs.analysis.derive.runs import derive_runs
from agentobs.analysis.otlp.load import load_file
from agentobs.analysis.spans.checks import check
from agentobs.domain.scenarios import SEED000, SEED004, approve_and_resume
from agentobs.telemetry import configure


@pytest.fixture(scope="module")
def emitted(tmp_path_factory):
    """The canonical file (our exporter) and the same spans as the SDK's protobuf messages, one per batch."""
    folder = tmp_path_factory.mktemp("spellings")
    mem = InMemorySpanExporter()
    path = folder / "canonical.jsonl"
    tel = configure(traces_out=path, extra_exporters=[("memory", mem)])
    for suite in (SEED000, SEED004):
        for run in suite.values():
            run([tel.observer()])
    approve_and_resume([tel.observer()], twice=True)
    tel.shutdown()
    spans = list(mem.get_finished_spans())
    batches = [encode_spans(spans[i:i + 25]) for i in range(0, len(spans), 25)]
    return folder, path, batches


def _runs(path):
    ss = check(load_file(path))
    runs, _, _ = derive_runs(ss)
    return ss, runs.sort_values("run_id").reset_index(drop=True)


def _same(a, b):
    pd.testing.assert_frame_equal(a.drop(columns=["start"]), b.drop(columns=["start"]), check_dtype=True)
    assert (a["start"] == b["start"]).all()


def _fast(ss):
    assert ss.quality.count("careful_path") == 0, [i.to_dict() for i in ss.quality.issues]
    assert not ss.quality.issues, [i.to_dict() for i in ss.quality.issues]


def _write(path, lines, gz=False):
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def _proto_lines(batches, **options):
    return [json.dumps(json_format.MessageToDict(b, **options)) for b in batches]


def _walk(obj, fn):
    """Applies fn(dict) to every dict in obj, depth first."""
    if isinstance(obj, dict):
        fn(obj)
        for v in obj.values():
            _walk(v, fn)
    elif isinstance(obj, list):
        for v in obj:
            _walk(v, fn)


def _rewrite(path, fn):
    out = []
    for line in path.read_text().splitlines():
        obj = json.loads(line)
        _walk(obj, fn)
        out.append(json.dumps(obj))
    return out


def _upper_ids(d):
    for k in ("traceId", "spanId", "parentSpanId"):
        if isinstance(d.get(k), str):
            d[k] = d[k].upper()


def _numbers(d):
    for k in ("startTimeUnixNano", "endTimeUnixNano", "timeUnixNano", "intValue"):
        if isinstance(d.get(k), str):
            d[k] = int(d[k])


def _optional_fields(d):
    if "spanId" in d and "startTimeUnixNano" in d:
        d.setdefault("flags", 257)
        d.setdefault("droppedAttributesCount", 0)
        d.setdefault("droppedEventsCount", 0)
        d.setdefault("droppedLinksCount", 0)
        d.setdefault("traceState", "")
        d.setdefault("status", {})
        d.setdefault("parentSpanId", "")


SPELLINGS = {
    "protobuf JSON (MessageToJson defaults: base64 ids, enum names)": lambda f, p, b: _proto_lines(b),
    "protobuf JSON, snake_case field names": lambda f, p, b: _proto_lines(b, preserving_proto_field_name=True),
    "protobuf JSON, integer enums": lambda f, p, b: _proto_lines(b, use_integers_for_enums=True),
    "upper-case hex ids": lambda f, p, b: _rewrite(p, _upper_ids),
    "64-bit integers as numbers": lambda f, p, b: _rewrite(p, _numbers),
    "optional fields present (flags, dropped counts, traceState, empty status, empty parent)":
        lambda f, p, b: _rewrite(p, _optional_fields),
    "saved Jaeger API v3 answers": lambda f, p, b: [json.dumps({"result": json.loads(x)})
                                                    for x in p.read_text().splitlines()],
}


@pytest.mark.parametrize("name", list(SPELLINGS))
@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_each_spelling_gives_the_canonical_runs_on_the_fast_path(emitted, name, gz, tmp_path):
    folder, canonical, batches = emitted
    ss0, want = _runs(canonical)
    assert len(want) >= 15
    path = _write(tmp_path / ("x.jsonl.gz" if gz else "x.jsonl"), SPELLINGS[name](folder, canonical, batches), gz)
    ss, got = _runs(path)
    _fast(ss)
    _same(got, want)
    assert len(ss.spans) == len(ss0.spans) and len(ss.events) == len(ss0.events)
    assert len(ss.links) == len(ss0.links) > 0
    # the ids agree with the canonical file's, so `agentobs trace <id>` and links find them
    assert set(ss.spans["span_id"]) == set(ss0.spans["span_id"])



@pytest.mark.parametrize("name", list(SPELLINGS))
def test_a_file_in_one_spelling_is_parsed_once(emitted, name, tmp_path, monkeypatch):
    """The spelling is guessed from the file's first line, so no piece is parsed with a wrong schema first."""
    import agentobs.analysis.otlp._parse as parse
    folder, canonical, batches = emitted
    path = _write(tmp_path / "x.jsonl", SPELLINGS[name](folder, canonical, batches))
    calls = []
    real = parse.pj.read_json
    monkeypatch.setattr(parse.pj, "read_json", lambda *a, **k: calls.append(1) or real(*a, **k))
    _fast(load_file(path))
    assert len(calls) == 1, f"{name}: {len(calls)} parses of a one-piece file"

def test_spellings_mixed_in_one_file_give_the_canonical_runs_on_the_fast_path(emitted, tmp_path):
    folder, canonical, batches = emitted
    _, want = _runs(canonical)
    variants = [fn(folder, canonical, batches) for fn in SPELLINGS.values()]
    # each batch (line) in a spelling chosen at random: ids, enums and field names differ line by line
    proto_like = variants[:3]
    rng = random.Random(7)
    lines = [rng.choice(proto_like)[i] for i in range(len(batches))]
    ss, got = _runs(_write(tmp_path / "mixed-proto.jsonl", lines))
    _fast(ss)
    _same(got, want)
    assert len(ss.spellings[str(tmp_path / "mixed-proto.jsonl")]) >= 2
    # and every spelling's file, one after the other, in one file
    ss, got = _runs(_write(tmp_path / "all.jsonl", [line for v in variants for line in v]))
    assert ss.quality.count("careful_path") == 0
    counts = ss.quality.count("duplicate_span")   # the same spans seven times over: six copies dropped
    assert counts == 6 * len(load_file(canonical).spans)
    _same(got, want)


def test_base64_ids_become_the_hex_ids_of_the_canonical_file(emitted, tmp_path):
    _folder, _canonical, batches = emitted
    line = json.loads(_proto_lines(batches[:1])[0])
    span = line["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    hex_id = base64.b64decode(span["traceId"]).hex()
    ss = load_file(_write(tmp_path / "one.jsonl", [json.dumps(line)]))
    assert hex_id in set(ss.spans["trace_id"])
    # URL-safe alphabet and no padding are accepted too
    span["traceId"] = base64.urlsafe_b64encode(bytes.fromhex(hex_id)).decode().rstrip("=")
    ss = load_file(_write(tmp_path / "two.jsonl", [json.dumps(line)]))
    assert hex_id in set(ss.spans["trace_id"]) and not ss.quality.issues


# -- property: any spelling, chosen line by line --------------------------------------------------------------


def _hex_ids(d):
    for k in ("traceId", "spanId", "parentSpanId"):
        if isinstance(d.get(k), str) and d[k]:
            d[k] = base64.b64decode(d[k]).hex()


def _rewritten(d, fn):
    d = json.loads(json.dumps(d))
    _walk(d, fn)
    return json.dumps(d)


# one line per SDK batch, in each spelling: protobuf's own writer, or a rewrite of the batch's OTLP/JSON
LINE_SPELLINGS = {
    "canonical": lambda b, d: json.dumps(d),
    "protobuf defaults": lambda b, d: json_format.MessageToJson(b, indent=None),
    "snake_case": lambda b, d: json_format.MessageToJson(b, indent=None, preserving_proto_field_name=True),
    "integer enums": lambda b, d: json_format.MessageToJson(b, indent=None, use_integers_for_enums=True),
    "upper-case hex": lambda b, d: _rewritten(d, _upper_ids),
    "numbers": lambda b, d: _rewritten(d, _numbers),
    "optional fields": lambda b, d: _rewritten(d, _optional_fields),
    "Jaeger answer": lambda b, d: json.dumps({"result": d}),
}


def _variants(batches):
    otlp = []
    for b in batches:                    # OTLP/JSON of the batch: hex ids, integer enums
        d = json_format.MessageToDict(b, use_integers_for_enums=True)
        _walk(d, _hex_ids)
        otlp.append(d)
    return {name: [fn(b, d) for b, d in zip(batches, otlp, strict=True)] for name, fn in LINE_SPELLINGS.items()}


@pytest.fixture(scope="module")
def line_variants(emitted):
    _folder, canonical, batches = emitted
    return _runs(canonical)[1], _variants(batches)


def _per_span(batches):
    """The batches' spans, one request each (resource and scope kept), as protobuf messages."""
    out = []
    for b in batches:
        for rs in b.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    req = type(b)()
                    r = req.resource_spans.add()
                    r.resource.CopyFrom(rs.resource)
                    r.schema_url = rs.schema_url
                    s_ = r.scope_spans.add()
                    s_.scope.CopyFrom(ss.scope)
                    s_.schema_url = ss.schema_url
                    s_.spans.add().CopyFrom(span)
                    out.append(req)
    return out


@settings(max_examples=15, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_spelling_chosen_line_by_line_gives_the_canonical_runs(line_variants, data):
    want, variants = line_variants
    n = len(next(iter(variants.values())))
    names = data.draw(st.lists(st.sampled_from(sorted(variants)), min_size=n, max_size=n), label="spelling per line")
    gz = data.draw(st.booleans(), label="gzip")
    with tempfile.TemporaryDirectory() as d:
        path = _write(Path(d) / ("mixed.jsonl.gz" if gz else "mixed.jsonl"),
                      [variants[name][i] for i, name in enumerate(names)], gz)
        ss, got = _runs(path)
    _fast(ss)
    _same(got, want)


def test_lines_of_random_spellings_are_parsed_once_per_spelling_and_kept_in_file_order(emitted, tmp_path,
                                                                                      monkeypatch):
    """Lines of several spellings are parsed grouped by spelling (not a parse per run of one spelling) and put back
    in file order: spans, events and links row for row as the same lines all in the canonical spelling."""
    import agentobs.analysis.otlp._parse as parse
    variants = _variants(_per_span(emitted[2]))
    n = len(variants["canonical"])
    rng = random.Random(11)
    names = [rng.choice(sorted(variants)) for _ in range(n)]
    runs = 1 + sum(a != b for a, b in itertools.pairwise(names))
    assert runs > 2 * len(variants)              # the spellings change often: grouping has work to do
    mixed = _write(tmp_path / "mixed.jsonl", [variants[name][i] for i, name in enumerate(names)])
    plain = _write(tmp_path / "plain.jsonl", variants["canonical"])
    calls = []
    real = parse.pj.read_json
    monkeypatch.setattr(parse.pj, "read_json", lambda *a, **k: calls.append(1) or real(*a, **k))
    got = check(load_file(mixed))
    monkeypatch.undo()
    assert len(calls) <= 2 + len(set(names)), f"{len(calls)} parses for {runs} runs of {len(set(names))} spellings"
    _fast(got)
    want = check(load_file(plain))
    for name in ("spans", "events", "links"):
        a, b = getattr(got, name), getattr(want, name)
        assert len(a) > 0, name
        pd.testing.assert_frame_equal(a.drop(columns=["source"], errors="ignore"),
                                      b.drop(columns=["source"], errors="ignore"), check_dtype=True, obj=name,
                                      check_like=True)    # (attribute columns in the order the groups met them)
    assert sum(got.spellings[str(mixed)].values()) == n and len(got.spellings[str(mixed)]) > 3


def _frames_equal(got, want):
    for name in ("spans", "events", "links"):
        a, b = getattr(got, name), getattr(want, name)
        assert len(a) > 0, name
        pd.testing.assert_frame_equal(a.drop(columns=["source"], errors="ignore"),
                                      b.drop(columns=["source"], errors="ignore"), check_dtype=True, obj=name,
                                      check_like=True)


def test_pieces_of_lines_in_several_spellings_are_parsed_by_spelling_ahead_of_the_decoding(emitted, tmp_path,
                                                                                           monkeypatch):
    """A file read in many pieces (not one small piece read inline): the parser threads cut each mixed piece by
    spelling and parse and decode its groups, so the caller only puts them together; once a piece was
    mixed, the next are not parsed whole first (but for those already being parsed beside it). The spans, events
    and links are those of the same lines all in the canonical spelling."""
    import threading

    import agentobs.analysis.otlp._ahead as ahead
    import agentobs.analysis.otlp._parse as parse
    from agentobs.analysis.input.limits import InputLimits
    variants = _variants(_per_span(emitted[2]))
    n = len(variants["canonical"])
    rng = random.Random(5)
    names = [rng.choice(sorted(variants)) for _ in range(n)]
    mixed = _write(tmp_path / "mixed.jsonl", [variants[name][i] for i, name in enumerate(names)])
    plain = _write(tmp_path / "plain.jsonl", variants["canonical"])
    limits = InputLimits(chunk_bytes=max(1024, mixed.stat().st_size // 6))
    groups, cuts, whole = [], [], []
    real_groups, real_runs, real_parse = ahead.parse_groups, ahead.runs_by_spelling, ahead.parse
    monkeypatch.setattr(ahead, "parse_groups", lambda *a: groups.append(g := real_groups(*a)) or g)
    monkeypatch.setattr(ahead, "runs_by_spelling", lambda *a: cuts.append(r := real_runs(*a)) or r)
    monkeypatch.setattr(ahead, "parse", lambda *a, **k: whole.append(1) or real_parse(*a, **k))
    decoded_in, real_decode = [], parse.decode_tables
    monkeypatch.setattr(parse, "decode_tables", lambda *a, **k: decoded_in.append(
        (threading.current_thread().name, len(a[0]))) or real_decode(*a, **k))
    got = check(load_file(mixed, limits=limits))
    monkeypatch.undo()
    one_spelling = sum(len(r) < 2 for r in cuts)
    assert len(groups) >= 4, f"{len(groups)} pieces parsed by spelling ahead"
    # each piece cut by spelling is decoded once, all its spellings at once, on a parser thread
    assert all(name.startswith("agentobs-otlp-parser") for name, _ in decoded_in), decoded_in
    assert len(decoded_in) == len(groups) and any(tables > 1 for _, tables in decoded_in), decoded_in
    assert set(got.spans["source"].astype(str)) == {str(mixed)}          # the file's name, decoded ahead too
    # the pieces parsed at once start before the first teaches that the file is mixed; the later ones are cut first
    assert len(whole) <= ahead._PARSERS + one_spelling, "pieces after a mixed one were parsed whole first"
    _fast(got)
    _frames_equal(got, check(load_file(plain)))
    assert sum(got.spellings[str(mixed)].values()) == n


def test_the_first_pieces_of_a_file_whose_lines_look_mixed_are_cut_by_spelling_before_any_parse(emitted, tmp_path,
                                                                                                 monkeypatch):
    """The first pieces of a file are parsed side by side, before any taught that the file is mixed: a piece whose
    lines spread over it show two spellings is cut by spelling at once, not parsed whole first (a whole parse of it
    fails, often after costing as much as one that succeeds). The spans are still those of the canonical lines."""
    import agentobs.analysis.otlp._ahead as ahead
    from agentobs.analysis.input.limits import InputLimits
    variants = _variants(_per_span(emitted[2]))
    cycle = ["canonical", "protobuf defaults", "numbers", "Jaeger answer"]        # each line the next spelling
    n = len(variants["canonical"])
    mixed = _write(tmp_path / "mixed.jsonl", [variants[cycle[i % len(cycle)]][i] for i in range(n)])
    whole, real_parse = [], ahead.parse
    monkeypatch.setattr(ahead, "parse", lambda *a, **k: whole.append(1) or real_parse(*a, **k))
    got = check(load_file(mixed, limits=InputLimits(chunk_bytes=max(1024, mixed.stat().st_size // 6))))
    monkeypatch.undo()
    assert whole == []
    _fast(got)
    _frames_equal(got, check(load_file(_write(tmp_path / "plain.jsonl", variants["canonical"]))))


def test_lines_look_mixed_only_when_two_show_one_field_spelt_two_ways(line_variants):
    """``looks_mixed`` sniffs lines spread over a piece. Lines of one spelling never look mixed, even where some show
    a field the others leave out (protobuf's writer leaves out a default kind or status code); lines of two do."""
    from agentobs.analysis.otlp._parse import looks_mixed
    _, variants = line_variants
    for name, lines in variants.items():
        assert not looks_mixed(("\n".join(lines) + "\n").encode()), name
        assert not looks_mixed(memoryview(bytearray(("\n".join(lines) + "\n").encode()))), name
    head = json.loads(variants["protobuf defaults"][0])
    plain = json.dumps(head)
    no_kind = json.dumps(head).replace('"kind": "SPAN_KIND_', '"kindless": "SPAN_KIND_')
    no_code = plain.replace('"code": "STATUS_CODE_', '"codeless": "STATUS_CODE_')
    assert no_kind != plain
    assert not looks_mixed(("\n".join([no_kind, plain, no_code] * 4) + "\n").encode())
    for a, b in itertools.combinations(["canonical", "protobuf defaults", "snake_case", "integer enums", "numbers",
                                        "Jaeger answer"], 2):
        lines = [variants[a][0], variants[b][0]] * 8
        # the integer enums of protobuf's writer differ from the canonical spelling in their ids alone (base64): both
        # are text to the parser, and the decoding reads each form at once
        assert looks_mixed(("\n".join(lines) + "\n").encode()) is ({a, b} != {"canonical", "integer enums"}), (a, b)


def test_lines_whose_ids_alone_differ_are_parsed_as_one_spelling(line_variants, tmp_path, monkeypatch):
    """Lines with hex ids and lines with base64 ids (protobuf's writer with integer enums), mixed line by line: one
    parse of the piece, and the ids of both forms read at once, as the canonical file's."""
    import agentobs.analysis.otlp._parse as parse
    import agentobs.analysis.otlp.ids as ids
    want, variants = line_variants
    lines = [variants["canonical" if i % 2 else "integer enums"][i] for i in range(len(variants["canonical"]))]
    calls, real = [], parse.pj.read_json
    monkeypatch.setattr(parse.pj, "read_json", lambda *a, **k: calls.append(1) or real(*a, **k))
    slow, real_convert = [], ids._convert
    monkeypatch.setattr(ids, "_convert", lambda *a: slow.append(1) or real_convert(*a))
    ss, got = _runs(_write(tmp_path / "ids.jsonl", lines))
    monkeypatch.undo()
    assert len(calls) == 1 and slow == []
    _fast(ss)
    _same(got, want)


def test_a_bad_line_among_lines_in_several_spellings_costs_only_itself_when_parsed_ahead(emitted, tmp_path):
    """A line no spelling explains, in a piece the parser thread parsed by spelling: the group holding it fails,
    the piece is read run by run, and only that line takes the careful path; the rest is what the same lines give
    read inline (one small piece)."""
    from agentobs.analysis.input.limits import InputLimits
    variants = _variants(_per_span(emitted[2]))
    n = len(variants["canonical"])
    rng = random.Random(8)
    lines = [variants[rng.choice(sorted(variants))][i] for i in range(n)]
    lines.insert(n // 2, lines[n // 2][: len(lines[n // 2]) // 2])       # a line cut short
    path = _write(tmp_path / "mixed.jsonl", lines)
    got = load_file(path, limits=InputLimits(chunk_bytes=max(1024, path.stat().st_size // 5)))
    inline = load_file(path)
    assert got.quality.count("careful_path") == 1 == inline.quality.count("careful_path")
    _frames_equal(check(got), check(inline))


def test_lines_of_several_spellings_with_dropped_spans_and_keys_of_two_kinds_give_the_canonical_rows(tmp_path,
                                                                                                     monkeypatch):
    """A piece of lines in several spellings is decoded a spelling at a time but the attributes of its spans and of
    its events are pivoted once each, straight into file order: a span dropped for a bad id leaves no attribute
    behind, and its events none either (not on a neighbour), and a key of integers on some lines and text on
    others is one column, as for the same lines all in the canonical spelling; the data quality is the same too."""
    rng = random.Random(3)
    plain, mixed = [], []
    for i in range(90):
        spans = []
        for j in range(3):
            value = {"intValue": str(i)} if i % 3 else {"stringValue": f"s{i}"}
            span_id = "zz" if (i + j) % 17 == 0 else f"{i + 1:08x}{j + 1:08x}"
            spans.append({"traceId": f"{i + 1:032x}", "spanId": span_id,
                          "name": f"op{j}", "kind": 1, "startTimeUnixNano": str(10**18 + i),
                          "endTimeUnixNano": str(10**18 + i + 5),
                          "attributes": [{"key": "n", "value": value},
                                         {"key": f"k{j}", "value": {"doubleValue": i / 2}},
                                         {"key": "line", "value": {"intValue": str(i)}}],
                          "events": [{"timeUnixNano": str(10**18 + i + e), "name": f"e{e}",
                                      "attributes": [{"key": "ev", "value": value},
                                                     {"key": f"e{e}", "value": {"doubleValue": i / 4}},
                                                     {"key": "eline", "value": {"intValue": str(i)}}]}
                                     for e in range((i + j) % 3)]})
        d = {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name",
                                                             "value": {"stringValue": "svc"}}]},
                                "scopeSpans": [{"scope": {"name": "s"}, "spans": spans}]}]}
        plain.append(json.dumps(d))
        mixed.append(rng.choice([json.dumps(d), json.dumps({"result": d}), _rewritten(d, _upper_ids),
                                 _rewritten(d, _numbers)]))
    import agentobs.analysis.otlp._parse as parse
    grouped, real = [], parse.decode_groups
    monkeypatch.setattr(parse, "decode_groups", lambda *a: grouped.append(ok := real(*a)) or ok)
    got = check(load_file(_write(tmp_path / "mixed.jsonl", mixed)))
    monkeypatch.undo()
    assert grouped and all(grouped), "the groups were not decoded together (read run by run after all)"
    want = check(load_file(_write(tmp_path / "plain.jsonl", plain)))
    assert len(got.spellings[str(tmp_path / "mixed.jsonl")]) > 2          # several spellings in one piece
    assert len(want.spans) == 90 * 3 - 16
    pd.testing.assert_frame_equal(got.spans.drop(columns=["source"]), want.spans.drop(columns=["source"]),
                                  check_dtype=True, check_like=True)
    assert (got.spans["line"].astype("int64") == got.spans["span_id"].str[:8].apply(int, base=16) - 1).all()
    assert len(want.events) > 100
    pd.testing.assert_frame_equal(got.events, want.events, check_dtype=True, check_like=True)
    assert (got.events["eline"].astype("int64") == got.events["span_id"].str[:8].apply(int, base=16) - 1).all()
    summary = [(i.kind, i.count) for i in got.quality.issues]
    assert summary == [(i.kind, i.count) for i in want.quality.issues] and ("bad_span", 16) in summary


def _without_status_codes(line):
    """The request with no status code on any span (as protobuf's writer leaves an unset one out)."""
    d = json.loads(line)

    def drop(x):
        if isinstance(x.get("status"), dict):
            x["status"].pop("code", None)
    _walk(d, drop)
    return json.dumps(d)


def test_a_line_that_leaves_a_field_out_joins_a_spelling_it_may_be_in(emitted, tmp_path, monkeypatch):
    """Lines of two spellings, some of one of them with no status code at all: a line that shows no code goes with
    the lines of a spelling it does not contradict (here the first of the piece), so each spelling is parsed once
    and no group is parsed a second time with what pyarrow's error teaches. The rows are those of the same lines
    all in the canonical spelling."""
    import agentobs.analysis.otlp._parse as parse
    variants = _variants(_per_span(emitted[2]))
    n = len(variants["canonical"])
    mixed, plain = [], []
    for i in range(n):
        name = ("canonical", "protobuf defaults", "protobuf defaults")[i % 3]
        line, canonical = variants[name][i], variants["canonical"][i]
        if i % 3 == 2:
            line, canonical = _without_status_codes(line), _without_status_codes(canonical)
        mixed.append(line)
        plain.append(canonical)
    assert any('"STATUS_CODE_' in x for x in mixed) and all('"STATUS_CODE_' not in x for x in mixed[2::3])
    data = ("\n".join(mixed) + "\n").encode()
    assert len({run.spelling for run in parse.runs_by_spelling(data, 1)}) == 2
    groups = parse.parse_groups(parse.runs_by_spelling(data, 1), len(data), "mixed")
    assert groups.reason is None and len(groups.found.spellings) == 2
    calls, real = [], parse.pj.read_json
    monkeypatch.setattr(parse.pj, "read_json", lambda *a, **k: calls.append(1) or real(*a, **k))
    got = check(load_file(_write(tmp_path / "mixed.jsonl", mixed)))
    monkeypatch.undo()
    assert len(calls) <= 2 + 2, f"{len(calls)} parses of lines in two spellings"    # (the whole piece tried first)
    _fast(got)
    _frames_equal(got, check(load_file(_write(tmp_path / "plain.jsonl", plain))))
