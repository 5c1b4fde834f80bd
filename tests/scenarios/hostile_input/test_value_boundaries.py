"""One value or one file never ends a report (issue 43, point 3): the boundaries the property tests had missed.

Times next to the int64 limit of nanoseconds, gzip header fields (name, comment, extra) of every size, and numbers
next to Python's limits (the 4,300-digit limit of int conversions, floats that overflow), in every input kind. Each
input is generated here; a case goes through the whole report (``analyze``, and the CLI's JSON, CSV and HTML
outputs where the value reaches them), and what cannot be used is a counted data-quality finding or a one-line
error, never an internal one.
"""
import gzip
import json
import os
import struct
import zlib

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentobs.analysis import analyze
from agentobs.analysis.derive.runs import derive_runs
from agentobs.analysis.load.sources import load_sources
from agentobs.cli.main import cli

EXAMPLES = int(os.environ.get("AGENTOBS_PROPERTY_EXAMPLES", "2000"))
# each case reads files and derives a report: a few dozen cases cover the boundaries (they are sampled around them)
FEW = settings(max_examples=max(10, min(EXAMPLES // 80, 25)), deadline=None, derandomize=True, database=None,
               suppress_health_check=list(HealthCheck))
INT64_MAX = (1 << 63) - 1
TRACE = "ab" * 16


def _span(span_id, parent, name, op, start, end, **attrs):
    values = [{"key": "gen_ai.operation.name", "value": {"stringValue": op}}]
    for k, v in attrs.items():
        key = k.replace("__", ".")
        if isinstance(v, str):
            values.append({"key": key, "value": {"stringValue": v}})
        else:
            values.append({"key": key, "value": {"intValue": str(v)}})
    out = {"traceId": TRACE, "spanId": span_id, "name": name, "kind": 1, "startTimeUnixNano": str(start),
           "endTimeUnixNano": str(end), "attributes": values, "status": {}}
    if parent:
        out["parentSpanId"] = parent
    return out


def _run(start: int, length: int = 90) -> str:
    """One agent run (an agent span and a model call under it) starting at ``start`` ns, as an OTLP JSON line."""
    spans = [_span("11" * 8, None, "invoke_agent a", "invoke_agent", start, start + length, gen_ai__agent__name="a"),
             _span("22" * 8, "11" * 8, "chat m", "chat", start + length // 9, start + length // 2,
                   gen_ai__request__model="gpt-4.1", gen_ai__usage__input_tokens=12)]
    return json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": spans}]}]}) + "\n"


def _cli(*args):
    res = CliRunner().invoke(cli, list(args), catch_exceptions=True)
    assert "internal error" not in res.output and "Traceback" not in res.output, res.output
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise AssertionError(f"{args}: {type(res.exception).__name__}: {res.exception}")
    return res


# -- times next to the int64 limit -----------------------------------------------------------------------------------

@FEW
@given(below=st.one_of(st.integers(91, 2_000), st.sampled_from([91, 256, 511, 512, 513, 1024, 4096])))
def test_a_run_starting_next_to_the_int64_limit_is_in_the_runs_table(tmp_path_factory, below):
    """A run starting ``below`` ns before 2**63 ns (its spans end before the limit): as float64 datetimes, every
    start within 512 ns of 2**63 rounded up past datetime64[ns] and ended the report, every run lost."""
    path = tmp_path_factory.mktemp("near") / "near.jsonl"
    start = (1 << 63) - below
    path.write_text(_run(start, 90) + _run(1_780_000_000 * 10**9, 90).replace("ab" * 16, "cd" * 16))
    runs, _, _ = derive_runs(load_sources([str(path)]))
    assert sorted(runs["start"].astype("int64").tolist()) == [1_780_000_000 * 10**9, start]


@pytest.mark.parametrize("below", [91, 511, 512, 513])
def test_every_output_of_a_run_next_to_the_int64_limit(tmp_path, below):
    path = tmp_path / "near.jsonl"
    path.write_text(_run((1 << 63) - below, 90) + _run(1_780_000_000 * 10**9, 90).replace("ab" * 16, "cd" * 16))
    assert len(analyze([str(path)]).runs) == 2
    for fmt in ("json", "html"):
        res = _cli("report", str(path), "--format", fmt, "--out", str(tmp_path / f"r.{fmt}"))
        assert res.exit_code == 0, res.output
    assert _cli("runs", str(path), "--out", str(tmp_path / "runs.csv")).exit_code == 0
    assert "2262-04-11" in (tmp_path / "runs.csv").read_text()
    assert _cli("trace", "ab" * 16, str(path)).exit_code == 0


@FEW
@given(past=st.integers(0, 10_000))
def test_spans_ending_past_the_int64_limit_are_counted_not_fatal(tmp_path_factory, past):
    """A run whose spans end at or after 2**63 ns: its times are bad values (counted), the other run is reported."""
    path = tmp_path_factory.mktemp("past") / "past.jsonl"
    path.write_text(_run(INT64_MAX - 50, 50 + past).replace("ab" * 16, "ef" * 16) + _run(1_780_000_000 * 10**9))
    ss = load_sources([str(path)])
    runs, _, _ = derive_runs(ss)
    assert "ab" * 16 in set(runs["trace_id"].astype(str))
    assert past == 0 or ss.quality.count("bad_value") or ss.quality.count("bad_span")


# -- gzip header fields of every size --------------------------------------------------------------------------------

def _gzip_member(data: bytes, *, name: bytes | None = None, comment: bytes | None = None,
                 extra: bytes | None = None, header_crc: bool = False) -> bytes:
    """One gzip member (RFC 1952) with the optional header fields given."""
    flags = (8 if name is not None else 0) | (16 if comment is not None else 0) | (4 if extra is not None else 0) \
        | (2 if header_crc else 0)
    head = b"\x1f\x8b\x08" + bytes([flags]) + struct.pack("<I", 0) + b"\x00\x03"
    if extra is not None:
        head += struct.pack("<H", len(extra)) + extra
    if name is not None:
        head += name + b"\x00"
    if comment is not None:
        head += comment + b"\x00"
    if header_crc:
        head += struct.pack("<H", zlib.crc32(head) & 0xFFFF)
    deflate = zlib.compressobj(6, zlib.DEFLATED, -15)
    return head + deflate.compress(data) + deflate.flush() + struct.pack("<II", zlib.crc32(data), len(data))


def _gzip_folder(d, field: str, size: int, second: bool, header_crc: bool):
    """A folder of a good file and a valid gzip file whose ``field`` (in its first member, or in a second one) is
    ``size`` bytes long; the spans of both are loaded and checked."""
    (d / "a-good.jsonl").write_text(_run(1_780_000_000 * 10**9))
    data = _run(1_790_000_000 * 10**9).replace("ab" * 16, "cd" * 16).encode()
    fields = {field: (b"x" if field != "extra" else b"\x00") * size, "header_crc": header_crc}
    if second:
        half = data.index(b'"scopeSpans"')
        blob = _gzip_member(data[:half]) + _gzip_member(data[half:], **fields)
    else:
        blob = _gzip_member(data, **fields)
    (d / "b-other.jsonl.gz").write_bytes(blob)
    assert gzip.decompress(blob) == data                 # a valid gzip file
    ss = load_sources([str(d)])
    assert ss.quality.issues == [], ss.quality.issues
    assert sorted(set(ss.spans["trace_id"].astype(str))) == ["ab" * 16, "cd" * 16]


@pytest.mark.parametrize(("field", "size"), [(f, n) for f in ("name", "comment")
                                             for n in (0, 65_536, 524_287, 524_288, 524_289, 1 << 20)]
                         + [("extra", n) for n in (0, 1, 65_535)])
@pytest.mark.parametrize("second", [False, True], ids=["first member", "second member"])
def test_gzip_header_fields_at_isal_s_buffer_size_are_read(tmp_path, field, size, second):
    """ISA-L's reader refuses a header name or comment over its 512 KiB buffer (OverflowError: the folder was
    lost); such a file is read by zlib's reader then, with every span, and the folder's other file too."""
    _gzip_folder(tmp_path, field, size, second, header_crc=size == 1)


@FEW
@given(field=st.sampled_from(["name", "comment", "extra"]), size=st.integers(0, 1_200_000), second=st.booleans(),
       header_crc=st.booleans())
def test_gzip_header_fields_of_any_size_are_read_in_a_folder_of_good_files(tmp_path_factory, field, size, second,
                                                                           header_crc):
    _gzip_folder(tmp_path_factory.mktemp("gz"), field, min(size, 65_535) if field == "extra" else size, second,
                 header_crc)


def test_a_gzip_name_over_512_kib_in_a_folder_of_good_files_is_reported(tmp_path):
    (tmp_path / "a-good.jsonl").write_text(_run(1_780_000_000 * 10**9))
    other = _run(1_790_000_000 * 10**9).replace("ab" * 16, "cd" * 16).encode()
    (tmp_path / "b-other.jsonl.gz").write_bytes(_gzip_member(other, name=b"n" * (600 << 10)))
    res = _cli("report", str(tmp_path), "--format", "json", "--out", str(tmp_path / "r.json"))
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "r.json").read_text())["overview"]["runs"] == 2


