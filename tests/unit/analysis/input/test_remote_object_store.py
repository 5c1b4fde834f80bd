"""Object-store sources (issue 14): the collector's rotated archive in an S3-compatible store started on 127.0.0.1
by the test run (moto's server, tests/objectstore.py), read with ``s3://`` URLs, folders and globs alike, gives the
same report as the same files on disk; every problem reaching the store is one line from the CLI (exit 2).

The archive is laid out as the collector's file exporter leaves it: rotated ``traces-<timestamp>.jsonl`` files (one
of them gzip, as an operator compresses old ones) beside the live ``traces.jsonl``, with a trace cut across two
files and a line written twice.
"""
from __future__ import annotations

import gzip
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from objectstore import s3_server, s3_storage_options  # noqa: F401 - session fixtures

from agentobs.analysis.input import remote
from agentobs.analysis.report.engine import analyze
from agentobs.cli.main import cli
from agentobs.domain.population import simulate
from agentobs.telemetry import configure

fsspec = pytest.importorskip("fsspec")
pytest.importorskip("s3fs")

ROTATED = ["traces-2026-11-28T09-14-03.118.jsonl", "traces-2026-11-29T17-40-55.902.jsonl.gz",
           "traces-2026-11-30T08-02-31.450.jsonl"]
LIVE = "traces.jsonl"
PREFIX = "archive"


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    """The folder, on disk: the simulation's lines cut into the rotated files and the live one."""
    work = tmp_path_factory.mktemp("objstore")
    whole = work / "all.jsonl"
    tel = configure(traces_out=whole)
    simulate(240, seed=14, observers=lambda: [tel.observer()])
    tel.shutdown()
    lines = whole.read_bytes().splitlines(keepends=True)
    assert len(lines) >= 8
    folder = work / PREFIX
    folder.mkdir()
    cuts = [0, len(lines) // 4, len(lines) // 2, 3 * len(lines) // 4, len(lines)]
    where: dict[str, set[str]] = {}
    for name, (a, b) in zip([*ROTATED, LIVE], itertools.pairwise(cuts), strict=True):
        part = b"".join(lines[a:b])
        if name == LIVE:
            part += lines[a]                           # a batch the exporter wrote twice
        (folder / name).write_bytes(gzip.compress(part) if name.endswith(".gz") else part)
        for line in lines[a:b]:
            for rs in json.loads(line)["resourceSpans"]:
                for ss in rs["scopeSpans"]:
                    for s in ss["spans"]:
                        where.setdefault(s["traceId"], set()).add(name)
    assert any(len(files) > 1 for files in where.values()), "no trace is cut across files"
    return folder


@pytest.fixture(scope="module")
def uploaded(archive, s3_server):  # noqa: F811 - the fixture
    fs = fsspec.filesystem("s3", skip_instance_cache=True, **s3_server.storage_options)
    for f in sorted(archive.iterdir()):
        fs.pipe(f"{s3_server.bucket}/{PREFIX}/{f.name}", f.read_bytes())
    return f"s3://{s3_server.bucket}/{PREFIX}/"


@pytest.fixture
def s3_env(monkeypatch, s3_server):  # noqa: F811 - the fixture
    """The standard AWS variables, pointing at the local server (and nothing else of AWS_* from outside)."""
    for k in list(os.environ):
        if k.startswith("AWS_"):
            monkeypatch.delenv(k)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    for k, v in s3_server.env.items():
        monkeypatch.setenv(k, v)
    return s3_server.env


def comparable(report: dict[str, Any], base: str) -> str:
    """The report's JSON without generated_at and sources, files named relative to their folder or prefix."""
    out = {k: v for k, v in report.items() if k not in ("generated_at", "sources")}
    text = json.dumps(out, sort_keys=True, default=str)
    return text.replace(json.dumps(base)[1:-1], "<archive>/")


def cli_json(*args: str) -> dict[str, Any]:
    done = CliRunner().invoke(cli, [*args, "--format", "json"])
    assert done.exit_code == 0, (done.output, done.stderr)
    return json.loads(done.stdout)


# -- the same answer -------------------------------------------------------------------------------------------------

def test_the_archive_in_the_object_store_gives_the_local_report(archive, uploaded, s3_env):
    local = analyze([str(archive)]).to_dict()
    stored = analyze([uploaded]).to_dict()
    assert stored["sources"] == [uploaded]
    assert stored["data_quality"]["files"] == 4 and stored["overview"]["runs"] == 240
    kinds = {i["kind"] for i in stored["data_quality"]["issues"]}
    assert "duplicate_span" in kinds                                         # the line written twice, both ways
    assert {i["source"] for i in stored["data_quality"]["issues"]} <= {uploaded + n for n in [*ROTATED, LIVE]}
    assert comparable(stored, uploaded) == comparable(local, str(archive) + "/")


def test_the_cli_reads_the_store_with_each_analysis_command(archive, uploaded, s3_env, tmp_path):
    assert comparable(cli_json("report", uploaded), uploaded) == \
        comparable(cli_json("report", str(archive)), str(archive) + "/")
    assert comparable(cli_json("caps", uploaded), uploaded) == \
        comparable(cli_json("caps", str(archive)), str(archive) + "/")
    for src, name in ((uploaded, "s3.csv"), (str(archive), "local.csv")):
        done = CliRunner().invoke(cli, ["runs", src, "--out", str(tmp_path / name)])
        assert done.exit_code == 0, done.output
    assert (tmp_path / "s3.csv").read_bytes() == (tmp_path / "local.csv").read_bytes()
    # a trace cut across two files (one of them gzip), shown whole
    spans = analyze([str(archive)]).spans
    cut = spans.groupby("trace_id")["source"].nunique()
    tid = str(cut[cut > 1].index[0])
    shown_s3 = CliRunner().invoke(cli, ["trace", tid, uploaded])
    shown_local = CliRunner().invoke(cli, ["trace", tid, str(archive)])
    assert shown_s3.exit_code == 0 and shown_s3.output == shown_local.output
    assert (spans["trace_id"] == tid).sum() >= 2


def test_globs_in_urls_select_the_same_files(archive, uploaded, s3_env):
    gz = analyze([uploaded + "*.jsonl.gz"]).to_dict()
    assert gz["data_quality"]["files"] == 1
    assert comparable(gz, uploaded) == comparable(analyze([str(archive / "*.jsonl.gz")]).to_dict(), str(archive) + "/")
    rotated = remote.expand(uploaded + "traces-*")
    assert rotated == [uploaded + n for n in sorted(ROTATED)]
    bucket_wide = remote.expand(f"s3://{uploaded.split('/')[2]}/**/traces.jsonl")
    assert bucket_wide == [uploaded + LIVE]


def test_a_file_url_is_read_like_the_folder(archive):
    url = archive.as_uri() + "/"
    assert comparable(analyze([url]).to_dict(), url) == \
        comparable(analyze([str(archive)]).to_dict(), str(archive) + "/")


def test_a_schemes_case_does_not_matter(archive, uploaded, s3_env):
    """RFC 3986: FILE:// and S3:// are file:// and s3:// (fsspec's filesystems take a scheme off only in lower case:
    FILE:///x was looked for as a relative path, S3://b/x as the bucket "S3:")."""
    url = archive.as_uri() + "/"
    upper = "FILE" + url[len("file"):]
    assert comparable(analyze([upper]).to_dict(), url) == comparable(analyze([url]).to_dict(), url)
    assert remote.expand("S3" + uploaded[len("s3"):] + LIVE) == [uploaded + LIVE]
    assert remote.expand("File" + url[len("file"):] + LIVE) == [url + LIVE]


def test_the_s3_specific_endpoint_variable_is_honoured(archive, uploaded, s3_env, monkeypatch):
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", s3_env["AWS_ENDPOINT_URL"])
    assert remote.expand(uploaded + LIVE) == [uploaded + LIVE]


def test_objects_as_the_collectors_s3_exporter_writes_them(archive, s3_server, s3_env):  # noqa: F811
    """The contrib awss3 exporter (docs/scale.md) writes one OTLP JSON request per object, without a final newline,
    gzip-compressed, under time partitions: a prefix of them reads like the archive's lines."""
    fs = fsspec.filesystem("s3", skip_instance_cache=True, **s3_server.storage_options)
    lines = b"".join((archive / n).read_bytes() for n in (ROTATED[0], ROTATED[2])).splitlines()
    for i, line in enumerate(lines):
        fs.pipe(f"{s3_server.bucket}/exported/year=2026/month=11/day=30/hour={i:02d}/traces_{i}.json.gz",
                gzip.compress(line))
    (archive.parent / "two.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    stored = analyze([f"s3://{s3_server.bucket}/exported/"]).to_dict()
    local = analyze([str(archive.parent / "two.jsonl")]).to_dict()
    assert stored["data_quality"]["files"] == len(lines) and stored["overview"]["spans"] > 0
    for part in ("overview", "signatures", "percentiles", "caps"):
        assert json.dumps(stored[part], sort_keys=True) == json.dumps(local[part], sort_keys=True), part


def test_the_input_limits_hold_for_objects_too(uploaded, s3_server, s3_env, monkeypatch):  # noqa: F811
    from agentobs.analysis.input.limits import InputLimits
    from agentobs.analysis.otlp.load import load_file
    from agentobs.errors import InputError

    fs = fsspec.filesystem("s3", skip_instance_cache=True, **s3_server.storage_options)
    base = f"{s3_server.bucket}/limits"
    fs.pipe(f"{base}/bomb.jsonl.gz", gzip.compress(b"{}\n" * (2 << 20)))          # 6 MiB from a few KiB
    with pytest.raises(InputError, match="decompression bomb"):
        load_file(f"s3://{base}/bomb.jsonl.gz", limits=InputLimits(gzip_allowance_bytes=1 << 20, max_gzip_ratio=2))
    fs.pipe(f"{base}/long.jsonl", b'{"resourceSpans": [], "pad": "' + b"x" * 4096 + b'"}\n')
    monkeypatch.setenv("AGENTOBS_MAX_LINE_BYTES", "1K")
    q = analyze([f"s3://{base}/long.jsonl"]).to_dict()["data_quality"]
    assert [(i["kind"], i["source"]) for i in q["issues"]] == [("line_too_long", f"s3://{base}/long.jsonl")]


# -- one line for every problem --------------------------------------------------------------------------------------

def _fails(*args: str) -> str:
    done = CliRunner().invoke(cli, list(args))
    assert done.exit_code == 2, (done.exit_code, done.output, done.stderr)
    err = done.stderr.strip()
    assert err.startswith("agentobs: error: ") and "\n" not in err and "Traceback" not in done.output, err
    return err


@pytest.mark.parametrize("command", ["report", "caps", "trace"])
def test_a_missing_bucket_is_one_line(uploaded, s3_env, command):
    args = [command, "0" * 32] if command == "trace" else [command]
    err = _fails(*args, "s3://no-such-bucket-anywhere/archive/")
    assert "s3://no-such-bucket-anywhere/archive/: not found" in err and "bucket" in err


def test_a_missing_key_or_prefix_is_one_line(uploaded, s3_env):
    assert "not found" in _fails("report", uploaded + "traces-1999-01-01.jsonl")
    assert "not found" in _fails("report", uploaded.replace(PREFIX, "nothing-here"))
    assert "the pattern matches no file" in _fails("report", uploaded + "*.parquet")


def test_wrong_credentials_are_one_line_and_never_printed(uploaded, s3_env, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret-0123456789")
    err = _fails("report", uploaded)
    assert "access denied" in err and "AWS_ACCESS_KEY_ID" in err
    assert "not-the-secret-0123456789" not in err
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAUNKNOWNKEY000000")
    assert "access denied" in _fails("caps", uploaded)


def test_credentials_in_a_url_are_never_shown(uploaded, s3_env):
    url = uploaded.replace("s3://", "s3://someone:hunter2-secret@")
    err = _fails("report", url)
    assert "hunter2-secret" not in err and "someone" not in err
    assert remote.redacted_url(url) == uploaded and remote.redacted_url("s3://b/k?versionId=abc") == "s3://b/k?versionId=***"


def test_an_unknown_scheme_is_one_line():
    assert "unknown scheme nosuch://" in _fails("report", "nosuch://bucket/archive/")


@pytest.mark.parametrize("blocked", ["s3fs", "fsspec"])
def test_a_missing_package_says_what_to_install(blocked):
    """In a process of its own where the package cannot be imported, as on an install without agentobs[s3]."""
    code = (f"import sys; sys.modules[{blocked!r}] = None; sys.argv = ['agentobs', 'report', 's3://bucket/archive/'];"
            "from agentobs.cli.main import main; main()")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == "agentobs: error: install agentobs[s3] to read s3:// sources"
