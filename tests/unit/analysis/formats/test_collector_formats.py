"""The OpenTelemetry Collector's file exporter in every format and compression (``formats.collector_proto``,
``formats.collector_zstd``): files written by the real collector 0.161.0 (``tests/data/collector/``, see its README)
give the runs they hold and the spans of the exporter's default JSON; our own scenarios' spans, encoded by the SDK's
OTLP protobuf encoder in each framing (and compressed as the exporter compresses), give the spans and runs of our
OTLP JSON file; a record cut short or corrupt costs itself. The stack test
``tests/scenarios/stack/test_collector_file_formats.py`` runs the collector itself."""
import json
import random
import struct
import subprocess
import sys

import pytest
import zstandard
from click.testing import CliRunner
from google.protobuf.internal.encoder import _VarintBytes
from google.protobuf.json_format import MessageToJson
from locations import TESTS
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from same_spans import same_spans

from agentobs.analysis.derive.runs import derive_runs
from agentobs.analysis.formats import collector_proto, collector_zstd, reader_of
from agentobs.analysis.load.sources import load_sources
from agentobs.analysis.otlp.load import load_file
from agentobs.analysis.spans.quality import DataQuality
from agentobs.cli.main import cli
from agentobs.domain.scenarios import SEED000
from agentobs.errors import InputError
from agentobs.telemetry import configure

COLLECTOR = TESTS / "data" / "collector"
PROTO, ZSTD = collector_proto.NAME, collector_zstd.NAME


# -- the real collector's files --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, names", [
    ("proto.pb", [PROTO]),
    ("proto.pb.zst", [ZSTD, PROTO]),
    ("json.jsonl.zst", [ZSTD]),
    ("json_native.jsonl.zst", [ZSTD]),
    ("proto_native.pb.zst", [ZSTD, PROTO]),
])
def test_the_collector_file_exporter_in_every_format_gives_its_runs(name, names):
    path = COLLECTOR / name
    assert reader_of(path).name == names[0]
    got = load_sources([str(path)])
    assert not got.quality.issues, got.quality.to_dict()
    assert got.quality.lines == 2                      # two records (two JSON lines, uncompressed)
    assert set(got.spellings[str(path)]) - {"canonical"} == set(names)
    runs = derive_runs(got)[0]
    assert len(runs) == 3 and len(got.spans) == 12
    for column, value in {"steps": 2, "model_calls": 2, "tool_calls": 1, "input_tokens": 250, "output_tokens": 50,
                          "tokens": 300}.items():
        assert runs[column].tolist() == [value] * 3, column
    # the same spans as the exporter's default JSON of the same collector run (the native ones: a run of their own)
    same_spans(got, load_file(COLLECTOR / "json.jsonl") if "native" not in name
                else load_sources([str(COLLECTOR / "json_native.jsonl.zst")]))


def test_agentobs_report_reads_a_proto_zstd_file_and_says_what_it_converted(tmp_path):
    src = str(COLLECTOR / "proto.pb.zst")
    table = CliRunner().invoke(cli, ["report", src])
    assert table.exit_code == 0, table.output
    assert table.output.startswith(f"3 runs (12 spans) from {src}")
    assert f"converted from {PROTO}; {ZSTD}" in table.output
    out = tmp_path / "report.json"
    r = CliRunner().invoke(cli, ["report", src, "--format", "json", "--out", str(out)])
    assert r.exit_code == 0, r.output
    report = json.loads(out.read_text())
    assert set(report["read"]["spellings"][src]) == {PROTO, ZSTD}
    assert not report["data_quality"]["issues"]


def test_no_other_test_input_is_taken_for_protobuf_or_zstd():
    others = [p for p in (TESTS / "data").rglob("*") if p.is_file() and COLLECTOR not in p.parents]
    others += [p for p in (TESTS / "dialects" / "fixtures").rglob("*") if p.is_file()]
    assert len(others) > 10
    taken = {str(p): reader_of(p).name for p in others if reader_of(p).name in (PROTO, ZSTD)}
    assert not taken


