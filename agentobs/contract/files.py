"""The one way agentobs writes a whole file (a report, a runs table, a manifest, a recorded run).

``write_text(path, text)`` writes the whole text at the name it is given; a file it replaces is replaced whole or
left as it was, and a link at that name is never followed:

- a regular file, a symbolic link, or a name that does not exist yet: a temporary file in the same folder,
  flushed to disk, then renamed over the name. A reader sees the old file or the new one, never a part; a link at
  the name is replaced by the new file (the rename replaces the link itself), and what it pointed to is left as
  it was, so a link planted where the output will go (a shared folder such as /tmp) cannot aim the write at
  another file;
- an existing FIFO or device (``/dev/null``, a terminal) at the name: opened without following a link and written
  directly, as a stream; nothing is created next to it and nothing is renamed;
- the system's own names in ``/dev`` and ``/proc`` (``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N``,
  ``/proc/self/fd/N``): the only links followed, since only the system makes them; a descriptor of this process
  is written through that descriptor, whatever it is open on (a terminal, a pipe, a file the shell redirected to).

Shared folders: an existing entry owned by another user, in a folder with the sticky bit that anyone may write
(``/tmp``), is refused unless the folder is that user's too, as Linux's ``protected_regular`` and
``protected_fifos`` refuse to open such files; the name is someone else's, so the write goes nowhere near it.
Folders on the way are followed as the system follows them (its own protections for links in shared folders
apply); missing ones are created.

``open_append(path)`` opens a file that one writer appends whole lines to for its life (a traces file). The same
rules for links and shared folders hold, and a regular file gets an exclusive lock (``flock``) held until the
writer closes it: a second writer, in this process or another, is refused with ``FileInUse`` naming the process
that holds it, instead of writing over it or into a file the first one then replaces.
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
_SYSTEM_DIRS = ("/dev/", *_DESCRIPTOR_DIRS)  # where a link at the name is the system's and is followed


def write_text(path: str | os.PathLike[str], text: str, *, mode: int = 0o666) -> None:
    """Writes ``text`` (UTF-8) to ``path`` as the module docstring says. ``mode`` is the new file's permissions
    (before the umask); 0o600 for a file only its owner may read. Folders missing on the way are created.
    Failures are ``OSError`` naming the path."""
    given = Path(path)
    if _in_system_dir(given):
        _write_system(given, text, mode)
        return
    try:
        st: os.stat_result | None = os.lstat(given)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise _named(exc, given) from None
    if st is not None:
        _refuse_foreign(given, st)
        if stat.S_ISDIR(st.st_mode):
            raise OSError(errno.EISDIR, os.strerror(errno.EISDIR), str(given))
    if st is not None and not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
        _stream(given, text, mode)
    else:
        _replace(given, text, mode)


def _in_system_dir(path: Path) -> bool:
    """Whether ``path`` names an entry of /dev or /proc (its folder resolved) where only the system makes links:
    not in a folder there that anyone may write (/dev/shm)."""
    try:
        folder = os.path.join(os.path.realpath(path.parent), "")
        shared = os.stat(folder).st_mode & stat.S_IWOTH
    except (OSError, ValueError):
        return False
    return folder.startswith(_SYSTEM_DIRS) and not shared


def _refuse_foreign(path: Path, st: os.stat_result) -> None:
    """Refuses an entry that another user owns in a shared folder (sticky, writable by all) not theirs either."""
    try:
        folder = os.stat(path.parent)
    except OSError:
        return
    shared = folder.st_mode & stat.S_ISVTX and folder.st_mode & stat.S_IWOTH
    if shared and st.st_uid not in (os.geteuid(), folder.st_uid):
        raise OSError(errno.EPERM, "another user's entry in a shared folder (sticky, writable by all); agentobs "
                                   "writes neither through nor over it: choose another name", str(path))


def _write_system(given: Path, text: str, mode: int) -> None:
    target = _follow(given)
    if isinstance(target, int):
        _stream_descriptor(target, text, given)
        return
    try:
        st: os.stat_result | None = os.stat(given)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        _stream(given, text, mode, follow=True)
    elif target is None or (st is not None and not _same(target, st)):
        _stream(given, text, mode, follow=True)     # another process's descriptor, or a file renamed meanwhile
    else:
        _replace(target, text, mode)


def _follow(path: Path) -> Path | int | None:
    """Where a chain of the system's links ends: the path (``path`` itself when it is no link); the number of a
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


def _stream(path: Path, text: str, mode: int, *, follow: bool = False) -> None:
    """Into an existing FIFO or device: no O_CREAT (a FIFO blocks here until a reader opens it), no link followed
    (outside /dev and /proc). Should the name have become a regular file meanwhile, it is replaced instead."""
    flags = os.O_WRONLY | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow:         # a link put there since: replaced, not followed
            _replace(path, text, mode)
            return
        raise _named(exc, path) from None
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode) and not follow:
            os.close(fd)
            _replace(path, text, mode)
            return
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as exc:
        raise _named(exc, path) from None


def _replace(target: Path, text: str, mode: int) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)                 # over a link: the link is replaced, never its target
    except OSError as exc:
        raise _named(exc, target) from None
    finally:
        if os.path.lexists(tmp):
            tmp.unlink()


