"""Edge cases of naming SOURCES (``agentobs.analysis.load.sources``): what a file's first bytes say it is, folders and
links that cannot be read, and sources that are streams (a named pipe, standard input, a process substitution)."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner
from locations import TESTS

from agentobs.analysis.formats import reader_of
from agentobs.analysis.load.sources import expand, expand_sources, load_sources, total_bytes
from agentobs.cli.main import cli
from agentobs.errors import InputError

FIXTURES = TESTS / "dialects" / "fixtures"
OPENAI = FIXTURES / "openai_v2.jsonl"            # OTLP JSON lines
LANGFUSE = FIXTURES / "langfuse.jsonl"           # OTLP JSON lines, other runs
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
CLI = "import sys; from agentobs.cli.main import main; sys.argv[0] = 'agentobs'; main()"


def _runs(ss) -> int:
    from agentobs.analysis.derive.runs import derive_runs
    return len(derive_runs(ss)[0])


def _runs_of(path: Path) -> int:
    n = _runs(load_sources([str(path)]))
    assert n > 0
    return n


# -- sniffing: the first line does not decide alone ------------------------------------------------------------


@pytest.mark.parametrize("first", ["[]", "[ ]"])
def test_json_lines_after_an_empty_array_line_are_otlp(tmp_path, first):
    p = tmp_path / "traces.jsonl"
    p.write_bytes(first.encode() + b"\n" + OPENAI.read_bytes())
    assert reader_of(p).name == "otlp"
    ss = load_sources([str(p)])
    assert len(ss.spans) == len(load_sources([str(OPENAI)]).spans) > 0
    assert _runs(ss) == _runs_of(OPENAI)


def test_snake_case_json_lines_after_an_empty_array_line_are_otlp(tmp_path):
    p = tmp_path / "traces.jsonl"
    p.write_text('[]\n{"resource_spans": [{"scope_spans": []}]}\n')
    assert reader_of(p).name == "otlp"


def test_null_first_line_is_sniffed_as_otlp(tmp_path):
    p = tmp_path / "traces.jsonl"
    p.write_bytes(b"null\n" + OPENAI.read_bytes())
    assert reader_of(p).name == "otlp"


def test_null_first_line_keeps_the_runs_after_it(tmp_path):
    p = tmp_path / "traces.jsonl"
    p.write_bytes(b"null\n" + OPENAI.read_bytes())
    assert _runs(load_sources([str(p)])) == _runs_of(OPENAI)


def test_arrays_that_are_transcripts_stay_transcripts(tmp_path):
    runs = tmp_path / "runs.json"        # a message mentioning resourceSpans, on one line and indented
    doc = [{"messages": [{"role": "user", "content": '{"resourceSpans": []}'}]}]
    runs.write_text(json.dumps(doc))
    assert reader_of(runs).name == "transcripts"
    runs.write_text(json.dumps(doc, indent=2))
    assert reader_of(runs).name == "transcripts"
    late = tmp_path / "late.json"         # an OTLP-looking line past the first 8 KiB does not count
    late.write_text("[\n" + " " * 9000 + "\n" + '{"resourceSpans": []}\n]\n')
    assert reader_of(late).name == "transcripts"


def test_an_array_of_requests_is_still_otlp(tmp_path):
    p = tmp_path / "requests.json"
    p.write_text(json.dumps([json.loads(line) for line in OPENAI.read_text().splitlines()], indent=2))
    assert reader_of(p).name == "otlp"
    assert _runs(load_sources([str(p)])) == _runs_of(OPENAI)


@pytest.mark.parametrize("name", ["traces.jsonl", "runs.json"])
def test_a_byte_order_mark_is_left_out_when_sniffing(tmp_path, name):
    bom = b"\xef\xbb\xbf"
    p = tmp_path / name
    if name == "runs.json":
        p.write_bytes(bom + json.dumps([{"messages": [{"role": "user", "content": "hi"}]}]).encode())
        assert reader_of(p).name == "transcripts"
    else:
        p.write_bytes(bom + b"[]\n" + OPENAI.read_bytes())
        assert reader_of(p).name == "otlp"


# -- folders and links that cannot be read -------------------------------------------------------------------


def _source_errors(quality: dict) -> list[dict]:
    return [i for i in quality["issues"] if i["kind"] == "source_error"]


def test_a_dangling_link_in_a_folder_is_a_source_error(tmp_path):
    folder = tmp_path / "traces"
    folder.mkdir()
    shutil.copy(OPENAI, folder / "a.jsonl")
    link = folder / "b.jsonl"
    link.symlink_to(tmp_path / "gone.jsonl")
    found = expand_sources([str(folder)])
    assert found.paths == [str(folder / "a.jsonl")]
    assert expand([str(folder)]) == found.paths          # the other callers get the readable files
    [issue] = found.quality.issues
    assert (issue.kind, issue.count, issue.source) == ("source_error", 1, str(folder))
    assert str(link) in issue.examples[0] and "gone.jsonl" in issue.examples[0]
    assert "No such file or directory" in issue.examples[0]

    r = CliRunner().invoke(cli, ["report", str(folder), "--format", "json"])
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    assert report["overview"]["runs"] == _runs_of(OPENAI)
    [err] = _source_errors(report["data_quality"])
    assert str(link) in err["examples"][0]


def test_a_loop_of_links_is_a_source_error(tmp_path):
    folder = tmp_path / "traces"
    folder.mkdir()
    shutil.copy(OPENAI, folder / "a.jsonl")
    (folder / "x.jsonl").symlink_to(folder / "y.jsonl")
    (folder / "y.jsonl").symlink_to(folder / "x.jsonl")
    found = expand_sources([str(folder)])
    assert found.paths == [str(folder / "a.jsonl")]
    assert found.quality.count("source_error") == 2
    assert all("symbolic link" in e for e in found.quality.issues[0].examples)


def test_a_missing_path_is_still_an_input_error(tmp_path):
    with pytest.raises(InputError, match="no such file or folder"):
        expand([str(tmp_path / "nothing.jsonl")])


@pytest.mark.parametrize("command", [["report"], ["caps"], ["trace", "0" * 31 + "1"]])
def test_an_empty_source_is_a_usage_error_not_the_current_folder(tmp_path, monkeypatch, command):
    """``agentobs report ""`` (an unset variable) read the current folder: Path("") is "."."""
    shutil.copy(OPENAI, tmp_path / "runs.jsonl")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="an empty source"):
        expand([str(tmp_path / "runs.jsonl"), ""])
    result = CliRunner().invoke(cli, [*command, ""])
    assert result.exit_code == 2 and result.stdout == "", result.output
    assert result.stderr == ("agentobs: error: an empty source: name a file, folder, glob or URL "
                             "(or '.' for the current folder)\n")
    assert CliRunner().invoke(cli, ["report", "."]).exit_code == 0       # the folder, when named


@pytest.fixture
def as_other_user():
    """How to run the CLI so that a folder with mode 000 really cannot be read: as this user when it is not root;
    as root, under ``setpriv`` as nobody (root ignores the mode). Yields (a command prefix, a folder that user can
    enter); skips when neither is possible."""
    base = Path(tempfile.mkdtemp(prefix="agentobs-srcedge-"))
    base.chmod(0o755)
    prefix: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            shutil.rmtree(base)
            pytest.skip("running as root without setpriv: a folder's mode cannot make it unreadable")
        prefix = NOBODY
        probe = subprocess.run([*prefix, sys.executable, "-c", "import agentobs.cli.main"], capture_output=True,
                               cwd=base)
        if probe.returncode != 0:
            shutil.rmtree(base)
            pytest.skip(f"nobody cannot run this Python: {probe.stderr.decode(errors='replace')[-200:]}")
    try:
        yield prefix, base
    finally:
        for root, dirs, _files in os.walk(base):
            for d in dirs:
                os.chmod(os.path.join(root, d), 0o755)
        shutil.rmtree(base)


def _cli(prefix: list[str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(cwd)}
    return subprocess.run([*prefix, sys.executable, "-c", CLI, *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=300)


def test_an_unreadable_folder_is_a_source_error_and_the_rest_is_read(as_other_user):
    prefix, base = as_other_user
    locked = base / "locked"
    locked.mkdir()
    shutil.copy(OPENAI, locked / "a.jsonl")
    other = base / "langfuse.jsonl"
    shutil.copy(LANGFUSE, other)
    other.chmod(0o644)
    locked.chmod(0o000)
    r = _cli(prefix, base, "report", str(locked), str(other), "--format", "json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["overview"]["runs"] == _runs_of(LANGFUSE)       # the locked folder's runs are not read
    [err] = _source_errors(report["data_quality"])
    assert err["source"] == str(locked)
    assert err["examples"] == [f"{locked}: Permission denied"]


def test_an_unreadable_subfolder_is_a_source_error(as_other_user):
    prefix, base = as_other_user
    top = base / "traces"
    (top / "sub").mkdir(parents=True)
    shutil.copy(LANGFUSE, top / "a.jsonl")
    shutil.copy(OPENAI, top / "sub" / "b.jsonl")
    for p in (top / "a.jsonl", top / "sub" / "b.jsonl"):
        p.chmod(0o644)
    top.chmod(0o755)
    (top / "sub").chmod(0o000)
    r = _cli(prefix, base, "report", str(top), "--format", "json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["overview"]["runs"] == _runs_of(LANGFUSE)
    [err] = _source_errors(report["data_quality"])
    assert (err["source"], err["count"]) == (str(top), 1)
    assert err["examples"] == [f"{top / 'sub'}: Permission denied"]


def test_nothing_readable_is_no_usable_run(as_other_user):
    prefix, base = as_other_user
    locked = base / "locked"
    locked.mkdir()
    shutil.copy(OPENAI, locked / "a.jsonl")
    locked.chmod(0o000)
    r = _cli(prefix, base, "report", str(locked))
    assert r.returncode == 2
    assert r.stderr.startswith(f"agentobs: error: no usable run in {locked}: 1 x source_error")
    assert f"{locked}: Permission denied" in r.stderr
    assert "Traceback" not in r.stderr
    inside = _cli(prefix, base, "report", str(locked / "a.jsonl"))     # a file in it, named: the same, no traceback
    assert inside.returncode == 2
    assert inside.stderr.startswith(f"agentobs: error: no usable run in {locked / 'a.jsonl'}: 1 x source_error")


# -- streams: read once, into a temporary file, under their own name -----------------------------------------

HANG = 120          # seconds before a read of a named pipe is taken to hang (a guard, not a speed assertion)
TRANSCRIPT = [{"id": "run-1", "agent": "support", "model": "gpt-4o-mini",
               "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}]


@pytest.fixture
def own_tmp(tmp_path, monkeypatch):
    """The folder temporary files go to, to see that the stream's copy is removed."""
    d = tmp_path / "tmp"
    d.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    return d