def test_reading_protobuf_loads_the_generated_classes_but_no_sdk():
    code = ("import sys, agentobs.analysis\n"
            "from agentobs.analysis.load.sources import load_sources\n"
            "assert not [m for m in sys.modules if m.startswith('opentelemetry')], 'imported early'\n"
            f"assert len(load_sources([{str(COLLECTOR / 'proto.pb.zst')!r}]).spans) == 12\n"
            "assert 'opentelemetry.proto.trace.v1.trace_pb2' in sys.modules\n"
            "assert not [m for m in sys.modules if m.startswith('opentelemetry.sdk')], 'the SDK'\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


# -- our own spans, encoded by the SDK, in each framing --------------------------------------------------------------

@pytest.fixture(scope="module")
def encoded(tmp_path_factory):
    """Every SEED000 scenario, written by our OTLP JSON file exporter, and the same spans as OTLP protobuf requests
    (the SDK's encoder), one per trace."""
    tmp = tmp_path_factory.mktemp("encoded")
    otlp, mem = tmp / "traces.jsonl", InMemorySpanExporter()
    tel = configure(traces_out=otlp, extra_exporters=[("memory", mem)])
    for run in SEED000.values():
        run([tel.observer()])
    tel.shutdown()
    by_trace: dict[int, list] = {}
    for span in mem.get_finished_spans():
        by_trace.setdefault(span.context.trace_id, []).append(span)
    assert len(by_trace) > 3
    return otlp, [encode_spans(spans) for spans in by_trace.values()]


def _be32(blobs):
    return b"".join(struct.pack(">I", len(b)) + b for b in blobs)


def _frames(blobs):
    return [zstandard.ZstdCompressor().compress(b) for b in blobs]


FRAMINGS = {
    # one bare request (what an OTLP/HTTP exporter POSTs)
    "bare request": lambda reqs: _merged(reqs).SerializeToString(),
    # the file exporter, format: proto
    "4-byte lengths": lambda reqs: _be32(r.SerializeToString() for r in reqs),
    # writeDelimitedTo
    "varint lengths": lambda reqs: b"".join(_VarintBytes(len(b)) + b for b in (r.SerializeToString() for r in reqs)),
    # format: proto, compression: zstd (a frame per record)
    "proto, zstd frames": lambda reqs: _be32(_frames(r.SerializeToString() for r in reqs)),
    # format: json, compression: zstd (a frame per record)
    "json, zstd frames": lambda reqs: _be32(_frames(MessageToJson(r, indent=None).encode() for r in reqs)),
    # the nativeCompression feature gate: one zstd stream of what is written uncompressed, a frame per flush (here
    # per record)
    "proto, zstd stream": lambda reqs: b"".join(_frames(_be32([r.SerializeToString()]) for r in reqs)),
    "json, zstd stream": lambda reqs: b"".join(_frames(MessageToJson(r, indent=None).encode() + b"\n" for r in reqs)),
}


def _merged(reqs):
    out = type(reqs[0])()
    for r in reqs:
        out.resource_spans.extend(r.resource_spans)
    return out


@pytest.mark.parametrize("framing", list(FRAMINGS))
def test_sdk_encoded_spans_in_each_framing_give_the_spans_of_our_otlp_file(tmp_path, encoded, framing):
    otlp, reqs = encoded
    p = tmp_path / "traces.bin"
    p.write_bytes(FRAMINGS[framing](reqs))
    assert reader_of(p).name == (ZSTD if "zstd" in framing else PROTO)
    got = load_sources([str(p)])
    assert not got.quality.issues, got.quality.to_dict()
    assert got.quality.lines == (1 if framing == "bare request" else len(reqs))
    same_spans(got, load_file(otlp))


# -- damage -----------------------------------------------------------------------------------------------------------

def _blobs(reqs):
    return [r.SerializeToString() for r in reqs]


def _trace_count(ss) -> int:
    return ss.spans["trace_id"].nunique()


@pytest.mark.parametrize("framing", ["4-byte lengths", "varint lengths", "proto, zstd frames", "proto, zstd stream",
                                     "json, zstd frames", "json, zstd stream"])
def test_a_file_cut_short_keeps_the_records_before_the_cut(tmp_path, encoded, framing):
    _, reqs = encoded
    whole = FRAMINGS[framing](reqs)
    p = tmp_path / "cut.bin"
    p.write_bytes(whole[:-7])
    got = load_sources([str(p)])
    assert [(i.kind, i.count) for i in got.quality.issues] == [("bad_line", 1)], got.quality.to_dict()
    assert _trace_count(got) == len(reqs) - 1
    assert "cut short" in got.quality.issues[0].examples[0]


@pytest.mark.parametrize("framing, n", [("4-byte lengths", 1), ("4-byte lengths", 2), ("varint lengths", 2),
                                        ("proto, zstd frames", 2), ("json, zstd frames", 2)])
def test_a_corrupt_record_costs_only_itself(tmp_path, encoded, framing, n):
    _, reqs = encoded
    blobs = _blobs(reqs)
    if framing.endswith("lengths"):
        blobs[n - 1] = b"\x0a\x05\xff\xff\xff\xff\xff" + blobs[n - 1][7:]          # a resource spans of garbage
        data = FRAMINGS[framing]([_Raw(b) for b in blobs])
    else:
        if framing.startswith("json"):
            blobs = [MessageToJson(r, indent=None).encode() for r in reqs]
        frames = _frames(blobs)
        frames[n - 1] = frames[n - 1][:6] + bytes(b ^ 0x5A for b in frames[n - 1][6:])   # the frame's blocks garbled
        data = _be32(frames)
    p = tmp_path / "corrupt.bin"
    p.write_bytes(data)
    got = load_sources([str(p)])
    assert [(i.kind, i.count) for i in got.quality.issues] == [("bad_line", 1)], got.quality.to_dict()
    assert f"record {n}" in got.quality.issues[0].examples[0]
    assert _trace_count(got) == len(reqs) - 1


class _Raw:
    """Bytes that serialize as themselves (a record as FRAMINGS frames it)."""

    def __init__(self, data: bytes):
        self.data = data

    def SerializeToString(self) -> bytes:
        return self.data


def test_a_zstd_file_that_expands_beyond_the_limit_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTOBS_MAX_DOCUMENT_BYTES", "1M")
    p = tmp_path / "bomb.jsonl.zst"
    p.write_bytes(zstandard.ZstdCompressor().compress(b"{" + b" " * (4 << 20)))
    assert reader_of(p).name == ZSTD
    with pytest.raises(InputError, match=r"a zstd file that expands beyond 1 MiB.*AGENTOBS_MAX_DOCUMENT_BYTES"):
        load_sources([str(p)])


def test_bytes_that_are_not_a_record_never_raise(encoded):
    """Damaged framings, random bytes and cut prefixes: sniffing and reading count, never raise."""
    _, reqs = encoded
    whole = FRAMINGS["4-byte lengths"](reqs)
    rnd = random.Random(7)
    samples = [bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 400))) for _ in range(300)]
    samples += [whole[:k] for k in range(0, 600, 7)]
    samples += [bytes(b ^ (1 << rnd.randrange(8)) if rnd.random() < 0.01 else b for b in whole) for _ in range(20)]
    for data in samples:
        collector_proto.matches(data[:8192])
        collector_zstd.matches(data[:8192])
        q = DataQuality()
        collector_proto.requests(data, "x", q)


