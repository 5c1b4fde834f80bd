"""A folder of small OTLP JSON lines files is read in batches (``otlp.batch``), and gives exactly what
reading each file on its own gives: spans (each with its own file as source), events, links, counts, issues and
their examples, spellings, the report. Hostile and odd files among good ones cost only themselves.

The requests are the real instrumentations' (``tests/dialects/fixtures``) and the spellings the real writers'
(protobuf's ``json_format``)."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from locations import TESTS

from agentobs.analysis.load import sources
from agentobs.analysis.load.sources import load_sources
from agentobs.analysis.otlp import batch as _otlp_batch
from agentobs.cli.main import cli

FIXTURES = TESTS / "dialects" / "fixtures"
NAMES = sorted(p.stem for p in FIXTURES.glob("*.jsonl"))


def _requests(name: str) -> list[str]:
    """The fixture's requests, one per span (resource and scope kept): a file per span is what a per-span
    exporter leaves, and gives several hundred files."""
    out = []
    for line in (FIXTURES / f"{name}.jsonl").read_text().splitlines():
        if not line.strip():
            continue
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    out.append(json.dumps({"resourceSpans": [dict(rs, scopeSpans=[dict(ss, spans=[span])])]},
                                          separators=(",", ":")))
    return out


def _alone_spy(monkeypatch) -> list[str]:
    """The files loaded on their own (not in a batch), in order."""
    alone: list[str] = []
    real = sources.load_unit

    def spy(source, *args, **kwargs):
        alone.append(Path(source).name)
        return real(source, *args, **kwargs)
    monkeypatch.setattr(sources, "load_unit", spy)
    return alone


def _load_both(folder: Path, monkeypatch, pattern: str | None = None):
    """(batched, one by one, the files the batched load read on their own)."""
    src = [str(folder / pattern)] if pattern else [str(folder)]
    with monkeypatch.context() as m:
        alone = _alone_spy(m)
        batched = load_sources(src)
    with monkeypatch.context() as m:
        m.setattr(_otlp_batch, "BATCH_BYTES", 0)
        single = load_sources(src)
    return batched, single, alone


def _frame(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    if "source" in df.columns:
        df["source"] = df["source"].astype(str)
    return df


def _assert_same(a, b) -> None:
    for name in ("spans", "events", "links"):
        pd.testing.assert_frame_equal(_frame(getattr(a, name)), _frame(getattr(b, name)), check_dtype=True,
                                      obj=name)
    assert a.spans["source"].dtype == b.spans["source"].dtype == "category"
    assert [i.to_dict() for i in a.quality.issues] == [i.to_dict() for i in b.quality.issues]
    assert (a.quality.files, a.quality.lines) == (b.quality.files, b.quality.lines)
    assert a.sources == b.sources
    assert a.spellings == b.spellings


def _one_file_per_request(folder: Path) -> int:
    """Every fixture request in a file of its own (a few left without a final line break, a few with two
    requests, one with blank lines between); the number of files."""
    n = 0
    for name in NAMES:
        reqs = _requests(name)
        i = 0
        while i < len(reqs):
            take = 2 if i % 7 == 3 else 1
            text = "\n".join(reqs[i:i + take])
            if i % 5 == 1:
                text += "\n"
            elif i % 11 == 2:
                text = text.replace("\n", "\n\n") + "\n\n"
            # (the rest end without a line break)
            (folder / f"{name}-{i:04d}.jsonl").write_text(text)
            n += 1
            i += take
    return n


def test_the_real_instrumentations_requests_one_per_file_are_read_in_batches_with_what_each_file_gives(
        tmp_path, monkeypatch):
    n = _one_file_per_request(tmp_path)
    batched, single, alone = _load_both(tmp_path, monkeypatch)
    assert alone == []                       # every file went in a batch
    assert n > 100 and batched.quality.files == n and len(batched.sources) == n
    _assert_same(batched, single)
    # each span names the file it came from
    for src, spans in batched.spans.groupby("source", observed=True):
        one = load_sources([str(src)])
        assert sorted(spans["span_id"]) == sorted(one.spans["span_id"])


def test_many_batches_give_what_one_gives(tmp_path, monkeypatch):
    _one_file_per_request(tmp_path)
    one, _, _ = _load_both(tmp_path, monkeypatch)
    monkeypatch.setattr(_otlp_batch, "BATCH_BYTES", 20_000)      # a few files per batch
    many, _, alone = _load_both(tmp_path, monkeypatch)
    assert alone == [] or len(alone) < len(many.sources) // 10   # a batch of one file is read on its own
    _assert_same(many, one)


def _protobuf_spelling(line: str) -> str:
    """The request as protobuf's json_format writes it (base64 ids, enum names), from its canonical JSON."""
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    msg = json_format.Parse(line, ExportTraceServiceRequest(), ignore_unknown_fields=True)
    return json.dumps(json_format.MessageToDict(msg))


