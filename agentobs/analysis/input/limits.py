"""Limits on what one input may cost: line length and decompressed size, resolved in one place.

Precedence: an explicit argument, then the environment variable, then the default.

    AGENTOBS_MAX_LINE_BYTES   longest line of a traces file (a longer line is skipped and counted)   64 MiB
    AGENTOBS_MAX_GZIP_RATIO   how many times its size on disk a gzip file may expand to (a larger
                              expansion is refused as a likely decompression bomb)                    200
    AGENTOBS_MAX_DOCUMENT_BYTES  largest document of another shape than OTLP JSON lines (a transcript
                              file, another trace format, a labels file; each read a value at a time)  1 GiB

Sizes take a plain number of bytes or a number with K, M or G (binary units): ``64M``, ``2G``.
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields

from ...errors import ConfigError

LINE_ENV = "AGENTOBS_MAX_LINE_BYTES"
RATIO_ENV = "AGENTOBS_MAX_GZIP_RATIO"
DOCUMENT_ENV = "AGENTOBS_MAX_DOCUMENT_BYTES"
MIB = 1 << 20


@dataclass(frozen=True, kw_only=True)
class InputLimits:
    max_line_bytes: int = 64 * MIB
    max_gzip_ratio: float = 200.0
    # a gzip file may always expand to this much, whatever its ratio (small files of repetitive spans)
    gzip_allowance_bytes: int = 256 * MIB
    max_document_bytes: int = 1024 * MIB
    # the unit of work of the loader: whole lines, about this many (decompressed) bytes at a time
    chunk_bytes: int = 32 * MIB

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if not v > 0:
                raise ConfigError(f"{f.name} must be positive, got {v!r}")

    def max_decompressed(self, compressed_size: int) -> int:
        return max(self.gzip_allowance_bytes, int(self.max_gzip_ratio * compressed_size))

    @classmethod
    def resolve(cls, *, max_line_bytes: int | None = None, max_gzip_ratio: float | None = None,
                max_document_bytes: int | None = None, env: Mapping[str, str] | None = None) -> InputLimits:
        environ = os.environ if env is None else env
        out: dict[str, float] = {}
        line = max_line_bytes if max_line_bytes is not None else size_setting(environ.get(LINE_ENV), LINE_ENV)
        if line is not None:
            out["max_line_bytes"] = line
        doc = max_document_bytes if max_document_bytes is not None else size_setting(environ.get(DOCUMENT_ENV),
                                                                               DOCUMENT_ENV)
        if doc is not None:
            out["max_document_bytes"] = doc
        ratio = max_gzip_ratio if max_gzip_ratio is not None else _number(environ.get(RATIO_ENV), RATIO_ENV)
        if ratio is not None:
            out["max_gzip_ratio"] = ratio
        if out.get("max_line_bytes", cls.chunk_bytes) > cls.chunk_bytes:
            out["chunk_bytes"] = out["max_line_bytes"]
        return cls(**out)  # type: ignore[arg-type]


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmg]?)(?:i?b)?\s*$", re.I)


def size_setting(raw: str | None, name: str) -> int | None:
    if raw is None or raw.strip() == "":
        return None
    m = _SIZE.match(raw)
    if not m or float(m.group(1)) <= 0:
        raise ConfigError(f"{name}={raw!r}: use a positive number of bytes, e.g. 67108864 or 64M")
    return int(float(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()])


def _number(raw: str | None, name: str) -> float | None:
    if raw is None or raw.strip() == "":
        return None
    try:
        v = float(raw)
    except ValueError:
        v = -1.0
    if not v > 0 or v != v or v == float("inf"):
        raise ConfigError(f"{name}={raw!r}: use a positive number, e.g. 200")
    return v


def human(n: float) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} bytes"