@pytest.mark.parametrize("where", ["first", "between", "last"])
def test_a_zstd_stream_with_skippable_frames_is_read(tmp_path, where):
    """zstd's format allows skippable frames anywhere in a stream: ``pzstd`` writes one before every frame, the
    seekable format one at the end. A file that opened with one was taken for "binary data, not text"."""
    text = (COLLECTOR / "json.jsonl").read_bytes()
    lines = text.splitlines(keepends=True)
    frames = [zstandard.ZstdCompressor().compress(b"".join(lines[:1])),
              zstandard.ZstdCompressor().compress(b"".join(lines[1:]))]
    skip = struct.pack("<II", 0x184D2A5E, 7) + b"an index"[:7]
    data = {"first": skip + frames[0] + frames[1], "between": frames[0] + skip + frames[1],
            "last": frames[0] + frames[1] + skip}[where]
    path = tmp_path / "pzstd.jsonl.zst"
    path.write_bytes(data)
    assert reader_of(path).name == ZSTD
    got = load_sources([str(path)])
    assert not got.quality.issues, got.quality.to_dict()
    same_spans(got, load_file(COLLECTOR / "json.jsonl"))


def test_a_file_pzstd_wrote_is_read(tmp_path):
    import shutil
    if shutil.which("pzstd") is None:
        pytest.skip("pzstd is not installed")
    plain = tmp_path / "json.jsonl"
    plain.write_bytes((COLLECTOR / "json.jsonl").read_bytes())
    subprocess.run(["pzstd", "-q", "-f", str(plain), "-o", str(tmp_path / "json.jsonl.zst")], check=True)
    got = load_sources([str(tmp_path / "json.jsonl.zst")])
    assert not got.quality.issues, got.quality.to_dict()
    same_spans(got, load_file(plain))
