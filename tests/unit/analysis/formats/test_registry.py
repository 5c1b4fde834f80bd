"""formats.registry: the closed list of readers, the one place a file's first bytes choose its reader."""
from __future__ import annotations

import ast
import gzip
import json
from pathlib import Path

import pytest
from locations import ROOT, SHARED, TESTS

from agentobs.analysis.formats import FORMAT_NAMES, READERS, reader_for, reader_of
from agentobs.analysis.formats.convert import CONVERTED
from agentobs.analysis.load.sources import load_one

DATA = TESTS / "data"
ZIPKIN = "Zipkin JSON (API v2)"
JAEGER_UI = "Jaeger JSON (UI download, API before v3)"

# files of every format, real ones where the repository keeps them, and the reader each must get
CASES = [
    (DATA / "zipkin" / "spans.json", ZIPKIN),
    (DATA / "zipkin" / "traces.json.gz", ZIPKIN),
    (DATA / "jaeger_ui" / "trace_json.json", JAEGER_UI),
    (DATA / "collector" / "proto.pb", "OTLP protobuf (the collector's file exporter, format: proto)"),
    (DATA / "collector" / "json.jsonl.zst", "zstd (the collector's file exporter, compression: zstd)"),
    (DATA / "collector" / "json.jsonl", "otlp"),
    (TESTS / "dialects" / "fixtures" / "agno.jsonl", "otlp"),
]


def test_the_list_is_closed_ordered_and_ends_with_otlp_which_takes_anything():
    names = [r.name for r in READERS]
    assert len(names) == len(set(names))
    assert names[-1] == "otlp" and names[-2] == "transcripts"
    assert set(names[:-2]) == FORMAT_NAMES == {m.NAME for m in CONVERTED}
    assert reader_for(b"").name == "otlp"
    assert reader_for(b"\x00\x01 whatever").name == "otlp"       # the OTLP loader says what it is


@pytest.mark.parametrize(("path", "name"), CASES, ids=lambda v: v.name if isinstance(v, Path) else None)
def test_each_real_file_gets_its_reader(path, name):
    assert reader_of(path).name == name


def test_tau2_results_are_transcripts():
    files = sorted((SHARED / "data").glob("tau2/*.json"))
    if not files:
        pytest.skip("the published tau2-bench runs are not on this machine")
    assert {reader_of(p).name for p in files} == {"transcripts"}


def test_arrays_and_objects_are_told_apart_by_what_they_name():
    assert reader_for(b'[{"messages": [{"role": "user", "content": "resourceSpans"}]}]').name == "transcripts"
    assert reader_for(b' \n[\n  {\n    "resourceSpans": []\n  }\n]\n').name == "otlp"
    assert reader_for(b'[]\n{"resourceSpans": []}\n').name == "otlp"            # JSON lines after a first ``[]``
    assert reader_for(b'{"info": {}, "simulations": []}').name == "transcripts"
    assert reader_for(b'{"resourceSpans": [], "info": 1}').name == "otlp"
    assert reader_for(b'{"something": "else"}').name == "otlp"


def test_a_byte_order_mark_is_not_part_of_the_head():
    zipkin = (DATA / "zipkin" / "spans.json").read_bytes()[:8192]
    assert reader_for(b"\xef\xbb\xbf" + zipkin).name == ZIPKIN
    assert reader_for(b"\xef\xbb\xbf" + b'[{"messages": []}]').name == "transcripts"


def test_utf16_text_goes_to_otlp_which_says_what_to_do(tmp_path):
    p = tmp_path / "runs.json"
    p.write_bytes(json.dumps([{"messages": []}]).encode("utf-16-le"))
    assert reader_of(p).name == "otlp"
    quality = load_one(p).quality
    assert quality.count("unknown_format") == 1
    assert "UTF-16" in str(quality.issues[0].examples)


def test_gzip_is_looked_into_and_an_unreadable_file_is_otlps(tmp_path):
    p = tmp_path / "runs.json.gz"
    p.write_bytes(gzip.compress(json.dumps([{"messages": [{"role": "user", "content": "hi"}]}]).encode()))
    assert reader_of(p).name == "transcripts"
    missing = tmp_path / "gone.json"
    assert reader_of(missing).name == "otlp"
    assert load_one(missing).quality.count("unreadable") == 1


def test_load_one_is_the_chosen_readers_load(tmp_path):
    for path, _ in CASES[:5]:
        a, b = load_one(path), reader_of(path).load(path)
        assert len(a.spans) == len(b.spans) > 0, path
        assert a.spellings == b.spellings


def test_no_module_outside_formats_asks_a_format_whether_the_head_is_its_own():
    """Sniffing happens in the registry: no module outside ``formats`` calls a format's ``matches`` or walks the
    list of converted formats."""
    formats = {m.__name__.rsplit(".", 1)[-1] for m in CONVERTED}
    callers = []
    for path in (ROOT / "agentobs").rglob("*.py"):
        if path.parent.name == "formats":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Attribute | ast.Name):
                continue
            owner = node.value if isinstance(node, ast.Attribute) else None
            name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
            own = node.attr if isinstance(node, ast.Attribute) else node.id
            if (own == "matches" and name in formats) or own == "CONVERTED":
                callers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert callers == []
