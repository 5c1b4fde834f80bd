"""One writer per traces file (``--traces-out``, ``traces_out``, ``AGENTOBS_TRACES_OUT``), and a delivered count that
is true: the file holds every span its writer says it delivered.

Two processes used to share one file: the second removed it and made its own, the first kept writing into the
removed file and reported all its spans delivered while the file held only the second's. The writer now holds an
exclusive lock on the file for its life; a second writer is refused with one line naming the first's pid, and a
file removed or replaced behind the writer's back turns what it writes next into spans counted lost."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentobs.cli.main import cli
from agentobs.errors import ConfigError
from agentobs.telemetry import configure

pytestmark = pytest.mark.skipif(not Path("/proc/locks").exists(), reason="needs Linux's flock and /proc/locks")

# a writer in another process: opens the traces file, says so, waits for a line on stdin, then ends `n` spans and
# prints its export report as JSON
WRITER = textwrap.dedent("""
    import json, sys
    from agentobs.telemetry import configure
    tel = configure(traces_out=sys.argv[1], replace_traces=sys.argv[2] == "replace")
    print("ready", flush=True)
    sys.stdin.readline()
    for i in range(int(sys.argv[3])):
        with tel.tracer.start_as_current_span(f"span-{i}"):
            pass
    r = tel.shutdown()
    print(json.dumps({"ended": r.ended, "exporters": r.exporters}), flush=True)
