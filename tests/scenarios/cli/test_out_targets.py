"""Where ``--out`` (and ``--manifest``, and a saved recording) may point: a symbolic link at the name is replaced by
the output, never followed (what it pointed to keeps its bytes); another user's entry in a shared sticky folder is
refused; a FIFO or a device is written directly (never replaced by a regular file), ``/dev/stdout`` writes through
the process's standard output, a regular file is replaced atomically.

FIFOs and links are made in tmp_path; the only device used is /dev/null (and /dev/stdout of a subprocess whose
standard output the test chose). Tests may run as root, where a regression (a temporary file renamed over
``/dev/null``) would replace the machine's device: every test runs with ``_refuse_replacing_devices``."""
from __future__ import annotations

import contextlib
import errno
import inspect
import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from locations import TESTS

from agentobs.cli.main import cli
from agentobs.kernel import ModelResponse, Recorder, Replayer, ScriptedModel

FIXTURE = str(TESTS / "dialects" / "fixtures" / "openai_v2.jsonl")

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX FIFOs and /dev/null")

# (command line before --out, a check of what was written)
OUTPUTS = {
    "report-json": (["report", FIXTURE, "--format", "json"], lambda t: json.loads(t)["schema_version"] == 1),
    "report-html": (["report", FIXTURE, "--format", "html"], lambda t: t.lstrip().lower().startswith("<!doctype html")),
    "runs-csv": (["runs", FIXTURE], lambda t: t.splitlines()[0].startswith("run_id") and len(t.splitlines()) > 1),
}