def _named(exc: OSError, path: Path) -> OSError:
    """The error named by the file asked for (not the temporary one, not nameless as a failed write is)."""
    return type(exc)(exc.errno, exc.strerror or str(exc), str(path))


class FileInUse(BlockingIOError):
    """Another writer holds the file's lock; ``holder`` is its process id when the system tells it."""

    def __init__(self, path: Path, holder: int | None):
        who = f"another process (pid {holder})" if holder else "another writer"
        super().__init__(errno.EAGAIN, f"being written by {who}", str(path))
        self.holder = holder


class Appender:
    """One writer's append-only file: ``write`` appends bytes whole (a failed write raises ``OSError``),
    ``still_named`` says whether the path still names the file written to, ``close`` releases it.
    Made by ``open_append``."""

    def __init__(self, path: Path, fd: int, *, identity: tuple[int, int] | None):
        self.path, self._fd, self._identity = path, fd, identity
        self.torn = False           # a failed write left part of its bytes at the end of the file

    def write(self, data: bytes) -> None:
        """Appends ``data`` whole, or not at all where the file can be cut: a write that fails part way (a full
        disk) is cut back to where it began, so the file never ends in part of what was asked. A FIFO or a device
        cannot be cut: the part written stays (``torn``)."""
        view = memoryview(data)
        start = self._end()
        try:
            while view:
                view = view[os.write(self._fd, view):]
        except OSError:
            self.torn = len(view) < len(data) and not self._cut(start)
            raise
        self.torn = False

    def _end(self) -> int | None:
        if self._identity is None:
            return None
        try:
            return os.lseek(self._fd, 0, os.SEEK_END)
        except OSError:
            return None

    def _cut(self, start: int | None) -> bool:
        if start is None:
            return False
        try:
            os.ftruncate(self._fd, start)
        except OSError:
            return False
        return True

    def still_named(self) -> bool:
        """False once the file was removed or another file put at its name (what is written then is lost);
        always True for a FIFO, a device or a descriptor."""
        if self._identity is None:
            return True
        try:
            st = os.stat(self.path, follow_symlinks=False)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self._identity

    def close(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)


def open_append(path: str | os.PathLike[str], *, replace: bool = False) -> Appender:
    """Opens ``path`` for one writer to append to, created readable by its owner only (0o600) with its folders.
    ``replace``: the writer starts the file anew (emptied once it holds the lock; a link at the name is removed
    and a new file made), else it appends to what is there (a link at the name is refused: name the file). A
    FIFO, a device and the system's names in /dev and /proc (``/dev/stdout``) are opened as they are, unlocked.
    Raises ``FileInUse`` when another writer holds the file, ``OSError`` naming the path otherwise."""
    given = Path(path)
    try:
        if _in_system_dir(given):
            return Appender(given, os.open(given, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC), identity=None)
        _clear_name(given, replace)
        given.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(_MAX_LINKS):
            fd = os.open(given, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            appender = _locked(given, fd, replace)
            if appender is not None:
                return appender
        raise OSError(errno.EAGAIN, "replaced again and again while being opened", str(given))
    except FileInUse:
        raise
    except OSError as exc:
        raise _named(exc, given) from None


def _clear_name(path: Path, replace: bool) -> None:
    """Refuses another user's entry in a shared folder; a link at the name is removed (``replace``) or refused."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    _refuse_foreign(path, st)
    if stat.S_ISLNK(st.st_mode):
        if not replace:
            raise OSError(errno.ELOOP, "a symbolic link: agentobs appends to the file named, never through a link; "
                                       "name the file itself", str(path))
        path.unlink()                      # the link itself: what it pointed to is left as it was


def _locked(path: Path, fd: int, replace: bool) -> Appender | None:
    """The appender of ``fd`` once it holds the lock and ``path`` still names its file; None (closed) when the
    name was removed or replaced meanwhile, to open it again."""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return Appender(path, fd, identity=None)
        if not _lock(fd):
            raise FileInUse(path, _lock_holder(st))
        try:
            now = os.stat(path, follow_symlinks=False)
        except FileNotFoundError:
            now = None
        if now is None or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            os.close(fd)
            return None
        if replace:                        # a new file: empty, and readable by its owner only as one made anew
            os.ftruncate(fd, 0)
            os.fchmod(fd, 0o600)
        return Appender(path, fd, identity=(st.st_dev, st.st_ino))
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise


def _lock(fd: int) -> bool:
    """An exclusive ``flock`` on the open file (held until it is closed; another descriptor of the same file, in
    this process too, cannot take it); True where the system has no ``flock``."""
    try:
        import fcntl
    except ImportError:                    # (not a POSIX system: no lock to take)
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _lock_holder(st: os.stat_result) -> int | None:
    """The process holding a ``flock`` on the file, from Linux's /proc/locks; None where it cannot be told."""
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as f:
            for line in f:
                fields = line.split()
                if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == dev and fields[4].isdigit():
                    return int(fields[4])
    except OSError:
        pass
    return None


__all__ = ["Appender", "FileInUse", "open_append", "write_text"]