# -- numbers next to Python's limits, in every input kind ------------------------------------------------------------

# integers next to the 4,300-digit limit of int <-> str conversions (json reads 4,300 digits, not 4,301), floats that
# overflow (json reads 1e309 as inf), 64-bit edges
NUMBERS = ["9" * 4299, "9" * 4300, "9" * 4301, "-" + "9" * 5000, "1.7976931348623157e308", "1e309", "-1e309",
           "1e-400", str(1 << 63), str(1 << 64), "-" + str(1 << 63), "0.1e4300"]


def _documents():
    """One document of each input kind, two runs in each; every scalar leaf is a place a number may go."""
    start = 1_780_000_000 * 10**6                      # microseconds
    jaeger = {"data": [{"traceID": t, "processes": {"p1": {"serviceName": "svc", "tags": []}}, "spans": [
        {"traceID": t, "spanID": t[:16], "operationName": "invoke_agent a", "references": [], "startTime": start,
         "duration": 90, "processID": "p1", "logs": [{"timestamp": start + 1, "fields": [
             {"key": "event", "type": "string", "value": "x"}]}],
         "tags": [{"key": "gen_ai.operation.name", "type": "string", "value": "invoke_agent"},
                  {"key": "gen_ai.agent.name", "type": "string", "value": "a"}]},
        {"traceID": t, "spanID": t[16:], "operationName": "chat m", "startTime": start + 10, "duration": 40,
         "references": [{"refType": "CHILD_OF", "traceID": t, "spanID": t[:16]}], "processID": "p1",
         "tags": [{"key": "gen_ai.operation.name", "type": "string", "value": "chat"},
                  {"key": "gen_ai.usage.input_tokens", "type": "int64", "value": 12},
                  {"key": "agentobs.cost_usd", "type": "float64", "value": 0.5}]}]} for t in ("ab" * 16, "cd" * 16)]}
    zipkin = [{"traceId": t, "id": t[:16], "name": "invoke_agent a", "timestamp": start, "duration": 90,
               "localEndpoint": {"serviceName": "svc", "port": 8080},
               "tags": {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"},
               "annotations": [{"timestamp": start + 1, "value": "x"}]} for t in ("ab" * 16, "cd" * 16)] + \
             [{"traceId": t, "id": t[16:], "parentId": t[:16], "name": "chat m", "timestamp": start + 10,
               "duration": 40, "kind": "CLIENT", "tags": {"gen_ai.operation.name": "chat",
                                                          "gen_ai.usage.input_tokens": "12"}}
              for t in ("ab" * 16, "cd" * 16)]
    console = [{"name": "invoke_agent a", "context": {"trace_id": "0x" + t, "span_id": "0x" + t[:16]},
                "kind": "SpanKind.INTERNAL", "parent_id": None, "start_time": "2026-05-28T20:26:40.000000Z",
                "end_time": "2026-05-28T20:26:41.000000Z", "status": {"status_code": "UNSET"},
                "attributes": {"gen_ai.operation.name": "invoke_agent", "gen_ai.usage.input_tokens": 12,
                               "agentobs.cost_usd": 0.5},
                "events": [], "links": [], "resource": {"attributes": {"service.name": "svc"}}}
               for t in ("ab" * 16, "cd" * 16)]
    messages = [{"role": "user", "content": "hi", "timestamp": "2026-05-28T20:26:40"},
                {"role": "assistant", "content": "x", "usage": {"prompt_tokens": 10, "completion_tokens": 2},
                 "cost": 0.01, "tool_calls": [{"id": "c1", "type": "function",
                                               "function": {"name": "f", "arguments": "{\"a\": 1}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "ok"},
                {"role": "assistant", "content": "done", "usage": {"prompt_tokens": 20, "completion_tokens": 3}}]
    tau2 = {"info": {"agent_info": {"llm": "gpt-4.1"}}, "simulations": [
        {"id": f"s{n}", "task_id": "1", "trial": 0, "agent_cost": 0.5, "reward_info": {"reward": 1.0},
         "start_time": "2026-05-28T20:26:40", "messages": messages} for n in range(2)]}
    openai = [{"id": f"r{n}", "success": True, "cost": 0.2, "start_time": 1_780_000_000, "messages": messages}
              for n in range(2)]
    otlp = "".join(_run(1_780_000_000 * 10**9 + n).replace("ab" * 16, t) for n, t in enumerate(("ab" * 16, "cd" * 16)))
    labels = [{"run_id": "ab" * 16, "success": True}, {"run_id": "cd" * 16, "success": 0}]
    return {"otlp.jsonl": [json.loads(line) for line in otlp.splitlines()], "jaeger.json": jaeger,
            "zipkin.json": zipkin, "console.txt": console, "tau2.json": tau2, "openai.json": openai,
            "labels.json": labels}


def _leaves(doc):
    out = []

    def walk(node, parent, key):
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, node, k)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, node, i)
        else:
            out.append((parent, key))
    walk(doc, None, None)
    return out


def _text(name, doc):
    if name.endswith(".jsonl"):
        return "".join(json.dumps(line) + "\n" for line in doc)
    if name == "console.txt":
        return "".join(json.dumps(span, indent=4) + "\n" for span in doc)
    return json.dumps(doc)


DOCUMENTS = _documents()


@settings(FEW, max_examples=max(20, min(EXAMPLES // 20, 100)))
@given(name=st.sampled_from(sorted(DOCUMENTS)), number=st.sampled_from(NUMBERS), pick=st.integers(0, 10**6),
       quoted=st.booleans())
def test_numbers_next_to_python_s_limits_cost_at_most_their_file(tmp_path_factory, name, number, pick, quoted):
    """A number next to Python's limits in any place of any input kind: the input is read, or the value, span,
    run or file it spoils is counted (or, for a labels file, refused with one line); never an internal error."""
    import copy

    from agentobs import InputError
    from agentobs.analysis.assess.labels import read_labels
    doc = copy.deepcopy(DOCUMENTS[name])
    leaves = _leaves(doc)
    parent, key = leaves[pick % len(leaves)]
    parent[key] = "@@NUMBER@@"
    d = tmp_path_factory.mktemp("numbers")
    path = d / name
    path.write_text(_text(name, doc).replace('"@@NUMBER@@"', f'"{number}"' if quoted else number))
    if name == "labels.json":
        try:
            read_labels(path)
        except InputError as exc:
            assert "\n" not in str(exc)
        return
    try:
        derive_runs(load_sources([str(path)]))
    except InputError as exc:                          # nothing usable in the file: said in one line
        assert "\n" not in str(exc)


@pytest.mark.parametrize("digits", [4297, 4298, 4300])
def test_a_jaeger_ui_time_of_thousands_of_digits_costs_its_span(tmp_path, digits):
    """Microseconds of 4,298 digits and more times 1000 have more digits than Python writes out: the converter
    raised ValueError, the file was lost. The span's time is a counted bad value now, the other trace is read."""
    doc = json.loads(json.dumps(DOCUMENTS["jaeger.json"]))
    doc["data"][0]["spans"][1]["startTime"] = "@@"
    path = tmp_path / "jaeger.json"
    path.write_text(json.dumps(doc).replace('"@@"', "9" * digits))
    ss = load_sources([str(path)])
    assert ss.quality.count("bad_value") >= 1
    assert "cd" * 16 in set(ss.spans["trace_id"].astype(str))
    res = _cli("report", str(path), "--format", "json", "--out", str(tmp_path / "r.json"))
    assert res.exit_code == 0, res.output


def test_an_exception_nobody_expected_costs_its_file_not_the_folder(tmp_path, monkeypatch):
    """Whatever a file's content may still trip (a bug not found yet, a file that does not fit in memory) costs that
    file, counted as unreadable with the exception named; the folder's other files are read."""
    from agentobs.analysis.formats import jaeger_ui

    def trips(*args, **kwargs):
        raise OverflowError("a converter met a value it did not expect")
    monkeypatch.setattr(jaeger_ui, "stream", trips)
    (tmp_path / "a.jsonl").write_text(_run(1_780_000_000 * 10**9))
    (tmp_path / "b.json").write_text(json.dumps(DOCUMENTS["jaeger.json"]))
    ss = load_sources([str(tmp_path)])
    assert set(ss.spans["trace_id"].astype(str)) == {"ab" * 16}
    (issue,) = [i for i in ss.quality.issues if i.kind == "unreadable"]
    assert issue.source == str(tmp_path / "b.json")
    assert "unexpected OverflowError: a converter met a value it did not expect" in issue.examples[0]
    res = _cli("report", str(tmp_path / "b.json"))
    assert res.exit_code == 2 and res.output.startswith("agentobs: error: no usable run"), res.output
    assert "unexpected OverflowError" in res.output


# -- zstd frame header fields of every size --------------------------------------------------------------------------

def _zstd_frame(data: bytes) -> bytes:
    import zstandard
    return zstandard.ZstdCompressor(write_content_size=True).compress(data)


@FEW
@given(descriptor=st.integers(0, 255), dict_id=st.sampled_from([b"", b"\x07", b"\x07\x00", b"\x07\x00\x00\x00"]),
       skippable=st.sampled_from([0, 1, 65_536, 600_000]), native=st.booleans())
def test_zstd_header_fields_of_any_size_cost_at_most_their_record(tmp_path_factory, descriptor, dict_id, skippable,
                                                                  native):
    """A zstd frame whose header asks for any window (up to terabytes), names a dictionary, or a skippable frame of
    any size: the frame costs its record (or, in one stream, what follows), counted; the others are read."""
    d = tmp_path_factory.mktemp("zstd")
    good = _zstd_frame(_run(1_780_000_000 * 10**9).encode())
    did = {b"": 0, b"\x07": 1, b"\x07\x00": 2, b"\x07\x00\x00\x00": 3}[dict_id]
    odd = b"\x28\xb5\x2f\xfd" + bytes([did]) + bytes([descriptor]) + dict_id + good[6:]     # a window descriptor
    skip = struct.pack("<II", 0x184D2A50, skippable) + b"\x00" * skippable
    records = [good, odd, skip, good]
    blob = b"".join(records) if native else b"".join(struct.pack(">I", len(r)) + r for r in records)
    (d / "a.jsonl").write_text(_run(1_790_000_000 * 10**9).replace("ab" * 16, "cd" * 16))
    (d / "b.jsonl.zst").write_bytes(blob)
    ss = load_sources([str(d)])
    assert "cd" * 16 in set(ss.spans["trace_id"].astype(str))       # the folder's other file, always
    assert all(i.kind != "unreadable" or "unexpected" not in " ".join(i.examples) for i in ss.quality.issues)
