"""The Dask engine (issue 14, points 1, 3 and 4): the same report as the local engine, on a real cluster.

A ``distributed.LocalCluster`` of two worker processes on 127.0.0.1 serves most tests; one test starts a scheduler
and a worker as separate processes (``dask scheduler``, ``dask worker``) and drives the CLI against them with
``--scheduler``, another through Dask's own ``DASK_SCHEDULER_ADDRESS``. Equality is field for field on the JSON
report (``generated_at`` aside), and on the runs CSV. Object-store sources are tested by the object-store tests of
the sources (issue 14, point 2); every source the engine reads goes through the same ``load_file``.
"""
from __future__ import annotations

import copy
import dataclasses
import gzip
import json
import os
import random
import socket
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from locations import ROOT, TAU2

distributed = pytest.importorskip("distributed")

from agentobs.analysis.report.dask import analyze_dask  # noqa: E402
from agentobs.analysis.report.dask import cluster as dask_cluster  # noqa: E402
from agentobs.analysis.report.dask.pieces import bucket_of  # noqa: E402
from agentobs.analysis.report.dask.settings import DaskSettings  # noqa: E402
from agentobs.analysis.report.engine import analyze  # noqa: E402
from agentobs.analysis.report.summary import Options  # noqa: E402
from agentobs.cli.main import cli  # noqa: E402
from agentobs.domain.population import simulate  # noqa: E402
from agentobs.domain.scenarios import SEED000, SEED000_SPECS, SEED004, crash_and_recover  # noqa: E402
from agentobs.telemetry import configure  # noqa: E402