def _with_attribute(line: str, key: str, value: dict) -> str:
    req = json.loads(line)
    span = req["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span.setdefault("attributes", []).append({"key": key, "value": value})
    return json.dumps(req)


def _hostile_folder(folder: Path) -> dict[str, str | bytes]:
    """Good files with odd and bad ones among them; {name: content} of those that cannot join a batch (written as
    aNNN-name, among the good files)."""
    reqs = [r for name in NAMES for r in _requests(name)]
    good = iter(reqs)
    for i in range(60):
        (folder / f"a{i:03d}-good.jsonl").write_text(next(good) + "\n")
    span_line = _requests(NAMES[0])[0]
    first_span = json.loads(span_line)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    odd = {
        "b-bad-json.jsonl": next(good) + "\n{\"resourceSpans\": [\n",
        "b-null-line.jsonl": next(good) + "\nnull\n",
        "b-unset-time.jsonl": span_line.replace(f'"startTimeUnixNano":"{first_span["startTimeUnixNano"]}"',
                                                '"startTimeUnixNano":"0"', 1) + "\n",
        "b-wrong-type.jsonl": span_line.replace('"name":', '"name":{"x":1},"_n":', 1) + "\n",
        "b-protobuf-spelling.jsonl": _protobuf_spelling(next(good)) + "\n",
        "b-empty.jsonl": "",
        "b-bom.jsonl": "\ufeff" + next(good) + "\n",
        "b-pretty.json": json.dumps(json.loads(next(good)), indent=2) + "\n",
        "b-array.json": "[" + next(good) + "]\n",
        "b-transcript.json": json.dumps([{"messages": [{"role": "user", "content": "hi"},
                                                       {"role": "assistant", "content": "hello"}]}]),
    }
    cut = gzip.compress(("\n".join(next(good) for _ in range(3)) + "\n").encode())
    odd["b-gzip-cut.jsonl.gz"] = cut[:len(cut) // 2]
    # spread among the good files (a bad file beside bad ones would be read alone whatever the batch checks)
    for k, (name, text) in enumerate(odd.items()):
        path = folder / f"a{5 * k + 2:03d}-{name[2:]}"
        path.write_bytes(text) if isinstance(text, bytes) else path.write_text(text)
    # one attribute key, of a different kind in each file: the batch and the concatenation must agree
    for i, value in enumerate(({"intValue": "7"}, {"stringValue": "seven"}, {"doubleValue": 7.5},
                               {"boolValue": True}, {"intValue": "9"})):
        (folder / f"c{i}-custom.jsonl").write_text(_with_attribute(next(good), "app.custom", value) + "\n")
    for i in range(40):
        (folder / f"d{i:03d}-good.jsonl").write_text(next(good) + "\n")
    return odd


def test_odd_and_hostile_files_among_good_ones_cost_only_themselves(tmp_path, monkeypatch):
    odd = _hostile_folder(tmp_path)
    batched, single, alone = _load_both(tmp_path, monkeypatch)
    _assert_same(batched, single)
    # each odd file was read on its own, and its issues name it; the good ones went in batches, but for a few
    # beside a bad one (cutting a batch in halves leaves a file alone)
    good_alone = [a for a in alone if "good" in a]
    assert len(good_alone) <= len(odd), alone
    assert {"bad-json.jsonl", "null-line.jsonl", "unset-time.jsonl", "wrong-type.jsonl",
            "protobuf-spelling.jsonl", "pretty.json", "array.json", "gzip-cut.jsonl.gz"} <= {a[5:] for a in alone}
    named = {(i.kind, Path(i.source).name[5:]) for i in batched.quality.issues}
    assert ("empty_file", "empty.jsonl") in named
    assert ("careful_path", "bad-json.jsonl") in named, named
    assert ("bad_span", "unset-time.jsonl") in named, named
    assert not any("good" in src for _, src in named), named
    custom = batched.spans.loc[batched.spans["app.custom"].notna(), ["source", "app.custom"]]
    # (written as one file's load writes them: true, not Python's True)
    assert sorted(custom["app.custom"].astype(str)) == ["7", "7.5", "9", "seven", "true"]


def test_small_gzip_files_are_read_in_batches_with_what_each_gives(tmp_path, monkeypatch):
    reqs = [r for name in NAMES for r in _requests(name)]
    for i, req in enumerate(reqs[:40]):
        data = (req + "\n").encode()
        if i % 2:
            (tmp_path / f"f{i:03d}.jsonl.gz").write_bytes(gzip.compress(data))
        else:
            (tmp_path / f"f{i:03d}.jsonl").write_bytes(data)
    batched, single, alone = _load_both(tmp_path, monkeypatch)
    assert alone == []
    _assert_same(batched, single)
    assert len(batched.sources) == 40


def test_a_gzip_file_that_inflates_past_a_small_file_is_read_on_its_own(tmp_path, monkeypatch):
    reqs = [r for name in NAMES for r in _requests(name)]
    for i, req in enumerate(reqs[:6]):
        (tmp_path / f"f{i:03d}.jsonl").write_text(req + "\n")
    big = ((reqs[0] + "\n") * (_otlp_batch.SMALL_BYTES // len(reqs[0]) + 2)).encode()
    (tmp_path / "f003-big.jsonl.gz").write_bytes(gzip.compress(big))
    batched, single, alone = _load_both(tmp_path, monkeypatch)
    assert alone == ["f003-big.jsonl.gz"]
    _assert_same(batched, single)


def test_a_pattern_naming_small_files_batches_them_too(tmp_path, monkeypatch):
    _hostile_folder(tmp_path)
    batched, single, alone = _load_both(tmp_path, monkeypatch, pattern="*-good.jsonl")
    assert alone == [] and len(batched.sources) == 100
    _assert_same(batched, single)


def test_the_report_of_a_folder_is_the_same_batched_or_not(tmp_path, monkeypatch):
    _hostile_folder(tmp_path)
    _one_file_per_request(tmp_path)

    def report() -> dict:
        res = CliRunner().invoke(cli, ["report", str(tmp_path), "--format", "json"])
        assert res.exit_code == 0, res.output
        out = json.loads(res.output)
        out.pop("generated_at")
        return out
    batched = report()
    monkeypatch.setattr(_otlp_batch, "BATCH_BYTES", 0)
    assert report() == batched
    assert batched["overview"]["runs"] > 50 and batched["data_quality"]["issues"]
    assert len(batched["read"]["spellings"]) > 500


@pytest.mark.parametrize("limit", ["AGENTOBS_MAX_LINE_BYTES"])
def test_a_line_limit_below_a_file_keeps_its_files_out_of_batches(tmp_path, monkeypatch, limit):
    """A file larger than the line limit may hold a line over it, which only its own load counts."""
    for i, req in enumerate(_requests(NAMES[0])[:6]):
        (tmp_path / f"{i}.jsonl").write_text(req + "\n")
    smallest = min(p.stat().st_size for p in tmp_path.iterdir())
    monkeypatch.setenv(limit, str(smallest - 2))       # (each file is one line and its line break)
    batched, single, alone = _load_both(tmp_path, monkeypatch)
    assert len(alone) == 6
    assert batched.quality.count("line_too_long") == 6
    _assert_same(batched, single)


def _old_scope_name(line: str) -> str:
    """The request with instrumentationLibrarySpans/instrumentationLibrary (OTLP before 0.15) for scopeSpans."""
    req = json.loads(line)
    for rs in req["resourceSpans"]:
        rs["instrumentationLibrarySpans"] = [{"instrumentationLibrary": ss.get("scope", {}), "spans": ss["spans"]}
                                             for ss in rs.pop("scopeSpans")]
    return json.dumps(req)


def _two_resources(line: str) -> str:
    """The request's spans under two resources (the second a copy of the first with another service name)."""
    req = json.loads(line)
    rs = req["resourceSpans"][0]
    other = json.loads(json.dumps(rs))
    other["resource"]["attributes"] = [a for a in other["resource"].get("attributes", [])
                                       if a["key"] != "service.name"] + [
        {"key": "service.name", "value": {"stringValue": "second"}}]
    for ss in other["scopeSpans"]:
        for span in ss["spans"]:
            span["spanId"] = span["spanId"][::-1]
            span.pop("parentSpanId", None)
    req["resourceSpans"].append(other)
    return json.dumps(req)


LAYOUTS = {
    "CRLF line breaks": lambda lines: "\r\n".join(lines) + "\r\n",
    "blank and white-space lines between": lambda lines: "\n  \n".join(lines) + "\n\t\n",
    "saved Jaeger API v3 answers": lambda lines: "".join(json.dumps({"result": json.loads(x)}) + "\n"
                                                         for x in lines),
    "instrumentationLibrarySpans": lambda lines: "".join(_old_scope_name(x) + "\n" for x in lines),
    "two resources per request": lambda lines: "".join(_two_resources(x) + "\n" for x in lines),
}


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_other_layouts_and_spellings_of_small_files_give_what_each_file_gives(tmp_path, monkeypatch, name):
    reqs = [r for n in NAMES for r in _requests(n)][:120]
    for i in range(0, len(reqs), 3):
        (tmp_path / f"{i:04d}.jsonl").write_text(LAYOUTS[name](reqs[i:i + 3]))
    batched, single, alone = _load_both(tmp_path, monkeypatch)
    assert len(batched.spans) >= len(reqs) and not any(i.kind == "careful_path" for i in batched.quality.issues)
    _assert_same(batched, single)
    assert len(alone) < 5, alone                  # these are batched, not read one by one
