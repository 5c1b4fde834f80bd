"""An output never names an input, nor another output of the same command.

``refuse_overlap`` compares an output path with every file the command reads (its sources, a labels file) or
writes besides it, by resolved path (a link to an input, ``./x`` and ``x``) and by device and inode (a hard link
to an input): writing the output would replace the file it names, so such a command is refused before it reads
anything, with one line naming both.
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from ..errors import InputError

Named = tuple[str, "str | os.PathLike[str]"]       # (what the file is to the command, its path)


def refuse_overlap(option: str, out: str | os.PathLike[str], others: Iterable[Named]) -> None:
    """Raises ``InputError`` when ``out`` names the same file as one of ``others`` (URLs and ``-`` never do)."""
    for what, path in others:
        if _same(out, path):
            raise InputError(f"--{option} {_shown(out)} is {what} ({_shown(path)}): writing it would replace that "
                             "file; choose another")


def _same(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    if not _local(a) or not _local(b):
        return False
    try:
        if os.path.realpath(a) == os.path.realpath(b):
            return True
        sa, sb = os.stat(a), os.stat(b)
    except (OSError, ValueError):          # a path that does not exist (yet), an embedded NUL
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def _local(p: str | os.PathLike[str]) -> bool:
    text = os.fspath(p)
    return bool(text) and text != "-" and "://" not in str(text)


def _shown(p: str | os.PathLike[str]) -> str:
    from ..analysis.load.sources import printable_source
    return printable_source(str(Path(p)) if isinstance(p, os.PathLike) else p)