def _through_fifo(tmp_path: Path, data: bytes, read):
    """``read(path)`` of a named pipe a thread writes ``data`` into; fails (rather than hanging) when the reader
    waits for a second writer."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "wb") as w, contextlib.suppress(BrokenPipeError):     # the reader may stop early
            w.write(data)

    got: dict = {}

    def run() -> None:
        try:
            got["out"] = read(str(fifo))
        except BaseException as exc:         # raised again in the test's thread
            got["exc"] = exc

    writer = threading.Thread(target=write, daemon=True)
    reader = threading.Thread(target=run, daemon=True)
    writer.start()
    reader.start()
    reader.join(HANG)
    if reader.is_alive():                    # a second open waits for a writer: give it one that writes nothing
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(HANG)
        pytest.fail("reading the named pipe hung: it was opened twice")
    writer.join(HANG)
    if "exc" in got:
        raise got["exc"]
    return str(fifo), got["out"]


def test_a_named_pipe_is_read_once_under_its_own_name(tmp_path, own_tmp):
    want = load_sources([str(OPENAI)])
    fifo, got = _through_fifo(tmp_path, OPENAI.read_bytes(), lambda p: load_sources([p]))
    assert len(got.spans) == len(want.spans) > 0
    assert _runs(got) == _runs_of(OPENAI)
    assert got.sources == [fifo]
    assert set(got.spans["source"].astype(str)) == {fifo}
    assert list(got.spellings) == [fifo]
    assert not got.quality.issues
    assert list(own_tmp.iterdir()) == []                  # the copy is gone


def test_a_named_pipe_through_the_cli(tmp_path, own_tmp):
    fifo, r = _through_fifo(tmp_path, OPENAI.read_bytes(),
                            lambda p: CliRunner().invoke(cli, ["report", p, "--format", "json"]))
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    assert report["sources"] == [fifo]
    assert report["overview"]["runs"] == _runs_of(OPENAI)
    assert report["data_quality"]["issues"] == []
    assert list(own_tmp.iterdir()) == []


def test_a_transcript_through_a_pipe_keeps_ids_derived_from_its_name(tmp_path, own_tmp):
    from agentobs.analysis.formats.transcripts import transcripts_to_spans
    fifo, got = _through_fifo(tmp_path, json.dumps(TRANSCRIPT).encode(), lambda p: load_sources([p]))
    want = transcripts_to_spans(TRANSCRIPT, fifo)
    assert len(got.spans) == len(want.spans) > 0
    assert set(got.spans["trace_id"]) == set(want.spans["trace_id"])      # the same ids on every read
    assert set(got.spans["source"].astype(str)) == {fifo}
    assert list(own_tmp.iterdir()) == []


def test_a_stream_over_the_limit_is_refused_and_its_copy_removed(tmp_path, own_tmp, monkeypatch):
    monkeypatch.setenv("AGENTOBS_MAX_DOCUMENT_BYTES", "4K")
    data = OPENAI.read_bytes()
    assert len(data) > 4096
    with pytest.raises(InputError, match=r"a stream \(not a regular file\) of more than 4 KiB.*"
                                         r"AGENTOBS_MAX_DOCUMENT_BYTES"):
        _through_fifo(tmp_path, data, lambda p: load_sources([p]))
    assert list(own_tmp.iterdir()) == []


def test_an_empty_stream_is_an_empty_file(tmp_path, own_tmp):
    fifo, got = _through_fifo(tmp_path, b"", lambda p: load_sources([p]))
    assert [(i.kind, i.source) for i in got.quality.issues] == [("empty_file", fifo)]
    assert list(own_tmp.iterdir()) == []


def test_standard_input_is_named_by_a_dash():
    assert expand(["-", str(OPENAI)]) == ["-", str(OPENAI)]
    assert total_bytes(["-"]) == 0                      # its size is not known before it is read


def _cli_stdin(tmp_path: Path, stdin, *args: str, env: dict | None = None) -> subprocess.CompletedProcess[bytes]:
    tmp = tmp_path / "tmp"
    tmp.mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-c", CLI, *args], stdin=stdin if not isinstance(stdin, bytes) else None,
                          input=stdin if isinstance(stdin, bytes) else None, capture_output=True, timeout=300,
                          env={**os.environ, "TMPDIR": str(tmp), **(env or {})})


@pytest.mark.parametrize("name", ["-", "/dev/stdin"])
def test_standard_input_from_a_pipe(tmp_path, name):
    r = _cli_stdin(tmp_path, OPENAI.read_bytes(), "report", name, "--format", "json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["sources"] == [name]
    assert report["overview"]["runs"] == _runs_of(OPENAI)
    assert report["data_quality"]["issues"] == []
    assert list((tmp_path / "tmp").iterdir()) == []


def test_standard_input_from_a_file_and_with_other_sources(tmp_path):
    with open(OPENAI, "rb") as f:
        r = _cli_stdin(tmp_path, f, "report", "-", str(LANGFUSE), "--format", "json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["sources"] == ["-", str(LANGFUSE)]
    assert report["overview"]["runs"] == _runs_of(OPENAI) + _runs_of(LANGFUSE)


def test_standard_input_over_the_limit_is_one_line(tmp_path):
    r = _cli_stdin(tmp_path, OPENAI.read_bytes(), "report", "-", env={"AGENTOBS_MAX_DOCUMENT_BYTES": "4K"})
    assert r.returncode == 2
    err = r.stderr.decode()
    assert err.startswith("agentobs: error: -: a stream (not a regular file) of more than 4 KiB")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert list((tmp_path / "tmp").iterdir()) == []


def test_a_process_substitution_is_read(tmp_path):
    if shutil.which("bash") is None:
        pytest.skip("no bash for a process substitution")
    script = 'exec "$0" -c "$1" report <(cat "$2") --format json'
    r = subprocess.run(["bash", "-c", script, sys.executable, CLI, str(OPENAI)], capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["sources"][0].startswith("/dev/fd/")
    assert report["overview"]["runs"] == _runs_of(OPENAI)
