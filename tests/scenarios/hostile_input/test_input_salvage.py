"""Input that used to cost everything now costs only what is damaged, and what cannot be read says what it is and
what to do: a gzip stream cut short or followed by garbage keeps all that came before the break, a UTF-8 byte order
mark is skipped, an integer too large for a double is a number (never a traceback), and a file in a format we do
not read is named with the way out."""
import bz2
import gzip
import io
import json
import lzma
import subprocess
import sys
import zipfile
import zlib

import pandas as pd
import pytest
from click.testing import CliRunner
from locations import TESTS

from agentobs.analysis.derive.runs import derive_runs
from agentobs.analysis.input.limits import InputLimits
from agentobs.analysis.load.sources import load_sources
from agentobs.analysis.otlp.load import load_file
from agentobs.cli.main import cli

FIXTURES = TESTS / "dialects" / "fixtures"


def _ids(ss) -> set[tuple[str, str]]:
    return set(zip(ss.spans.trace_id, ss.spans.span_id, strict=True))


@pytest.mark.parametrize("damage", ["cut short", "garbage after the stream"])
@pytest.mark.parametrize("name", ["langgraph", "openai_v2"])
def test_a_damaged_gzip_stream_keeps_every_line_before_the_break(tmp_path, name, damage):
    text = (FIXTURES / f"{name}.jsonl").read_bytes()
    packed = gzip.compress(text)
    raw = packed[: len(packed) * 4 // 5] if damage == "cut short" else packed + b"garbage, not gzip"
    p = tmp_path / "t.jsonl.gz"
    p.write_bytes(raw)
    got = load_file(p)
    inflated = zlib.decompressobj(wbits=31).decompress(raw)            # what zlib gives of the damaged stream
    whole = inflated[: inflated.rfind(b"\n") + 1]
    before = tmp_path / "before.jsonl"
    before.write_bytes(whole)
    assert len(whole) > 0
    assert _ids(got) == _ids(load_file(before))
    examples = [e for i in got.quality.issues if i.kind == "unreadable" for e in i.examples]
    assert len(examples) == 1 and "what came before was read" in examples[0]
    if damage == "cut short":
        assert got.quality.count("invalid_json") == 1                  # the line the cut goes through
    else:
        assert len(got.spans) == len(load_file(FIXTURES / f"{name}.jsonl").spans)


@pytest.mark.parametrize("compressed", [False, True])
def test_a_byte_order_mark_is_skipped(tmp_path, compressed):
    text = b"\xef\xbb\xbf" + (FIXTURES / "langfuse.jsonl").read_bytes()
    p = tmp_path / ("bom.jsonl.gz" if compressed else "bom.jsonl")
    p.write_bytes(gzip.compress(text) if compressed else text)
    got = load_sources([str(p)])
    assert not got.quality.issues, got.quality.to_dict()
    assert _ids(got) == _ids(load_file(FIXTURES / "langfuse.jsonl"))


def test_a_transcript_with_a_byte_order_mark_is_read(tmp_path):
    runs = [{"id": f"run-{i}", "success": i % 2 == 0, "model": "gpt-4o-mini", "messages": [
        {"role": "user", "content": "Refund order ord_1001"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": "get_order", "arguments": "{}"}}],
         "usage": {"prompt_tokens": 100 + i, "completion_tokens": 20}},
        {"role": "tool", "tool_call_id": f"c{i}", "content": "{\"status\": \"delivered\"}"},
        {"role": "assistant", "content": "Done.", "usage": {"prompt_tokens": 150, "completion_tokens": 10}}]}
        for i in range(4)]
    plain, marked = tmp_path / "runs.json", tmp_path / "bom.json"
    plain.write_text(json.dumps(runs))
    marked.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    got, want = derive_runs(load_sources([str(marked)]))[0], derive_runs(load_sources([str(plain)]))[0]
    assert len(got) == len(want) == 4
    cols = ["steps", "model_calls", "tool_calls", "tokens", "success"]      # (ids are made from the file's name)
    assert sorted(map(tuple, got[cols].astype(str).values)) == sorted(map(tuple, want[cols].astype(str).values))


def test_an_integer_above_two_to_the_53_is_a_number_not_a_traceback(tmp_path):
    lines = (FIXTURES / "openai_v2.jsonl").read_text().splitlines()
    big = 2 ** 53 + 1
    old = '{"key":"gen_ai.usage.input_tokens","value":{"intValue":"'
    at = lines[0].index(old) + len(old)
    end = lines[0].index('"', at)
    lines[0] = lines[0][:at] + str(big) + lines[0][end:]
    p = tmp_path / "big.jsonl"
    p.write_text("\n".join(lines) + "\n")
    for command in (["report", str(p)], ["caps", str(p)], ["runs", str(p), "--out", str(tmp_path / "r.csv")]):
        r = CliRunner().invoke(cli, command)
        assert r.exit_code == 0, r.output
        assert "Traceback" not in r.output
    runs = pd.read_csv(tmp_path / "r.csv")
    assert runs["input_tokens"].max() >= float(big) - 2


def _protobuf_metrics() -> bytes:
    """A real OTLP protobuf metrics request (the SDK's encoder): protobuf, but not traces."""
    from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    reader = InMemoryMetricReader()
    mp = MeterProvider(metric_readers=[reader])
    mp.get_meter("t").create_counter("gen_ai.client.token.usage").add(100, {"gen_ai.token.type": "input"})
    data = reader.get_metrics_data()
    mp.shutdown()
    assert data is not None
    return encode_metrics(data).SerializeToString()


def _zip(data: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("traces.jsonl", data)
    return out.getvalue()


def _parquet(data: bytes) -> bytes:
    out = io.BytesIO()
    pd.DataFrame({"line": data.decode().splitlines()}).to_parquet(out)
    return out.getvalue()


@pytest.mark.parametrize("kind, make, says", [
    ("bzip2", bz2.compress, "bzip2-compressed: only gzip and zstd are read"),
    ("xz", lzma.compress, "xz-compressed: only gzip and zstd are read"),
    ("zip", _zip, "a zip archive: unzip it"),
    ("parquet", _parquet, "a Parquet file"),
    ("UTF-16", lambda d: d.decode().encode("utf-16"), "UTF-16 text: save it as UTF-8"),
    # without a byte-order mark, as some Windows tools save it: read as broken JSON lines, or as a transcript file
    ("UTF-16 little-endian, no mark", lambda d: d.decode().encode("utf-16-le"), "UTF-16 text: save it as UTF-8"),
    ("UTF-16 big-endian, no mark", lambda d: d.decode().encode("utf-16-be"), "UTF-16 text: save it as UTF-8"),
    ("UTF-16 array, no mark", lambda d: ("[" + ",".join(d.decode().splitlines()) + "]").encode("utf-16-le"),
     "UTF-16 text: save it as UTF-8"),
    ("gzip twice", lambda d: gzip.compress(gzip.compress(d)), "gzip inside gzip (compressed twice): decompress it"),
    ("random bytes", lambda d: bytes(range(256)) * 4, "binary data, not text"),
    ("protobuf metrics", None, "binary protobuf that is not OTLP traces"),
    ("protobuf metrics, length-prefixed as the collector writes them", None, "binary protobuf that is not OTLP traces"),
])
def test_a_format_we_do_not_read_is_named_with_the_way_out(tmp_path, kind, make, says):
    """(zstd and OTLP protobuf traces, which the collector's file exporter writes, are read:
    tests/unit/analysis/formats/test_collector_formats.py.)"""
    data = (FIXTURES / "openai_v2.jsonl").read_bytes()
    if make is None:
        raw = _protobuf_metrics()
        raw = len(raw).to_bytes(4, "big") + raw if "length" in kind else raw
    else:
        raw = make(data)
    p = tmp_path / "traces.bin"
    p.write_bytes(raw)
    r = CliRunner().invoke(cli, ["report", str(p)])
    assert r.exit_code == 2
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"agentobs: error: no usable run in {p}: 1 x unknown_format")
    assert says in lines[0], lines[0]


def test_the_error_for_no_usable_run_gives_the_reason(tmp_path):
    packed = gzip.compress((FIXTURES / "openai_v2.jsonl").read_bytes())
    p = tmp_path / "cut.jsonl.gz"
    p.write_bytes(packed[:40])                                       # too little to inflate a line
    r = CliRunner().invoke(cli, ["report", str(p)])
    assert r.exit_code == 2
    assert "1 x unreadable (the file could not be read: " in r.output
    assert "end-of-stream" in r.output or "ends early" in r.output, r.output


def test_json_lines_still_read_after_the_changes_to_the_reader(tmp_path):
    want = load_file(FIXTURES / "openai_v2.jsonl")
    p = tmp_path / "x.jsonl.gz"
    p.write_bytes(gzip.compress((FIXTURES / "openai_v2.jsonl").read_bytes()))
    got = load_file(p)
    assert _ids(got) == _ids(want) and not got.quality.issues
    lines = sum(1 for line in (FIXTURES / "openai_v2.jsonl").read_text().splitlines() if line.strip())
    assert json.loads(json.dumps(got.spellings[str(p)])) == {"canonical": lines}


@pytest.mark.parametrize("first", ["tail -c", "null", "# a comment", "[]"])
def test_a_damaged_first_line_costs_only_itself(tmp_path, first):
    text = (FIXTURES / "openai_v2.jsonl").read_text()
    lines = text.splitlines()
    head = lines[0][len(lines[0]) // 2:] if first == "tail -c" else first       # a file cut at its start
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join([head, *lines[1:]]) + "\n")
    rest = tmp_path / "rest.jsonl"
    rest.write_text("\n".join(lines[1:]) + "\n")
    got = load_sources([str(p)])
    assert _ids(got) == _ids(load_file(rest))
    # (an empty array holds nothing to lose: the values after it are read as a document's)
    assert got.quality.count("invalid_json") + got.quality.count("not_otlp") == (0 if first == "[]" else 1)


def test_null_lines_anywhere_never_crash_the_reader_and_cost_only_themselves(tmp_path):
    """pyarrow's JSON reader (26.0.1) crashes the process on a null that starts one of its blocks: such lines must
    never reach it, whatever the pieces."""
    lines = (FIXTURES / "openai_v2.jsonl").read_text().splitlines()
    out = []
    for i, line in enumerate(lines):
        out += [*["null", " null ", "\tnull\r"][:i % 4], line]
    out.append("null")
    p = tmp_path / "nulls.jsonl"
    p.write_text("\n".join(out) + "\n")
    want = _ids(load_file(FIXTURES / "openai_v2.jsonl"))
    nulls = len(out) - len(lines)
    for chunk in (1, 300, 5000, 1 << 20):
        got = load_file(p, limits=InputLimits(chunk_bytes=chunk))
        assert _ids(got) == want, chunk
        assert got.quality.count("not_otlp") + got.quality.count("invalid_json") == nulls, chunk


@pytest.mark.parametrize("blank", [" " * 63, " " * 64, " " * 65, " \t\r\n" * 2000, "\n" * 70])
def test_a_null_after_any_amount_of_white_space_at_the_start_never_crashes_the_reader(tmp_path, blank):
    """The first line too: a null after more white space than a quick look at the start covers (it took the
    process down with a segmentation fault). Loaded in a child process, so a crash fails the test, not the run."""
    p = tmp_path / "lead.jsonl"
    p.write_text(blank + "null\n" + (FIXTURES / "openai_v2.jsonl").read_text())
    code = ("import sys; from agentobs.analysis.otlp.load import load_file; ss = load_file(sys.argv[1]); "
            "print(len(ss.spans), ss.quality.count('not_otlp') + ss.quality.count('invalid_json'))")
    done = subprocess.run([sys.executable, "-c", code, str(p)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    spans, bad = map(int, done.stdout.split())
    assert spans == len(load_file(FIXTURES / "openai_v2.jsonl").spans) and bad == 1