def _refuse_replacing_devices(set_attr: Callable[[Any, str, Any], None] = setattr) -> None:
    """Makes ``os.replace``, ``os.rename``, ``os.unlink`` and ``os.remove`` refuse to touch an existing entry of /dev
    that is not a regular file (a device, a link such as /dev/stdout; /dev/shm, anyone's folder, aside); also run
    first in the subprocesses, from its source."""
    import os
    import stat

    def device(p: Any) -> bool:
        if not isinstance(p, (str, bytes, os.PathLike)) or not os.path.abspath(os.fsdecode(p)).startswith("/dev/"):
            return False
        if os.path.abspath(os.fsdecode(p)).startswith("/dev/shm/"):        # anyone's folder, not the system's
            return False
        try:
            return not stat.S_ISREG(os.lstat(p).st_mode)
        except FileNotFoundError:
            return False

    def guarded(real: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            hit = [p for p in args[:2] if device(p)]
            if hit:
                raise AssertionError(f"refused: {real.__name__} of {hit[0]!r} (a device is written, never replaced)")
            return real(*args, **kwargs)
        return call
    for name in ("replace", "rename", "unlink", "remove"):
        set_attr(os, name, guarded(getattr(os, name)))


@pytest.fixture(autouse=True)
def _devices_are_never_replaced(monkeypatch):
    _refuse_replacing_devices(monkeypatch.setattr)


def _ok(args: list[str]) -> str:
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    return res.output


def _leftovers(*folders: Path) -> list[str]:
    return [p.name for d in folders for p in d.iterdir() if p.name.endswith(".tmp")]


class _FifoReader:
    """Reads a FIFO to its end in a thread (the writer's open blocks until a reader opens it)."""

    def __init__(self, path: Path):
        self.path, self.data = path, b""
        self._alias = path.with_name(path.name + ".alias")
        os.link(path, self._alias)       # reaches the FIFO even if a regression replaces the name
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        with open(self.path, "rb") as f:
            self.data = f.read()

    def result(self) -> str:
        # should nothing have opened the FIFO for writing (a failed command), open it once so the reader ends
        with contextlib.suppress(OSError):
            os.close(os.open(self._alias, os.O_WRONLY | os.O_NONBLOCK))
        self._thread.join()
        self._alias.unlink()
        return self.data.decode()


@pytest.mark.parametrize("kind", sorted(OUTPUTS))
def test_a_symlink_at_the_name_is_replaced_never_followed(tmp_path, kind):
    """The rename replaces the link itself: the name becomes the output, what the link pointed to (through a chain
    of links, relative, in another folder) is left byte for byte, and the other links of the chain stay links."""
    args, check = OUTPUTS[kind]
    real_dir, link_dir = tmp_path / "real", tmp_path / "links"
    real_dir.mkdir()
    link_dir.mkdir()
    target = real_dir / "out.dat"
    target.write_text("old\n")
    (link_dir / "first").symlink_to(Path("..") / "real" / "out.dat")     # relative, in another folder
    (link_dir / "second").symlink_to(link_dir / "first")                  # a chain of two
    _ok([*args, "--out", str(link_dir / "second")])
    assert stat.S_ISREG((link_dir / "second").lstat().st_mode)
    assert check((link_dir / "second").read_text())
    assert (link_dir / "first").is_symlink() and os.readlink(link_dir / "first") == str(Path("..") / "real" / "out.dat")
    assert target.read_text() == "old\n"
    assert _leftovers(real_dir, link_dir) == []


def test_a_dangling_symlink_is_replaced_and_its_target_never_created(tmp_path):
    link = tmp_path / "report.json"
    link.symlink_to(tmp_path / "made" / "later.json")
    _ok(["report", FIXTURE, "--format", "json", "--out", str(link)])
    assert not link.is_symlink() and json.loads(link.read_text())["schema_version"] == 1
    assert not (tmp_path / "made").exists()


def _shared_folder(tmp_path: Path) -> Path:
    """A folder like /tmp: anyone may write, the sticky bit set."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    return shared


@pytest.mark.parametrize("kind", sorted(OUTPUTS))
def test_a_link_planted_in_a_shared_folder_never_aims_the_write_elsewhere(tmp_path, kind):
    """Someone plants `shared/out -> the user's precious file` before the user writes `--out shared/out`: the
    precious file keeps its bytes, its inode and its mode; the output is at the name asked for."""
    args, check = OUTPUTS[kind]
    shared = _shared_folder(tmp_path)
    precious = tmp_path / "home" / "notes.txt"
    precious.parent.mkdir()
    precious.write_text("my notes\n")
    precious.chmod(0o600)
    before = precious.stat()
    (shared / "out").symlink_to(precious)
    _ok([*args, "--out", str(shared / "out")])
    after = precious.stat()
    assert precious.read_text() == "my notes\n"
    assert (after.st_ino, after.st_mode, after.st_mtime_ns) == (before.st_ino, before.st_mode, before.st_mtime_ns)
    assert stat.S_ISREG((shared / "out").lstat().st_mode) and check((shared / "out").read_text())
    assert _leftovers(shared) == []


needs_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                reason="making an entry owned by another user needs root")


@needs_root
@pytest.mark.parametrize("entry", ["link", "file", "fifo"])
def test_another_users_entry_in_a_shared_folder_is_refused(tmp_path, entry):
    """An entry another user owns in a sticky folder anyone may write (as Linux's protected_regular and
    protected_fifos, for root too): a one-line error naming it; the entry, and what a link points to, untouched."""
    shared = _shared_folder(tmp_path)
    precious = tmp_path / "precious.txt"
    precious.write_text("keep\n")
    name = shared / "out.json"
    if entry == "link":
        name.symlink_to(precious)
    elif entry == "file":
        name.write_text("theirs\n")
    else:
        os.mkfifo(name)
    os.lchown(name, 54321, 54321)
    res = CliRunner().invoke(cli, ["report", FIXTURE, "--format", "json", "--out", str(name)])
    assert res.exit_code == 2, res.output
    line = res.output.strip()
    assert line.startswith("agentobs: error: another user's entry in a shared folder") and line.endswith(str(name))
    assert "\n" not in line and "Traceback" not in res.output
    assert os.lstat(name).st_uid == 54321 and precious.read_text() == "keep\n"
    if entry == "file":
        assert name.read_text() == "theirs\n"
    assert _leftovers(shared) == []


@needs_root
def test_another_users_entry_is_allowed_in_a_shared_folder_they_own(tmp_path):
    """The folder is theirs: the sticky rule does not apply (as for the kernel's), the link is replaced."""
    shared = _shared_folder(tmp_path)
    os.chown(shared, 54321, 54321)
    name = shared / "out.json"
    name.symlink_to(tmp_path / "elsewhere.json")
    os.lchown(name, 54321, 54321)
    _ok(["report", FIXTURE, "--format", "json", "--out", str(name)])
    assert stat.S_ISREG(name.lstat().st_mode) and not (tmp_path / "elsewhere.json").exists()


@pytest.mark.skipif(not os.access("/dev/shm", os.W_OK), reason="needs a writable /dev/shm")
def test_a_link_in_dev_shm_is_not_taken_for_the_systems(tmp_path):
    """/dev/shm is in /dev but anyone may write there: its links are replaced like anywhere else."""
    precious = tmp_path / "precious.txt"
    precious.write_text("keep\n")
    name = Path("/dev/shm") / f"agentobs-test-{os.getpid()}-{id(tmp_path)}.json"
    name.symlink_to(precious)
    try:
        _ok(["report", FIXTURE, "--format", "json", "--out", str(name)])
        assert stat.S_ISREG(name.lstat().st_mode) and json.loads(name.read_text())["schema_version"] == 1
        assert precious.read_text() == "keep\n"
    finally:
        name.unlink()


@pytest.mark.parametrize("kind", sorted(OUTPUTS))
def test_a_fifo_is_written_not_replaced(tmp_path, kind):
    args, check = OUTPUTS[kind]
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = _FifoReader(fifo)
    res = CliRunner().invoke(cli, [*args, "--out", str(fifo)])
    text = reader.result()
    assert res.exit_code == 0, res.output
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert check(text)
    assert _leftovers(tmp_path) == []


def test_a_symlink_to_a_fifo_is_replaced_and_the_fifo_never_opened(tmp_path):
    fifo, link = tmp_path / "pipe", tmp_path / "link.json"
    os.mkfifo(fifo)
    link.symlink_to(fifo)
    reader = _FifoReader(fifo)          # (so that a regression writes into it rather than hangs)
    res = CliRunner().invoke(cli, ["report", FIXTURE, "--format", "json", "--out", str(link)])
    assert reader.result() == ""
    assert res.exit_code == 0, res.output
    assert not link.is_symlink() and json.loads(link.read_text())["schema_version"] == 1
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_dev_null_is_accepted_and_left_alone():
    before = os.stat("/dev/null")
    assert stat.S_ISCHR(before.st_mode)
    out = _ok(["report", FIXTURE, "--format", "json", "--out", "/dev/null"])
    assert "Report (JSON): /dev/null" in out
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)


def _cli_subprocess(args: list[str], stdout: object) -> subprocess.CompletedProcess[bytes]:
    code = (f"{inspect.getsource(_refuse_replacing_devices)}\n_refuse_replacing_devices()\n"
            "from agentobs.cli.main import main\nmain()")
    return subprocess.run([sys.executable, "-c", f"from typing import Any, Callable\n{code}", *args],
                          stdout=stdout, stderr=subprocess.PIPE, check=False)


def test_dev_stdout_into_a_pipe():
    done = _cli_subprocess(["report", FIXTURE, "--format", "json", "--out", "/dev/stdout"], subprocess.PIPE)
    assert done.returncode == 0, done.stderr
    text = done.stdout.decode()
    report, _, rest = text.rpartition("\n}\n")
    assert json.loads(report + "\n}")["schema_version"] == 1
    assert rest.strip() == "Report (JSON): /dev/stdout"


def test_dev_stdout_redirected_to_a_file_writes_through_the_descriptor(tmp_path):
    """`agentobs report --out /dev/stdout > file`: the report, then the line saying where it went, in order; the
    shell's file is written, neither truncated behind its back nor replaced."""
    out = tmp_path / "shell.txt"
    with open(out, "wb") as f:
        inode = os.fstat(f.fileno()).st_ino
        done = _cli_subprocess(["report", FIXTURE, "--format", "json", "--out", "/dev/stdout"], f)
    assert done.returncode == 0, done.stderr
    assert out.stat().st_ino == inode
    text = out.read_text()
    assert text.startswith("{\n")
    report, _, rest = text.rpartition("\n}\n")
    assert json.loads(report + "\n}")["schema_version"] == 1
    assert rest.strip() == "Report (JSON): /dev/stdout"
    assert _leftovers(tmp_path) == []


def test_a_regular_file_is_replaced_by_a_rename(tmp_path):
    out = tmp_path / "r.json"
    out.write_text("old\n")
    inode = out.stat().st_ino
    keep = out.open()                   # a reader holding the old file keeps reading the old file whole
    try:
        _ok(["report", FIXTURE, "--format", "json", "--out", str(out)])
        assert keep.read() == "old\n"
    finally:
        keep.close()
    assert out.stat().st_ino != inode and not out.is_symlink()
    assert json.loads(out.read_text())["schema_version"] == 1
    assert _leftovers(tmp_path) == []


def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(tmp_path, monkeypatch):
    """The disk fills while the new report is flushed: the old report stays whole, the temporary file goes, and
    the error is one line naming the file asked for."""
    out = tmp_path / "r.json"
    out.write_text("old\n")

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr("agentobs.contract.files.os.fsync", full)
    res = CliRunner().invoke(cli, ["report", FIXTURE, "--format", "json", "--out", str(out)])
    assert res.exit_code == 2
    assert res.output.strip() == f"agentobs: error: {os.strerror(errno.ENOSPC)}: {out}"
    assert "Traceback" not in res.output
    assert out.read_text() == "old\n"
    assert _leftovers(tmp_path) == []


def test_the_manifest_replaces_a_symlink_and_stays_private(tmp_path):
    target, link = tmp_path / "data" / "truth.json", tmp_path / "manifest.json"
    target.parent.mkdir()
    target.write_text("{}")
    target.chmod(0o644)
    link.symlink_to(target)
    _ok(["simulate", "--runs", "3", "--seed", "1", "--traces-out", str(tmp_path / "t.jsonl"),
         "--manifest", str(link)])
    assert not link.is_symlink() and target.read_text() == "{}" and target.stat().st_mode & 0o777 == 0o644
    body = json.loads(link.read_text())
    assert body["seed"] == 1 and len(body["runs"]) == 3
    assert link.stat().st_mode & 0o777 == 0o600
    assert _leftovers(tmp_path, target.parent) == []


def test_a_recording_replaces_a_symlink_and_streams_into_a_fifo(tmp_path):
    rec = Recorder(ScriptedModel([{"final": "done"}]))
    rec.responses.append(ModelResponse(reply={"final": "done"}, latency_s=0.5, input_tokens=3, output_tokens=2))
    target, link = tmp_path / "rec" / "run.json", tmp_path / "run.json"
    target.parent.mkdir()
    target.write_text("kept")
    link.symlink_to(target)
    rec.save(link)
    assert not link.is_symlink() and Replayer.load(link).responses == rec.responses
    assert target.read_text() == "kept"
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = _FifoReader(fifo)
    rec.save(fifo)
    assert json.loads(reader.result()) == rec.to_dict() and stat.S_ISFIFO(fifo.lstat().st_mode)
