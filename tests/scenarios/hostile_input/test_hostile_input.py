"""Hostile and broken input for the loaders (issue 10, points 1, 5 and 6).

One bad value costs that value, one bad span that span, one bad line that line: never the file, and
never silently. The input limits bound memory and say which limit to raise.
"""
import copy
import gzip
import json
import os
import subprocess
import sys
import zlib

import pandas as pd
import pytest
from bot_runs import _bot_file, _bot_run
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agentobs.analysis.derive.runs import derive_runs
from agentobs.analysis.input.limits import InputLimits
from agentobs.analysis.otlp.load import load_bytes, load_file, load_request
from agentobs.analysis.report.engine import analyze
from agentobs.analysis.spans.checks import check
from agentobs.cli.main import cli
from agentobs.domain.scenarios import SEED000
from agentobs.errors import InputError
from agentobs.telemetry import configure

EXAMPLES = int(os.environ.get("AGENTOBS_PROPERTY_EXAMPLES", "200")) // 4


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    """A valid file of the seed's eight scenarios, its lines and its runs table."""
    path = tmp_path_factory.mktemp("good") / "good.jsonl"
    tel = configure(traces_out=path)
    for run in SEED000.values():
        run([tel.observer()])
    tel.shutdown()
    lines = []
    for line in path.read_text().splitlines():         # one line per trace, as a collector archive may have
        obj = json.loads(line)
        for rs in obj["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for tid in dict.fromkeys(s["traceId"] for s in ss["spans"]):
                    one = {"resourceSpans": [dict(rs, scopeSpans=[dict(ss, spans=[
                        s for s in ss["spans"] if s["traceId"] == tid])])]}
                    lines.append(json.dumps(one, separators=(",", ":")))
    path.write_text("\n".join(lines) + "\n")
    return lines, _runs_of(load_file(path))


def _runs_of(ss):
    runs, _, _ = derive_runs(check(ss))
    return runs.set_index("run_id").sort_index()


def _a_span(lines):
    obj = json.loads(lines[0])
    return copy.deepcopy(obj["resourceSpans"][0]["scopeSpans"][0]["spans"][-1])


def _with_extra(lines, span, at=0):
    """The file's lines with ``span`` added to line ``at`` (in a trace of its own)."""
    obj = json.loads(lines[at])
    obj["resourceSpans"][0]["scopeSpans"][0]["spans"].append(span)
    out = list(lines)
    out[at] = json.dumps(obj)
    return out


def _write(tmp_path, lines, name="x.jsonl"):
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


def _keeps_every_run(ss, want):
    got = _runs_of(ss)
    assert set(want.index) <= set(got.index)
    pd.testing.assert_frame_equal(got.loc[want.index].drop(columns=["trace_ids", "signatures"]),
                                  want.drop(columns=["trace_ids", "signatures"]))


def _stranger(span, **changes):
    """A copy of ``span`` in a trace of its own, with ``changes`` applied (None deletes a field)."""
    s = copy.deepcopy(span)
    s["traceId"], s["spanId"] = "7" * 32, "8" * 16
    s.pop("parentSpanId", None)
    for k, v in changes.items():
        if v is None:
            s.pop(k, None)
        else:
            s[k] = v
    return s


def _attr(span, key, value):
    span.setdefault("attributes", []).append({"key": key, "value": value})
    return span


CORRUPTIONS = {
    "20-digit integer attribute": lambda s: _attr(_stranger(s), "big", {"intValue": "12345678901234567890"}),
    "20-digit integer attribute as a number": lambda s: _attr(_stranger(s), "big", {"intValue": 12345678901234567890}),
    "end time 2^64 - 1": lambda s: _stranger(s, endTimeUnixNano=str(2 ** 64 - 1)),
    "end time 2^64 - 1 as a number": lambda s: _stranger(s, endTimeUnixNano=2 ** 64 - 1),
    "span kind 300": lambda s: _stranger(s, kind=300),
    "span kind -1": lambda s: _stranger(s, kind=-1),
    "status code 2^40": lambda s: _stranger(s, status={"code": 2 ** 40}),
    "status code name unknown": lambda s: _stranger(s, status={"code": "STATUS_CODE_MAYBE"}),
    "NaN cost": lambda s: _attr(_stranger(s), "agentobs.cost_usd", {"doubleValue": "NaN"}),
    "infinite elapsed": lambda s: _attr(_stranger(s), "agentobs.elapsed_s", {"doubleValue": "Infinity"}),
    "negative tokens": lambda s: _attr(_stranger(s), "gen_ai.usage.input_tokens", {"intValue": "-5"}),
    "negative elapsed": lambda s: _attr(_stranger(s), "agentobs.elapsed_s", {"doubleValue": -3.0}),
    "float where an int belongs": lambda s: _attr(_stranger(s), "agentobs.steps", {"intValue": 3.5}),
    "trace id of the wrong length": lambda s: _stranger(s, traceId="abc"),
    "trace id not hex": lambda s: _stranger(s, traceId="z" * 32),
    "trace id all zeros": lambda s: _stranger(s, traceId="0" * 32),
    "trace id a number": lambda s: _stranger(s, traceId=12),
    "no span id": lambda s: _stranger(s, spanId=None),
    "start time not a number": lambda s: _stranger(s, startTimeUnixNano="soon"),
    "name a number": lambda s: _stranger(s, name=42),
    "name an object": lambda s: _stranger(s, name={"a": 1}),
    "attributes an object": lambda s: _stranger(s, attributes={"a": 1}),
    "events a string": lambda s: _stranger(s, events="x"),
    "link to a bad id": lambda s: _stranger(s, links=[{"traceId": "nope", "spanId": "nope"}]),
    "value of an unknown kind": lambda s: _attr(_stranger(s), "odd", {"fooValue": 1}),
    "deeply nested value": lambda s: _attr(_stranger(s), "deep", {"arrayValue": {"values": [
        {"arrayValue": {"values": [{"arrayValue": {"values": []}}]}}]}}),
    "kvlist value": lambda s: _attr(_stranger(s), "kv", {"kvlistValue": {"values": [
        {"key": "a", "value": {"intValue": "1"}}]}}),
    "bytes value": lambda s: _attr(_stranger(s), "raw", {"bytesValue": "AAEC"}),
    "surrogate in a name": lambda s: _stranger(s, name="\ud800x"),
}


@pytest.mark.parametrize("name", list(CORRUPTIONS))
def test_one_bad_span_costs_at_most_that_span(good, name, tmp_path):
    lines, want = good
    bad = CORRUPTIONS[name](_a_span(lines))
    ss = load_file(_write(tmp_path, _with_extra(lines, bad)))
    _keeps_every_run(ss, want)


@pytest.mark.parametrize("name", [n for n in CORRUPTIONS if "bad" in n or "wrong" in n or "not" in n
                                  or "2^" in n or "20-digit" in n or "NaN" in n or "infinite" in n
                                  or "negative" in n or "-1" in n or "zeros" in n or "name unknown" in n])
def test_the_bad_value_is_counted(good, name, tmp_path):
    lines, _ = good
    ss = check(load_file(_write(tmp_path, _with_extra(lines, CORRUPTIONS[name](_a_span(lines))))))
    assert ss.quality.issues, name
    if "NaN" in name or "infinite" in name:      # not only the careful path: the value itself, as the fast path does
        assert ss.quality.count("bad_value") == 1, ss.quality.issues


def test_kvlist_and_bytes_values_are_kept_as_text(good, tmp_path):
    lines, _ = good
    span = _attr(_attr(_stranger(_a_span(lines)), "kv", {"kvlistValue": {"values": [
        {"key": "a", "value": {"intValue": "1"}}, {"key": "b", "value": {"stringValue": "x"}}]}}),
        "raw", {"bytesValue": "AAEC"})
    ss = load_file(_write(tmp_path, _with_extra(lines, span)))
    row = ss.spans[ss.spans["trace_id"] == "7" * 32].iloc[0]
    assert json.loads(row["kv"]) == {"a": "1", "b": "x"} and row["raw"] == "AAEC"
    assert not ss.quality.issues


def test_invalid_utf8_and_raw_control_characters_cost_nothing(good, tmp_path):
    lines, want = good
    raw = json.dumps(_stranger(_a_span(lines), name="PLACEHOLDER")).encode()
    line = json.loads(lines[0])
    line["resourceSpans"][0]["scopeSpans"][0]["spans"].append("PLACEHOLDER_SPAN")
    data = json.dumps(line).encode().replace(b'"PLACEHOLDER_SPAN"', raw.replace(b"PLACEHOLDER", b"\xff\xfe\x00a"))
    p = tmp_path / "x.jsonl"
    p.write_bytes(b"\n".join([data, *(x.encode() for x in lines[1:])]) + b"\n")
    ss = load_file(p)
    _keeps_every_run(ss, want)
    assert ss.quality.count("bad_value") >= 1
    assert any("\ufffd" in n for n in ss.spans["name"].dropna())


def test_a_deeply_nested_line_and_a_truncated_line_cost_only_themselves(good, tmp_path):
    lines, want = good
    deep = '{"resourceSpans": ' + "[" * 100_000 + "]" * 100_000 + "}"
    cut = lines[1][: len(lines[1]) // 2]
    ss = load_file(_write(tmp_path, [*lines, deep, cut, "{not json"]))
    _keeps_every_run(ss, want)
    q = ss.quality
    assert q.count("careful_path") == 3 and q.count("invalid_json") == 3 and q.lines == len(lines) + 3
    assert any("nested too deeply" in e for i in q.issues for e in i.examples)


def test_upper_case_ids_are_found_and_linked(good, tmp_path):
    lines, want = good
    up = [line.replace(s["traceId"], s["traceId"].upper()) for line in lines
          for s in json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"][:1]]
    ss = load_file(_write(tmp_path, up))
    assert not ss.quality.issues
    _keeps_every_run(ss, want)
    tid = want["trace_id"].iloc[0]
    res = CliRunner().invoke(cli, ["trace", tid.upper(), str(tmp_path / "x.jsonl")])
    assert res.exit_code == 0 and "invoke_agent" in res.output


@pytest.mark.parametrize("agent", [False, True])
def test_a_parent_cycle_is_dropped_and_counted(good, tmp_path, agent):
    """Two spans, each the other's parent: dropped; when they are agent spans (the span taken is an agent
    invocation), the cycle is broken at the first of them instead, which becomes a root."""
    lines, want = good
    a = _stranger(_a_span(lines))
    if not agent:
        a["name"], a["attributes"] = "work", []
    root = copy.deepcopy(a)
    a["spanId"], a["parentSpanId"] = "a" * 16, "b" * 16
    b = dict(copy.deepcopy(a), spanId="b" * 16, parentSpanId="a" * 16)
    ss = check(load_file(_write(tmp_path, _with_extra(_with_extra(_with_extra(lines, root), a), b))))
    assert ss.quality.count("parent_cycle") == (0 if agent else 2)
    assert ss.quality.count("bad_value") == (1 if agent else 0)
    assert ss.spans["span_id"].isin(["a" * 16, "b" * 16]).sum() == (2 if agent else 0)
    _keeps_every_run(ss, want)


def test_a_file_named_like_a_glob_is_read(good, tmp_path):
    lines, _ = good
    _write(tmp_path, lines, "runs[1].jsonl")
    res = CliRunner().invoke(cli, ["report", str(tmp_path / "runs[1].jsonl")])
    assert res.exit_code == 0, res.output


def test_no_usable_run_exits_non_zero_with_one_line(tmp_path):
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "junk.jsonl").write_text('{"a": 1}\n{not json\n')
    for name in ("empty.jsonl", "junk.jsonl"):
        res = CliRunner().invoke(cli, ["report", str(tmp_path / name)])
        assert res.exit_code == 2, res.output
        lines = res.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("agentobs: error: no usable run in"), res.output


def test_jaeger_answer_with_one_bad_span_keeps_the_rest(good):
    lines, _want = good
    obj = json.loads(lines[0])
    n = len(obj["resourceSpans"][0]["scopeSpans"][0]["spans"])
    obj["resourceSpans"][0]["scopeSpans"][0]["spans"].append(
        CORRUPTIONS["end time 2^64 - 1 as a number"](_a_span(lines)))
    ss = load_request(obj, "jaeger test")
    assert len(ss.spans) == n and ss.quality.count("bad_span") + ss.quality.count("bad_value") >= 1


def test_a_line_over_the_limit_is_skipped_and_says_how_to_raise_it(good, tmp_path):
    lines, want = good
    long = _with_extra(lines[:1], _attr(_stranger(_a_span(lines)), "pad", {"stringValue": "x" * 300_000}))[0]
    p = _write(tmp_path, [long, *lines[1:]])
    ss = load_file(p, limits=InputLimits(max_line_bytes=200_000, chunk_bytes=100_000))
    assert ss.quality.count("line_too_long") == 1
    assert "AGENTOBS_MAX_LINE_BYTES" in ss.quality.issues[0].examples[0]
    runs = _runs_of(ss)
    assert len(runs) == len(want) - len({t for t in _trace_ids(lines[0])} - _trace_ids_all(lines[1:]))


def _trace_ids(line):
    return {s["traceId"] for rs in json.loads(line)["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]}


def _trace_ids_all(lines):
    return set().union(*(_trace_ids(x) for x in lines)) if lines else set()


def test_pieces_of_any_size_give_the_same_spans(good, tmp_path):
    lines, want = good
    p = _write(tmp_path, lines)
    for chunk in (1, 1000, 50_000):
        ss = load_file(p, limits=InputLimits(chunk_bytes=chunk))
        assert not ss.quality.issues
        _keeps_every_run(ss, want)


def test_a_gzip_bomb_is_refused_with_the_limit_to_raise(tmp_path):
    bomb = tmp_path / "bomb.jsonl.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as f:
        f.write(b'{"resourceSpans": []}\n')
        block = b" " * (1 << 20)
        for _ in range(64):
            f.write(block)
    limits = InputLimits(gzip_allowance_bytes=1 << 20, max_gzip_ratio=50)
    with pytest.raises(InputError, match="AGENTOBS_MAX_GZIP_RATIO"):
        load_file(bomb, limits=limits)


def test_a_bomb_whose_trailer_hides_its_size_is_refused_while_reading(tmp_path):
    """Two gzip members: the trailer read first declares only the small last one; the running count refuses."""
    bomb = tmp_path / "members.jsonl.gz"
    big = gzip.compress(b'{"resourceSpans": []}\n' + b" " * (64 << 20), compresslevel=9)
    small = gzip.compress(b'{"resourceSpans": []}\n')
    bomb.write_bytes(big + small)
    limits = InputLimits(gzip_allowance_bytes=1 << 20, max_gzip_ratio=50)
    with pytest.raises(InputError, match="decompression bomb"):
        load_file(bomb, limits=limits)


def _bomb(path):
    """A gzip file of 260 KiB that expands to 260 MiB: over the default limit (200 times its size, at least 256 MiB)."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = z.compress(b'{"resourceSpans": []}\n') + b"".join(z.compress(b" " * (1 << 20)) for _ in range(260))
    path.write_bytes(block + z.flush())
    return path


def test_a_gzip_bomb_in_a_folder_is_that_files_problem_and_the_rest_is_read(good, tmp_path):
    """A bomb among the files of a folder (or of a pattern) stopped the whole analysis with the bomb's error."""
    lines, want = good
    folder = tmp_path / "archive"
    folder.mkdir()
    _write(folder, lines, "good.jsonl")
    bomb = _bomb(folder / "bomb.jsonl.gz")
    for sources in ([str(folder)], [str(folder / "*")]):
        report = analyze(sources)
        assert len(report.runs) == len(want)
        issues = [i for i in report.quality.issues if i.kind == "unreadable"]
        assert [(i.source, i.count) for i in issues] == [(str(bomb), 1)] and report.quality.files == 2
        assert issues[0].examples[0].startswith("bomb.jsonl.gz: decompresses to more than 256 MiB")
        assert issues[0].examples[0].endswith("set AGENTOBS_MAX_GZIP_RATIO to a larger ratio")
    result = CliRunner().invoke(cli, ["report", str(folder)])
    assert result.exit_code == 0 and "decompression bomb" in result.stdout, result.output
    # named on its own (even beside another file), it is still refused in one line
    for sources in ([str(bomb)], [str(bomb), str(folder / "good.jsonl")]):
        with pytest.raises(InputError, match="likely decompression bomb"):
            analyze(sources)


def test_the_cli_refuses_a_gzip_bomb_in_bounded_memory(tmp_path):
    bomb = tmp_path / "bomb.jsonl.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as f:
        f.write(b'{"resourceSpans": []}\n')
        line = b"[" * (1 << 20) + b"\n"
        for _ in range(400):                   # 400 MiB of lines of brackets in about 400 KiB
            f.write(line)
    code = ("import sys\nfrom agentobs.cli.main import main\n"
            "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
            "hwm = [x for x in open('/proc/self/status') if x.startswith('VmHWM:')][0].split()[1]\n"
            "print('PEAK', hwm, file=sys.stderr)\nsys.exit(code)\n")
    # VmHWM, not ru_maxrss: ru_maxrss carries the forking pytest process's peak across exec
    done = subprocess.run([sys.executable, "-c", code, "report", str(bomb)], capture_output=True, text=True,
                          env={**os.environ, "AGENTOBS_MAX_GZIP_RATIO": "100"}, timeout=600)
    assert done.returncode == 2, done.stderr
    err = [x for x in done.stderr.splitlines() if not x.startswith("PEAK")]
    assert len(err) == 1 and "AGENTOBS_MAX_GZIP_RATIO" in err[0] and "Traceback" not in done.stderr
    peak_kib = int(next(x for x in done.stderr.splitlines() if x.startswith("PEAK")).split()[1])
    assert peak_kib < 600 * 1024, peak_kib      # far below the 400 MiB it expands to, plus the interpreter


_FIELDS = ["traceId", "spanId", "parentSpanId", "name", "kind", "startTimeUnixNano", "endTimeUnixNano",
           "status", "attributes", "events", "links"]
_ODD = st.one_of(st.none(), st.booleans(), st.integers(min_value=-2 ** 70, max_value=2 ** 70),
                 st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=40),
                 st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
                 st.sampled_from(["NaN", "Infinity", "SPAN_KIND_CLIENT", "STATUS_CODE_ERROR", "A" * 22 + "==",
                                  "0" * 32, "F" * 16, "\ud800", "[/x]", "\x1b[2J"]))


@settings(max_examples=max(EXAMPLES, 10), deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(field=st.sampled_from(_FIELDS), value=_ODD, same_trace=st.booleans())
# a model call 1 ns after 1970 under a missing parent in a trace of one run: a run of its own (its root was lost),
# which once renamed the trace's run to trace:span (the run's id lost)
@example(field="startTimeUnixNano", value=1, same_trace=True)
def test_property_a_valid_file_plus_one_corrupted_span_keeps_every_run(good, tmp_path_factory, field, value,
                                                                       same_trace):
    lines, want = good
    chat = json.loads(lines[0])["resourceSpans"][0]["scopeSpans"][0]["spans"][0]     # a model call, not an agent
    bad = _stranger(chat)
    bad[field] = value
    if same_trace:          # a leaf in an existing trace, under a span of no run's figures (a new parent id)
        bad["traceId"] = json.loads(lines[0])["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
        bad["parentSpanId"] = "9" * 16 if field != "parentSpanId" else value
    data = ("\n".join(_with_extra(lines, bad)) + "\n").encode()
    ss = load_bytes(data, "prop")
    got = _runs_of(ss)
    assert set(want.index) <= set(got.index)
    kept = [c for c in want.columns if c not in ("trace_ids", "signatures", "spans", "wall_s", "tool_calls",
                                                  "model_calls", "attempts", "retries", "steps", "input_tokens",
                                                  "output_tokens",
                                                  "tokens", "cost_usd", "active_s", "first_error",
                                                  "max_identical_calls", "max_consecutive_identical",
                                                  "max_identical_since_progress", "longest_stall",
                                                  "input_growth_per_step", "max_input_tokens",
                                                  "unknown_outcome_writes", "tools_exhausted", "writes_ok",
                                                  "adhoc_writes", "model", "dialect", "errors",
                                                  "cache_read_tokens", "cache_creation_tokens", "reasoning_tokens",
                                                  "sub_agents", "sub_agent_names")]
    if not same_trace:
        kept = [c for c in want.columns if c not in ("trace_ids", "signatures", "sub_agent_names")]
    pd.testing.assert_frame_equal(got.loc[want.index, kept], want[kept])


def test_lines_that_are_not_requests_go_the_careful_path_at_once(tmp_path):
    """JSON lines of something else, and a pretty-printed OTLP document over the document limit (so cut into pieces
    mid-object), are counted line by line without a pyarrow parse per line (which took minutes: each bad line was
    found by cutting pieces in halves); good requests between bad lines are all kept."""
    other = tmp_path / "other.jsonl"
    other.write_text('{"level": "info", "msg": "hello"}\n' * 5000 + "{}\n" * 5000)
    q = load_file(other).quality
    assert q.count("careful_path") == 10_000 and q.count("not_otlp") == 10_000
    doc = {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {"name": "t"}, "spans": [
        {"traceId": f"{i + 1:032x}", "spanId": f"{i + 1:016x}", "name": "s", "kind": 1, "startTimeUnixNano": "1",
         "endTimeUnixNano": "2"} for i in range(2000)]}]}]}
    pretty = tmp_path / "pretty.json"
    text = json.dumps(doc, indent=2) + "\n"
    pretty.write_text(text)
    ss = load_file(pretty)                                  # one piece: pyarrow reads the document whole
    assert len(ss.spans) == 2000 and not ss.quality.issues
    ss = load_file(pretty, limits=InputLimits(chunk_bytes=64 << 10))     # larger than a piece: read whole
    assert len(ss.spans) == 2000 and not ss.quality.issues
    over = InputLimits(chunk_bytes=64 << 10, max_document_bytes=64 << 10)
    ss = load_file(pretty, limits=over)             # over the document limit: cut mid-object, every line is bad
    assert len(ss.spans) == 0 and ss.quality.count("invalid_json") == text.count("\n")
    assert ss.quality.count("unreadable") == 1
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("".join(json.dumps(doc) + "\n" if i % 3 == 0 else "{}\n" for i in range(30)))
    ss = load_file(mixed)
    assert len(ss.spans) == 10 * 2000 and ss.quality.count("not_otlp") == 20


# -- the parent graph, unset times and integer overflow, on small runs built here: an `invoke_agent bot` root and two
# `chat m` model calls under it (what a user's exporter may write, one defect at a time) ----------------------------

def _examples(q, kind):
    return [e for i in q.issues if i.kind == kind for e in i.examples]


@pytest.mark.parametrize("careful", [False, True])
def test_a_span_that_is_its_own_parent_is_a_root_and_its_run_is_kept(tmp_path, careful):
    """It crashed every command (a zero-size maximum after the cycle check dropped every span), and beside good
    files its run disappeared as a parent cycle."""
    p = _bot_file(tmp_path, _bot_run("1" * 32, root_parent="a" * 16), _bot_run("2" * 32), careful=careful)
    ss = check(load_file(p))
    assert (ss.quality.count("careful_path") > 0) == careful
    assert ss.quality.count("bad_value") == 1 and ss.quality.count("parent_cycle") == 0
    assert "aaaaaaaaaaaaaaaa is the span's own id" in _examples(ss.quality, "bad_value")[0]
    runs = _runs_of(ss)
    assert list(runs.index) == ["1" * 32, "2" * 32] and list(runs["spans"]) == [3, 3]
    assert list(runs["run_root"]) == ["agent", "agent"] and list(runs["tokens"]) == [202, 202]
    alone = _bot_file(tmp_path, _bot_run("1" * 32, root_parent="a" * 16), name="alone.jsonl")
    for cmd in (["report"], ["caps", "--emit", "budget"], ["runs", "--out", str(tmp_path / "runs.csv")]):
        for f in (p, alone):
            res = CliRunner().invoke(cli, [*cmd, str(f)])
            assert res.exit_code == 0 and res.exception is None, res.output


def test_a_parent_cycle_through_the_root_is_broken_at_its_agent_span(tmp_path):
    """The root's parent id names a model call under it: the cycle is broken at the agent span (it becomes the
    root again, counted); a cycle of spans without an agent is still dropped, and alone it is a clean error."""
    p = _bot_file(tmp_path, _bot_run("1" * 32, root_parent="b" * 16), _bot_run("2" * 32))
    ss = check(load_file(p))
    assert ss.quality.count("bad_value") == 1 and ss.quality.count("parent_cycle") == 0
    example = _examples(ss.quality, "bad_value")[0]
    assert "span aaaaaaaaaaaaaaaa" in example and "a cycle of 2 spans" in example
    runs = _runs_of(ss)
    assert list(runs.index) == ["1" * 32, "2" * 32] and list(runs["spans"]) == [3, 3]
    assert list(runs["run_root"]) == ["agent", "agent"]
    res = CliRunner().invoke(cli, ["report", str(_bot_file(tmp_path, _bot_run("1" * 32, root_parent="c" * 16),
                                                           name="alone.jsonl"))])
    assert res.exit_code == 0 and res.exception is None, res.output
    calls = _bot_run("3" * 32)[1:]                       # two model calls, each the other's parent, and no agent
    calls[0]["parentSpanId"], calls[1]["parentSpanId"] = "c" * 16, "b" * 16
    alone = _bot_file(tmp_path, calls, name="calls.jsonl")
    ss = check(load_file(alone))
    assert ss.spans.empty and ss.quality.count("parent_cycle") == 2
    res = CliRunner().invoke(cli, ["report", str(alone)])
    assert res.exit_code == 2, res.output
    out = res.output.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("agentobs: error: no usable run in") and "parent_cycle" in out[0]
    mixed = check(load_file(_bot_file(tmp_path, calls, _bot_run("2" * 32), name="mixed.jsonl")))
    assert list(_runs_of(mixed).index) == ["2" * 32] and mixed.quality.count("parent_cycle") == 2
    # `trace` on the dropped trace said only that it "is not in" the file; it now says spans were dropped, and why
    res = CliRunner().invoke(cli, ["trace", "3" * 32, str(tmp_path / "mixed.jsonl")])
    out = res.output.strip().splitlines()
    assert res.exit_code == 2 and len(out) == 1, res.output
    assert "or its spans were among those dropped (2 x parent_cycle" in out[0] and "agentobs report" in out[0]
    res = CliRunner().invoke(cli, ["trace", "2" * 32, str(tmp_path / "mixed.jsonl")])
    assert res.exit_code == 0 and "invoke_agent bot" in res.output
    res = CliRunner().invoke(cli, ["trace", "2" * 32, str(_bot_file(tmp_path, _bot_run("4" * 32), name="one.jsonl"))])
    assert res.exit_code == 2 and res.output.strip().endswith("one.jsonl"), res.output   # nothing dropped: no hint


@pytest.mark.parametrize("careful", [False, True])
def test_a_time_of_0_or_before_1970_is_no_time(tmp_path, careful):
    """OTLP's 0 is unset: such a span (and one starting before 1970) is dropped and counted like one without a
    time. It was kept, and a call starting at 0 made the run's active time 1.8e9 s, with no note."""
    p = _bot_file(tmp_path, _bot_run("1" * 32, chat_start=0), _bot_run("2" * 32, root_start=-5),
                  _bot_run("3" * 32), careful=careful)
    ss = check(load_file(p))
    assert ss.quality.count("bad_span") == 2
    assert _examples(ss.quality, "bad_span")[0].startswith("span bbbbbbbbbbbbbbbb: startTimeUnixNano 0 is unset")
    for n, spans, said in ((1, _bot_run("5" * 32, root_start=-5), "aaaaaaaaaaaaaaaa: startTimeUnixNano -5 is before"),
                           (3, [dict(s, endTimeUnixNano="0") for s in _bot_run("6" * 32)],
                            "endTimeUnixNano 0 is unset")):
        q = check(load_file(_bot_file(tmp_path, spans, careful=careful, name=f"{n}.jsonl"))).quality
        assert q.count("bad_span") == n
        assert said in _examples(q, "bad_span")[0]
    runs = _runs_of(ss)
    assert runs.loc["1" * 32, "spans"] == 2 and runs.loc["1" * 32, "active_s"] == 1.0
    assert runs.loc["2" * 32, "wall_s"] == 1.0 and runs.loc["2" * 32, "run_root"] == "trace"
    assert runs["wall_s"].max() < 10 and runs["active_s"].max() < 10
    assert runs.loc["3" * 32].equals(_runs_of(check(load_file(_bot_file(tmp_path, _bot_run("3" * 32),
                                                                       name="good.jsonl")))).loc["3" * 32])
    small = [dict(s, startTimeUnixNano="1", endTimeUnixNano="2") for s in _bot_run("4" * 32)]  # near 1970: a time
    ss = check(load_file(_bot_file(tmp_path, small, careful=careful, name="small.jsonl")))
    assert ss.quality.count("bad_span") == 0 and len(ss.spans) == 3


def test_token_sums_beyond_64_bits_are_null_and_counted_never_wrapped(tmp_path):
    """Two calls of 2^62 input tokens (each a valid int64) sum past 2^63 - 1: it wrapped to -9.2e18 tokens and
    `caps --emit budget` recommended max_tokens=1, with "No problems found"."""
    p = _bot_file(tmp_path, _bot_run("1" * 32, tokens=2 ** 62), _bot_run("2" * 32))
    ss = check(load_file(p))
    runs = _runs_of(ss)
    assert runs.loc["1" * 32, ["input_tokens", "tokens"]].isna().all()
    assert runs.loc["1" * 32, "max_input_tokens"] == 2 ** 62 and runs.loc["1" * 32, "output_tokens"] == 2
    assert runs.loc["2" * 32, "tokens"] == 202 and runs.loc["2" * 32, "input_tokens"] == 200
    assert ss.quality.count("bad_value") == 2
    assert _examples(ss.quality, "bad_value")[0].startswith(f"run {'1' * 32}: input_tokens 9.22337e+18 is beyond")
    report = analyze([str(p)])
    assert report.quality.count("bad_value") == 2
    assert (report.runs["tokens"].dropna() >= 0).all()
    res = CliRunner().invoke(cli, ["caps", str(p), "--emit", "budget"])
    assert res.exit_code == 0, res.output
    assert "max_tokens=1," not in res.output and "max_tokens=-" not in res.output
