"""The one way agentobs writes a whole file (a report, a runs table, a manifest, a recorded run).

``write_text(path, text)`` writes the whole text; a file it replaces is replaced whole or left as it was:

- a regular file, or a path that does not exist yet: a temporary file in the same folder, flushed to disk, then
  renamed over the path (a reader sees the old file or the new one, never a part);
- a symbolic link (or a chain of them): followed, and the link's target is replaced as above, in the target's
  folder, so the link stays a link;
- an existing file that is not a regular file (a FIFO, a character device such as ``/dev/null`` or a terminal):
  opened and written directly, as a stream; nothing is created next to it and nothing is renamed;
- one of the process's open descriptors (``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N``, ``/proc/self/fd/N``):
  written through that descriptor, whatever it is open on (a terminal, a pipe, a file the shell redirected to).
"""
from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import sys
from pathlib import Path

_MAX_LINKS = 40                              # as the kernel's own limit on symbolic links in a path
_DESCRIPTOR_DIRS = ("/proc/", "/dev/fd/")    # procfs and descriptors: written to, never replaced


def write_text(path: str | os.PathLike[str], text: str, *, mode: int = 0o666) -> None:
    """Writes ``text`` (UTF-8) to ``path`` as the module docstring says. ``mode`` is the new file's permissions
    (before the umask); 0o600 for a file only its owner may read. Folders missing on the way are created.
    Failures are ``OSError`` naming the path."""
    given = Path(path)
    target = _follow(given)
    if isinstance(target, int):
        _stream_descriptor(target, text, given)
        return
    try:
        st: os.stat_result | None = os.stat(given)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        _stream(given, text)
    elif target is None or (st is not None and not _same(target, st)):
        _stream(given, text)                 # another process's descriptor, or a file renamed meanwhile
    else:
        _replace(target, text, mode)


def _follow(path: Path) -> Path | int | None:
    """Where a chain of symbolic links ends: the path (``path`` itself when it is no link); the number of a
    descriptor of this process when the chain reaches one (``/dev/stdout`` is ``/proc/self/fd/1``); ``None`` for
    a descriptor of another process."""
    own = (os.path.join(os.path.realpath(f"/proc/{os.getpid()}/fd"), ""), "/dev/fd/")
    for _ in range(_MAX_LINKS):
        folder = os.path.join(os.path.realpath(path.parent), "")
        if folder in own and path.name.isdigit():
            return int(path.name)
        if folder.startswith(_DESCRIPTOR_DIRS):
            return None
        if not path.is_symlink():
            return path
        path = path.parent / os.readlink(path)   # an absolute target replaces the folder
    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), str(path))


def _same(target: Path, st: os.stat_result) -> bool:
    try:
        t = os.stat(target)
    except OSError:
        return False
    return (t.st_dev, t.st_ino) == (st.st_dev, st.st_ino)


def _stream_descriptor(fd: int, text: str, path: Path) -> None:
    """Through the descriptor itself (a copy of it), so the text lands where the process's other writes to it
    land, at its offset, in order (opening ``/dev/stdout`` anew would truncate a file the shell redirected to)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, OSError, ValueError):      # a closed or replaced stream
            stream.flush()
    try:
        with os.fdopen(os.dup(fd), "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as exc:
        raise _named(exc, path) from None


def _stream(path: Path, text: str) -> None:
    # no O_CREAT: the file exists (a FIFO blocks here until a reader opens it); O_TRUNC is ignored by FIFOs and
    # devices
    try:
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as exc:
        raise _named(exc, path) from None


def _replace(target: Path, text: str, mode: int) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        raise _named(exc, target) from None
    finally:
        if os.path.lexists(tmp):
            tmp.unlink()


def _named(exc: OSError, path: Path) -> OSError:
    """The error named by the file asked for (not the temporary one, not nameless as a failed write is)."""
    return type(exc)(exc.errno, exc.strerror or str(exc), str(path))


__all__ = ["write_text"]