FIXTURES = ROOT / "tests" / "dialects" / "fixtures"
# 6 random splits by default (each runs three analyses), 25 with `make test-full`
EXAMPLES = max(6, int(os.environ.get("AGENTOBS_PROPERTY_EXAMPLES", "2000")) // 400)


# -- data ------------------------------------------------------------------------------------------------------

def _write(path: Path, emit) -> Path:
    tel = configure(traces_out=path)
    emit(tel)
    tel.shutdown()
    return path


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("dask-data")
    _write(d / "scenarios.jsonl", lambda tel: [fn([tel.observer()]) for fn in (*SEED000.values(), *SEED004.values())])
    _write(d / "population.jsonl", lambda tel: simulate(160, seed=11, observers=lambda: [tel.observer()],
                                                        start_ns=1_780_000_000 * 10**9))
    _write(d / "archive.jsonl", lambda tel: simulate(60, seed=3, observers=lambda: [tel.observer()],
                                                     start_ns=1_780_000_000 * 10**9))
    _write(d / "crash.jsonl", lambda tel: crash_and_recover(SEED000_SPECS[0], "after_tool", observers=[tel.observer()]))
    return d


def _spans_of(line: str) -> list[dict]:
    return [s for rs in json.loads(line)["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]


def _explode(line: str) -> list[str]:
    """One OTLP JSON line per span (resource and scope kept), so the spans of one trace can go to other files."""
    out = []
    for rs in json.loads(line)["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                out.append(json.dumps({"resourceSpans": [dict(rs, scopeSpans=[dict(ss, spans=[s])])]}))
    return out


def _lines(path: Path) -> list[str]:
    return [x for x in path.read_text().splitlines() if x.strip()]


# -- comparing -------------------------------------------------------------------------------------------------

def _json(report) -> dict:
    d = report.to_dict()
    d.pop("generated_at")
    return json.loads(json.dumps(d, default=str))


def _first_difference(a, b, path="report"):
    if type(a) is not type(b):
        return f"{path}: {a!r:.200} != {b!r:.200}"
    if isinstance(a, dict):
        if list(a) != list(b):
            return f"{path}: keys {list(a)} != {list(b)}"
        return next((d for k in a if (d := _first_difference(a[k], b[k], f"{path}.{k}"))), None)
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} items != {len(b)}: {a!r:.300} != {b!r:.300}"
        pairs = enumerate(zip(a, b, strict=True))
        return next((d for i, (x, y) in pairs if (d := _first_difference(x, y, f"{path}[{i}]"))), None)
    return None if a == b else f"{path}: {a!r:.200} != {b!r:.200}"


def assert_same(local, dask) -> None:
    a, b = _json(local), _json(dask)
    assert a == b, _first_difference(a, b)
    assert local.runs.astype(str).equals(dask.runs.astype(str))
    assert local.growth_series == dask.growth_series


@pytest.fixture(scope="module")
def cluster():
    """Two worker processes on 127.0.0.1, as the engine would start them, shared by the tests of this module."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address="127.0.0.1:0", memory_limit="2GiB") as c:
        yield DaskSettings(scheduler=c.scheduler_address, workers=2)


def both(sources, cluster, options=None, partitions=None):
    sources = [str(s) for s in sources]
    local = analyze(sources, options)
    return local, analyze_dask(sources, options, settings=cluster, partitions=partitions)


# -- the same report ---------------------------------------------------------------------------------------------

def test_seed_scenarios(data, cluster):
    local, dask = both([data / "scenarios.jsonl"], cluster, partitions=3)
    assert_same(local, dask)
    assert len(dask.runs) >= len(SEED000) + len(SEED004)
    assert {s["name"] for s in _json(dask)["signatures"] if s["runs"]} >= {"repeated_call", "context_growth"}


def test_seed_scenarios_with_a_success_attribute_and_a_root_span_segment(data, cluster):
    opt = Options(success_attr=("agentobs.stop_reason", "done"), segments=("agent", "model", "service_name"))
    local, dask = both([data / "scenarios.jsonl"], cluster, opt, partitions=4)
    assert_same(local, dask)
    assert "service_name" in dask.segments and set(dask.runs["label_source"]) == {"attribute"}


def test_simulated_population_with_a_labels_file(data, cluster, tmp_path):
    base = analyze([str(data / "population.jsonl")])
    labels = tmp_path / "labels.csv"
    picked = base.runs["run_id"].iloc[::3].tolist()
    labels.write_text("run_id,success\n" + "".join(f"{r},{i % 2 == 0}\n" for i, r in enumerate(picked))
                      + "no-such-run,true\n" + f"{picked[0]},false\n"       # a conflict: picked[0] unlabelled
                      + "".join(f"{t.upper()},true\n" for t in base.runs["trace_ids"].iloc[1][:1]))   # any case
    for opt in (None, Options(labels=str(labels), target=0.05)):
        local, dask = both([data / "population.jsonl"], cluster, opt)
        assert_same(local, dask)
    assert dask.quality.count("unmatched_label") == 1 and dask.quality.count("unlabelled_run") > 0
    assert dask.quality.count("conflicting_label") == 1
    by_run = dask.runs.set_index("run_id")["success"]
    assert pd.isna(by_run[picked[0]]) and by_run[base.runs["run_id"].iloc[1]] == True  # noqa: E712
    assert (dask.runs["resumes"] > 0).any(), "the population has resumed runs (segments joined by span links)"


def test_real_instrumentation_dialect_fixtures(cluster):
    files = sorted(FIXTURES.glob("*.jsonl"))
    assert len(files) >= 5
    local, dask = both(files, cluster, partitions=5)
    assert_same(local, dask)
    assert len(dask.derivation.dialects) >= 4


def test_a_crash_and_its_recovery_in_two_files(data, cluster, tmp_path):
    lines = [x for line in _lines(data / "crash.jsonl") for x in _explode(line)]
    traces = sorted({_spans_of(x)[0]["traceId"] for x in lines})
    assert len(traces) == 2
    # partitions for which the two traces hash to different buckets: only the task id brings them together
    n = next(k for k in range(2, 50) if len(set(bucket_of(traces, k))) == 2)
    for i, t in enumerate(traces):
        (tmp_path / f"segment-{i}.jsonl").write_text("".join(x + "\n" for x in lines if t in x))
    files = sorted(tmp_path.glob("segment-*.jsonl"))
    local, dask = both(files, cluster, partitions=n)
    assert_same(local, dask)
    aborted = dask.runs[dask.runs["status"] == "aborted"]
    assert len(aborted) == 1 and aborted["success"].isna().all(), "the recovered crash is not counted as a failure"


def test_a_resumed_task_cut_across_files_with_duplicates(data, cluster, tmp_path):
    lines = [x for line in _lines(data / "population.jsonl") for x in _explode(line)]
    by_trace: dict[str, list[str]] = {}
    for x in lines:
        by_trace.setdefault(_spans_of(x)[0]["traceId"], []).append(x)
    links = [(t, k["traceId"]) for t, xs in by_trace.items() for x in xs for s in _spans_of(x)
             for k in s.get("links", [])]
    assert links, "the population holds resumed segments"
    linked = {t for pair in links for t in pair}
    rng = random.Random(5)
    files = [tmp_path / f"part-{i}.jsonl" for i in range(4)]
    out = {f: [] for f in files}
    for i, x in enumerate(lines):
        out[files[i % 4] if _spans_of(x)[0]["traceId"] in linked else rng.choice(files)].append(x)
    out[files[0]] += lines[:25]                     # duplicated lines: the later copies are dropped and counted
    for f, xs in out.items():
        f.write_text("".join(x + "\n" for x in xs))
    gz = files[3].with_suffix(".jsonl.gz")             # one of them gzipped, as the collector may rotate them
    gz.write_bytes(gzip.compress(files[3].read_bytes()))
    files[3].unlink()
    files[3] = gz
    local, dask = both(files, cluster, partitions=6)
    assert_same(local, dask)
    assert dask.quality.count("duplicate_span") == 25


def test_data_quality_notes_of_all_partitions_are_merged(cluster, tmp_path):
    from bad_inputs import write_bad_folder
    folder = write_bad_folder(tmp_path)
    # negative counts in two files: check() drops them, per column, in every partition
    good = _lines(folder / "good.jsonl")
    for name, shift in (("neg-a.jsonl", "a1"), ("neg-b.jsonl", "b2")):
        spans = _spans_of(good[0])
        obj = json.loads(good[0])
        obj["resourceSpans"] = obj["resourceSpans"][:1]
        new = copy.deepcopy(spans)
        for s in new:
            s["traceId"] = shift * 16
            for a in s.get("attributes", []):
                if a["key"] in ("gen_ai.usage.input_tokens", "agentobs.steps"):
                    a["value"] = {"intValue": "-7"}
        obj["resourceSpans"][0]["scopeSpans"] = [dict(obj["resourceSpans"][0]["scopeSpans"][0], spans=new)]
        (folder / name).write_text(json.dumps(obj) + "\n")
    for parts in (2, 5):
        local, dask = both([folder], cluster, partitions=parts)
        assert_same(local, dask)
    kinds = {i.kind for i in dask.quality.issues}
    assert {"duplicate_span", "orphan_span", "missing_root", "negative_duration", "bad_value", "invalid_json",
            "empty_file", "unknown_format"} <= kinds
    assert dask.quality.count("bad_value") == local.quality.count("bad_value") > 0


def test_self_parents_parent_cycles_unset_times_and_sums_beyond_64_bits_give_the_local_report(cluster, tmp_path):
    """check() breaks a parent cycle at its agent span and derive_runs leaves a sum beyond 64 bits null, both with a
    bad_value note, in every partition; a span that is its own parent, or has a time of 0 or before 1970, is the
    loader's note."""
    from bot_runs import _bot_file, _bot_run
    calls = _bot_run("3" * 32)[1:]
    calls[0]["parentSpanId"], calls[1]["parentSpanId"] = "c" * 16, "b" * 16
    files = [_bot_file(tmp_path, _bot_run("1" * 32, root_parent="a" * 16), name="self.jsonl"),
             _bot_file(tmp_path, _bot_run("2" * 32, root_parent="b" * 16), _bot_run("4" * 32, root_parent="c" * 16),
                       name="cycles.jsonl"),
             _bot_file(tmp_path, calls, _bot_run("5" * 32, chat_start=0), _bot_run("7" * 32, root_start=-5),
                       name="calls.jsonl"),
             _bot_file(tmp_path, _bot_run("8" * 32, tokens=2 ** 62), _bot_run("6" * 32, tokens=2 ** 62),
                       _bot_run("9" * 32), name="big.jsonl")]
    for parts in (1, 3, 6):
        local, dask = both(files, cluster, partitions=parts)
        assert_same(local, dask)
    assert len(dask.runs) == 8
    by_source = {(i.kind, Path(i.source).name): (i.count, i.examples) for i in dask.quality.issues}
    assert by_source[("bad_value", "cycles.jsonl")][0] == 2 and by_source[("parent_cycle", "calls.jsonl")][0] == 2
    assert by_source[("bad_value", "self.jsonl")][0] == 1 and by_source[("bad_span", "calls.jsonl")][0] == 2
    count, examples = by_source[("bad_value", "big.jsonl")]          # two columns of two runs, in run id order
    assert count == 4 and [e.split(":")[0] for e in examples] == [f"run {'6' * 32}"] * 2 + [f"run {'8' * 32}"]
    assert dask.runs.set_index("run_id").loc["9" * 32, "tokens"] == 202


def test_token_counts_that_are_negative_or_no_number_give_the_local_notes(cluster, tmp_path):
    """derive_runs counts a dialect's negative or non-numeric token count or cost as bad_value; the partitions
    lost those notes (the report said 'No problems found' on the cluster), now they are merged in the local order.
    The files share span ids: small files read as one batch ranked their tied duplicate_span counts by file name,
    not in input order as the local engine does."""
    fuzz = ROOT / "tests" / "data" / "fuzz"
    files = [fuzz / n for n in ("langfuse_usage_negative.jsonl", "openinference_token_counts_not_numbers.jsonl",
                                "mlflow_token_usage_negative.jsonl", "langfuse_usage_not_numbers.jsonl")]
    for parts in (1, 2, 4):
        local, dask = both(files, cluster, partitions=parts)
        assert_same(local, dask)
    # the later files' copies of the first file's spans are dropped: the notes left are on the spans kept
    assert [(i.kind, Path(i.source).name, i.count) for i in dask.quality.issues] == [
        ("duplicate_span", files[1].name, 2), ("duplicate_span", files[2].name, 2),
        ("duplicate_span", files[3].name, 2), ("bad_value", files[1].name, 1), ("bad_value", files[0].name, 3)]


def test_runs_lacking_the_success_attribute_are_noted_as_locally(cluster, tmp_path):
    from attr_runs import _attr_runs
    path = _attr_runs(tmp_path)
    for parts in (1, 3):
        local, dask = both([path], cluster, Options(success_attr=("eval.first", "yes")), partitions=parts)
        assert_same(local, dask)
    assert any(n.startswith("2 runs have no eval.first") for n in dask.derivation.sentences())




@pytest.mark.skipif(not TAU2.is_dir(), reason="tau2 transcripts not present")
def test_transcripts_beside_otlp_files(data, cluster):
    local, dask = both([TAU2, data / "crash.jsonl"], cluster, partitions=3)
    assert_same(local, dask)
    assert set(dask.runs["source_kind"]) == {"transcript", "agentobs"}


def test_other_formats_and_a_folder_with_a_broken_link_give_the_local_report(data, cluster, tmp_path):
    """Jaeger's own JSON, Zipkin JSON (an array of traces, gzip), and a folder holding a dangling link (a
    source_error, counted as the local engine counts it): the engine loads every input with the local engine's
    sniffing (sources.load_units)."""
    folder = tmp_path / "traces"
    folder.mkdir()
    (folder / "jaeger.json").write_bytes((ROOT / "tests" / "data" / "jaeger_ui" / "download_results.json").read_bytes())
    (folder / "zipkin.json.gz").write_bytes((ROOT / "tests" / "data" / "zipkin" / "traces.json.gz").read_bytes())
    (folder / "gone.jsonl").symlink_to(tmp_path / "no-such-file.jsonl")
    z = zlib.compressobj(9, zlib.DEFLATED, 31)     # a gzip bomb, 260 KiB to 260 MiB: counted, the rest read
    (folder / "bomb.jsonl.gz").write_bytes(z.compress(b'{"resourceSpans": []}\n')
                                           + b"".join(z.compress(b" " * (1 << 20)) for _ in range(260)) + z.flush())
    local, dask = both([folder, data / "crash.jsonl"], cluster, partitions=3)
    assert_same(local, dask)
    assert dask.quality.count("source_error") == 1 and dask.quality.count("unreadable") == 1
    assert "explb-agent" in set(dask.runs["service"])
    assert dask.spellings[str(folder / "zipkin.json.gz")] == {"Zipkin JSON (API v2)": 1}
    assert dask.quality.count("unknown_format") == 0 and len(dask.runs) >= 20


def test_a_folder_of_small_files_is_scanned_a_batch_per_task_and_gives_the_local_report(data, cluster, tmp_path):
    """A file per span of the population, with odd files among them (another format, a bad line, gzip): the
    scan takes small files in a row together (a task each cost more than reading them) and the report is the
    local one."""
    from agentobs.analysis.report.dask.engine import _units
    folder = tmp_path / "spans"
    folder.mkdir()
    lines = [x for line in _lines(data / "archive.jsonl") for x in _explode(line)]
    for i, x in enumerate(lines):
        (folder / f"{i:05d}.jsonl").write_text(x + "\n")
    (folder / "00100-bad.jsonl").write_text(lines[0] + "\n{not json\n")
    (folder / "00200-zipkin.json.gz").write_bytes((ROOT / "tests" / "data" / "zipkin" / "traces.json.gz").read_bytes())
    (folder / "00300-large.jsonl").write_text("".join(x + "\n" for x in lines[:4000]))
    paths = sorted(str(p) for p in folder.iterdir())
    units, sizes = _units(paths, [os.path.getsize(p) for p in paths])
    assert [p for u in units for p in u] == paths and sum(sizes) == sum(os.path.getsize(p) for p in paths)
    assert len(units) < 10 < len(paths)
    assert (str(folder / "00300-large.jsonl"),) in units              # over a batch member's size: on its own
    local, dask = both([folder], cluster, partitions=3)
    assert_same(local, dask)
    assert dask.quality.count("careful_path") == 1 and len(dask.runs) >= 60


def test_a_pipe_is_refused_by_the_cluster_with_the_way_out(cluster, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(Exception) as err:
        analyze_dask([str(fifo)], settings=cluster)
    assert "cannot be read by a Dask cluster's workers" in str(err.value) and "--engine local" in str(err.value)


# -- random splits of an archive -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def archive(data) -> list[str]:
    lines = _lines(data / "archive.jsonl") + _lines(data / "crash.jsonl")
    assert any(k for x in lines for s in _spans_of(x) for k in s.get("links", [])), "resumed segments"
    return lines


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n_files=st.integers(1, 5), partitions=st.integers(1, 7),
       duplicated=st.integers(0, 6))
def test_random_splits_of_an_archive_give_the_local_report_on_the_concatenation(
        archive, cluster, tmp_path_factory, seed, n_files, partitions, duplicated):
    rng = random.Random(seed)
    lines = list(archive)
    # one trace deliberately cut across files: a line exploded into one line per span
    cut = rng.randrange(len(lines))
    lines[cut:cut + 1] = _explode(lines[cut])
    d = tmp_path_factory.mktemp("split")
    files = [d / f"archive-{i:02d}.jsonl" for i in range(n_files)]
    out: dict[Path, list[str]] = {f: [] for f in files}
    for x in lines:
        out[rng.choice(files)].append(x)
    for x in rng.sample(lines, duplicated):          # the same line in a second file
        out[rng.choice(files)].append(x)
    files = [f for f in files if out[f]]
    for f in files:
        f.write_text("".join(x + "\n" for x in out[f]))
    whole = d / "concatenation.jsonl"
    whole.write_text("".join(f.read_text() for f in files))
    local, dask = both(files, cluster, partitions=partitions)
    assert_same(local, dask)
    one = _json(analyze([str(whole)]))
    got = _json(dask)
    for key in ("overview", "signatures", "percentiles", "segments", "caps", "not_derived"):
        assert got[key] == one[key], _first_difference(got[key], one[key], key)
    counts = lambda q: sorted((i["kind"], i["count"]) for i in q["issues"])  # noqa: E731
    per_kind = lambda q: {k: sum(n for k2, n in counts(q) if k2 == k) for k, _ in counts(q)}  # noqa: E731
    assert per_kind(got["data_quality"]) == per_kind(one["data_quality"])
    assert got["data_quality"]["lines"] == one["data_quality"]["lines"]


# -- the CLI, an existing cluster, a local one -------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def external_cluster(tmp_path_factory):
    """A scheduler and a worker started as separate processes with Dask's own command line."""
    d = tmp_path_factory.mktemp("dask-cluster")
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    dask_cmd = [sys.executable, "-m", "dask"]
    logs = [d / "scheduler.log", d / "worker.log"]
    procs = [subprocess.Popen([*dask_cmd, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard",
                              "--dashboard-address", "127.0.0.1:0"],
                              cwd=d, stdout=subprocess.DEVNULL, stderr=logs[0].open("w"))]
    try:
        procs.append(subprocess.Popen([*dask_cmd, "worker", address, "--host", "127.0.0.1", "--nworkers", "1",
                                       "--nthreads", "1", "--memory-limit", "2GiB", "--no-dashboard",
                                       "--dashboard-address", "127.0.0.1:0"],
                                      cwd=d, stdout=subprocess.DEVNULL, stderr=logs[1].open("w")))
        deadline = time.monotonic() + 60
        with distributed.Client(address, timeout=60) as c:
            while not c.scheduler_info()["workers"]:
                assert time.monotonic() < deadline, logs[1].read_text()[-2000:]
                time.sleep(0.2)
        yield address
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


def _cli(*args: str) -> str:
    res = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.output


def test_cli_against_a_scheduler_and_worker_started_apart(data, external_cluster, tmp_path):
    src = str(data / "population.jsonl")
    local = json.loads(_cli("report", src, "--format", "json"))
    dask = json.loads(_cli("report", src, "--format", "json", "--engine", "dask", "--scheduler", external_cluster))
    local.pop("generated_at"), dask.pop("generated_at")
    assert local == dask, _first_difference(local, dask)
    caps = [json.loads(_cli("caps", src, "--format", "json", *extra))
            for extra in ((), ("--engine", "dask", "--scheduler", external_cluster))]
    assert caps[0] == caps[1]
    _cli("runs", src, "--out", str(tmp_path / "local.csv"))
    _cli("runs", src, "--out", str(tmp_path / "dask.csv"), "--engine", "dask", "--scheduler", external_cluster)
    assert (tmp_path / "local.csv").read_bytes() == (tmp_path / "dask.csv").read_bytes()


def test_a_relative_path_reaches_workers_that_run_in_another_folder(data, external_cluster, tmp_path, monkeypatch):
    """The worker runs in its own folder: a relative path failed there ("No such file or directory", counted as an
    unreadable file, and no run). Paths are made absolute before they are sent; the report names them as given."""
    folder = tmp_path / "archive"
    folder.mkdir()
    (folder / "population.jsonl").write_bytes((data / "population.jsonl").read_bytes())
    monkeypatch.chdir(tmp_path)
    for src in ("archive/population.jsonl", "archive"):
        local = json.loads(_cli("report", src, "--format", "json"))
        dask = json.loads(_cli("report", src, "--format", "json", "--engine", "dask", "--scheduler", external_cluster))
        local.pop("generated_at"), dask.pop("generated_at")
        assert local == dask, _first_difference(local, dask)
        assert list(dask["read"]["spellings"]) == ["archive/population.jsonl"]


def test_a_file_the_workers_cannot_see_is_said_as_such(tmp_path):
    """A worker on another machine (no shared disk) finds no file where this machine reads one: one line that says
    so and what to do, not a report of an unreadable file and no run."""
    from types import SimpleNamespace

    from agentobs.analysis.report.dask.engine import _unseen
    from agentobs.analysis.spans.quality import DataQuality
    from agentobs.errors import InputError
    here = tmp_path / "runs.jsonl"
    here.write_text("{}\n")
    q = DataQuality()
    q.add("unreadable", str(here), example=f"[Errno 2] No such file or directory: '{here}'")
    with pytest.raises(InputError, match=r"a Dask worker found no file at .*shared disk"):
        _unseen([SimpleNamespace(quality=q)], {str(here): "runs.jsonl"})
    gone = DataQuality()
    gone.add("unreadable", str(tmp_path / "gone.jsonl"), example="[Errno 2] No such file or directory")
    _unseen([SimpleNamespace(quality=gone)], {str(tmp_path / "gone.jsonl"): "gone.jsonl"})   # (missing here too)


def test_dask_scheduler_address_from_dasks_own_variable(data, external_cluster):
    src = str(data / "scenarios.jsonl")
    env = {**os.environ, "DASK_SCHEDULER_ADDRESS": external_cluster}
    run = lambda *a: subprocess.run([str(Path(sys.executable).parent / "agentobs"), *a], env=env, cwd=ROOT,  # noqa
                                    capture_output=True, text=True, timeout=300)
    got = run("report", src, "--format", "json", "--engine", "dask")
    assert got.returncode == 0, got.stderr
    want = run("report", src, "--format", "json")
    a, b = json.loads(want.stdout), json.loads(got.stdout)
    a.pop("generated_at"), b.pop("generated_at")
    assert a == b, _first_difference(a, b)


def test_without_a_scheduler_a_local_cluster_is_started(data, monkeypatch):
    import dask.config
    monkeypatch.setenv("AGENTOBS_DASK_WORKERS", "2")
    monkeypatch.setenv("AGENTOBS_DASK_MEMORY", "1G")
    seen = []
    with dask.config.set({"scheduler-address": None}):
        st_ = DaskSettings.resolve()
        assert st_.scheduler is None and st_.workers == 2 and st_.memory_per_worker == 1 << 30
        src = [str(data / "scenarios.jsonl")]
        dask = analyze(src, engine="dask", progress=seen.append)
    assert_same(analyze(src), dask)
    assert sum(seen) == 2 * (data / "scenarios.jsonl").stat().st_size, "progress: the scan, then the partitions"


def test_errors_are_one_line(data, monkeypatch):
    src = str(data / "scenarios.jsonl")
    res = CliRunner().invoke(cli, ["report", src, "--scheduler", "tcp://127.0.0.1:1"])
    assert res.exit_code == 2 and "add --engine dask" in res.output
    monkeypatch.setattr(dask_cluster, "CONNECT_TIMEOUT_S", 2)
    res = CliRunner().invoke(cli, ["report", src, "--engine", "dask", "--scheduler", f"tcp://127.0.0.1:{_free_port()}"])
    assert res.exit_code == 2 and "cannot reach the Dask scheduler" in res.output, res.output
    assert "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1


def test_without_dask_installed_the_engine_says_what_to_install(data):
    code = ("import sys; sys.modules['dask'] = sys.modules['distributed'] = None; "
            "from agentobs.cli.main import main; sys.argv = ['agentobs', 'report', sys.argv[1], '--engine', 'dask']; "
            "main()")
    out = subprocess.run([sys.executable, "-c", code, str(data / "crash.jsonl")], capture_output=True, text=True,
                         cwd=ROOT)
    assert out.returncode == 2 and "pip install 'agentobs[dask]'" in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_importing_the_analysis_does_not_import_dask():
    code = ("import sys, agentobs.analysis, agentobs.analysis.report.summary, agentobs.cli.main; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


def test_partly_reported_usage_is_left_unknown_as_locally(cluster, tmp_path):
    """Runs whose calls only partly report usage or can be priced: the same unknown totals and notes, the notes'
    counts summed over partitions."""
    from partial_usage_runs import RUNS, write_runs
    files = [write_runs(tmp_path / f"part{i}.jsonl", {f"{name} {i}": calls for name, calls in RUNS.items()})
             for i in range(2)]
    files[1].write_text(files[1].read_text().replace('"traceId": "0000', '"traceId": "1000'))   # other traces
    for parts in (1, 2):
        local, dask = both(files, cluster, partitions=parts)
        assert_same(local, dask)
    assert len(dask.runs) == 2 * len(RUNS)
    assert any(n.startswith("4 runs have answered model calls that reported no token usage")
               for n in dask.derivation.sentences()), dask.derivation.sentences()


def test_runs_whose_trace_root_never_arrived_are_unlabelled_as_locally(cluster, tmp_path):
    """Runs rooted at the top span of a trace whose root never arrived: unlabelled and noted on both engines, the
    note's count summed over partitions."""
    from rootless_traces import _trace, _write
    path = _write(tmp_path / "t.jsonl", [_trace(t, root=t % 3 == 0, agent=t % 5 == 0) for t in range(1, 31)])
    for parts in (1, 4):
        local, dask = both([path], cluster, partitions=parts)
        assert_same(local, dask)
    rootless = sum(1 for t in range(1, 31) if t % 3 and t % 5)
    assert int(dask.runs["success"].isna().sum()) == rootless
    assert any(n.startswith(f"{rootless} runs lack their trace's root span") for n in dask.derivation.sentences())


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(0, 20)), max_size=60), st.integers(1, 5), st.integers(-1, 21))
def test_a_partition_ships_every_run_the_first_above_any_threshold_could_show(values, k, threshold):
    """Context growth of another framework's run is relative to the successful runs of the whole input: a partition
    cannot know the threshold, so it ships the runs that are among the first k above some threshold."""
    from agentobs.analysis.report.dask.partition import _first_above_any
    runs = pd.DataFrame({"run_id": [f"r{i:03d}" for i in range(len(values))],
                         "max_input_tokens": pd.array(values, dtype="Int64")})
    shipped = set(_first_above_any(runs, "max_input_tokens", k))
    above = runs[(runs["max_input_tokens"] > threshold).fillna(False)]
    assert set(above["run_id"].head(k)) <= shipped
    assert len(shipped) <= len(runs["max_input_tokens"].dropna())


def test_a_selection_gives_the_local_report(data, cluster):
    """``--since``/``--until``/``--where`` (issue 46): each partition sets aside the groups of traces the selection
    cannot select, as the local engine does, and selects its runs: the same report (what the local loading read and
    kept, ``read.selection``, is the local engine's own)."""
    from agentobs.analysis.select.selection import Selection
    starts = sorted(analyze([str(data / "population.jsonl")]).runs["start"])
    for sel in (Selection(since=starts[40].to_pydatetime(), until=starts[110].to_pydatetime()),
                Selection(since=starts[20].to_pydatetime(), where=(("agentobs.outcome", "completed"),))):
        local, dask = both([data / "population.jsonl", data / "scenarios.jsonl"], cluster, Options(selection=sel),
                           partitions=3)
        assert local.to_dict()["read"]["selection"]["traces_kept"] > 0 and dask.read is None
        assert_same(dataclasses.replace(local, read=None), dask)
        assert 0 < len(dask.runs) < len(starts)