""")


def _writer(path: Path, spans: int, mode: str = "replace") -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path), mode, str(spans)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.strip() == "ready", line + (proc.stderr.read() if proc.stderr else "")
    return proc


def _finish(proc: subprocess.Popen[str]) -> dict:
    out, err = proc.communicate("go\n", timeout=120)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def _span_names(path: Path) -> list[str]:
    return [s["name"] for line in path.read_text().splitlines() if line.strip()
            for rs in json.loads(line)["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]


def test_a_second_process_is_refused_and_the_first_delivers_what_it_says(tmp_path):
    path = tmp_path / "traces.jsonl"
    first = _writer(path, 40)
    try:
        res = subprocess.run([sys.executable, "-c", "from agentobs.cli.main import main; main()", "simulate",
                              "--runs", "3", "--traces-out", str(path)], capture_output=True, text=True, timeout=300)
    finally:
        report = _finish(first)
    assert res.returncode == 2, res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    assert lines == [f"agentobs: error: traces file {path} is being written by another process (pid {first.pid}): "
                     "give each process its own file (traces_out, AGENTOBS_TRACES_OUT or --traces-out)"]
    assert "Traceback" not in res.stderr and not (tmp_path / "traces-manifest.json").exists()
    (exp,) = report["exporters"].values()
    assert report["ended"] == 40 and exp["exported"] == 40 and exp["lost"] == 0
    assert sorted(_span_names(path)) == sorted(f"span-{i}" for i in range(40))


def test_a_second_writer_in_the_same_process_is_refused_until_the_first_shuts_down(tmp_path):
    path = tmp_path / "t.jsonl"
    first = configure(traces_out=path)
    with pytest.raises(ConfigError, match=rf"is being written by another process \(pid {os.getpid()}\)"):
        configure(traces_out=path)
    with first.tracer.start_as_current_span("one"):
        pass
    first.shutdown()
    second = configure(traces_out=path)            # the lock went with the first writer
    with second.tracer.start_as_current_span("two"):
        pass
    second.shutdown()
    assert _span_names(path) == ["one", "two"]     # appended, as the library does


def test_the_cli_replaces_the_file_a_finished_run_left(tmp_path):
    """A file a finished run left is replaced (emptied in place, under the lock), never appended to."""
    path = tmp_path / "t.jsonl"
    path.write_text("an earlier file, readable by all\n")
    path.chmod(0o644)
    for _ in range(2):
        res = CliRunner().invoke(cli, ["simulate", "--runs", "2", "--seed", "3", "--traces-out", str(path)])
        assert res.exit_code == 0, res.output
    once = _span_names(path)
    res = CliRunner().invoke(cli, ["simulate", "--runs", "2", "--seed", "3", "--traces-out", str(path)])
    assert res.exit_code == 0 and _span_names(path) == once and len(once) > 2
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_file_removed_behind_the_writers_back_counts_its_spans_lost(tmp_path):
    """`rm` (or an older agentobs that unlinked the file) while a run writes: what goes into the removed file is
    lost, and the report says so instead of calling it delivered."""
    path = tmp_path / "t.jsonl"
    proc = _writer(path, 25)
    path.unlink()
    path.write_text("someone else's\n")
    report = _finish(proc)
    (exp,) = report["exporters"].values()
    assert exp["exported"] == 0 and exp["lost"] == 25 == report["ended"]
    assert path.read_text() == "someone else's\n"


def test_a_link_at_the_traces_path_is_never_followed(tmp_path):
    """The library appends: a link there is refused, its target untouched. The CLI replaces: the link itself is
    replaced by the new file."""
    precious = tmp_path / "precious.txt"
    precious.write_text("keep\n")
    link = tmp_path / "t.jsonl"
    link.symlink_to(precious)
    with pytest.raises(ConfigError, match="a symbolic link: agentobs appends to the file named, never through a link"):
        configure(traces_out=link)
    res = CliRunner().invoke(cli, ["simulate", "--runs", "2", "--traces-out", str(link)])
    assert res.exit_code == 0, res.output
    assert precious.read_text() == "keep\n"
    assert stat.S_ISREG(link.lstat().st_mode) and _span_names(link)


@pytest.mark.skipif(os.geteuid() != 0, reason="making an entry owned by another user needs root")
def test_another_users_traces_file_in_a_shared_folder_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    planted = shared / "t.jsonl"
    planted.write_text("theirs\n")
    os.chown(planted, 54321, 54321)
    res = CliRunner().invoke(cli, ["simulate", "--runs", "2", "--traces-out", str(planted)])
    assert res.exit_code == 2 and "another user's entry in a shared folder" in res.output, res.output
    assert planted.read_text() == "theirs\n"


def test_dev_null_is_written_unlocked(tmp_path):
    res = CliRunner().invoke(cli, ["simulate", "--runs", "2", "--traces-out", "/dev/null",
                                   "--manifest", str(tmp_path / "m.json")])
    assert res.exit_code == 0, res.output
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


# a writer whose file may not grow past a size (RLIMIT_FSIZE: a write past it fails with EFBIG, as on a full disk):
# exports batches of spans with long names, then prints what the exporter counted
FULL_DISK = textwrap.dedent("""
    import json, resource, signal, sys
    from opentelemetry.sdk.trace import TracerProvider
    from agentobs.telemetry.otlp_json import OtlpJsonFileExporter
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    exporter = OtlpJsonFileExporter(sys.argv[1], replace=True)
    tracer = TracerProvider().get_tracer("t")
    limit = int(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    for batch in range(12):
        spans = []
        for i in range(20):
            with tracer.start_as_current_span(f"b{batch}-{i}-" + "x" * 300) as s:
                spans.append(s)
        exporter.export(spans)
    exporter.shutdown()
    print(json.dumps({"exported": exporter.exported, "failed": exporter.failed}), flush=True)
""")


def test_a_write_that_fails_part_way_leaves_no_part_of_a_line(tmp_path):
    """A full disk (here a file size limit) made a request's line end part way, the file torn at its end; the
    write is now cut back to where it began: every line in the file is whole, what did not fit counted as failed,
    with one warning line and no traceback."""
    path = tmp_path / "traces.jsonl"
    done = subprocess.run([sys.executable, "-c", FULL_DISK, str(path), str(40_000)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["exported"] > 0 and got["failed"] > 0 and got["exported"] + got["failed"] == 240
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b""                                    # the file ends with a whole line
    assert sum(len(json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"]) for line in lines[:-1]) \
        == got["exported"]
    assert "Traceback" not in done.stderr and done.stderr.count("could not write") <= 1
