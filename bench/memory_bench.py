"""Peak memory per input kind against its size: every reader, on 64 MiB of its input.

Each input kind (``bench.memory_data``: one seeded population of agent traces in the shape of each format) is
written once, about ``SIZE`` bytes, into the benchmark cache, and read in a fresh process of its own
(``bench.memory_child``): the Jaeger kinds fetched over HTTP from a server on 127.0.0.1 in that process, a labels
file by ``read_labels``, every other kind by ``load_sources`` as ``agentobs report`` reads it. The figure is the
growth of the process's peak resident size (VmHWM) over its size before the read (the modules imported, a served
answer already held), divided by the input's size (for protobuf, denser than the JSON it holds, its size on disk; for
zstd the size of the JSON lines it holds, about six times the file). Repeats in separate processes, the kinds
interleaved.

Before the readers streamed, documents parsed whole with ``json`` took 10 to 33 times their size at 16 MiB (a
Jaeger UI download 18.5 x, Zipkin 19.5 x, protobuf 32.7 x, labels 22 to 26 x, a Jaeger answer holding one bad value
19.6 x at 64 MiB; zstd 20.9 x its file) and a 128 MiB Jaeger answer ended in MemoryError. The targets hold each
kind well under that (at most 6 x, 8 x for a Jaeger answer holding a bad value and for protobuf), with room for this
machine's noise.

    python -m bench.memory_bench [--quick]
"""
from __future__ import annotations

from pathlib import Path

from .common import Figure, Target, cache_dir, module_main, summarize
from .memory_child import measure
from .memory_data import make

NAME = "memory"
TITLE = "Peak memory per input kind against its size (64 MiB of each, a fresh process each)"
SIZE = 64 << 20

# kind -> (what it is, the target: peak growth / input size)
KINDS: dict[str, tuple[str, float]] = {
    "otlp-lines": ("OTLP JSON lines", 4.0),
    "otlp-pretty": ("OTLP JSON, pretty-printed requests", 4.0),
    "otlp-array": ("OTLP JSON, an array of requests on one line", 6.0),
    "jaeger-answer": ("a Jaeger API v3 answer over HTTP", 6.0),
    "jaeger-answer-late": ("a Jaeger answer off the fast path (result not first)", 6.0),
    "jaeger-answer-bad": ("a Jaeger answer holding one value of the wrong type", 8.0),
    "services": ("a Jaeger services list over HTTP", 2.0),
    "jaeger-ui": ("a Jaeger UI download", 5.0),
    "zipkin": ("Zipkin JSON (an array of spans)", 6.0),
    "console": ("the console exporter's output", 6.0),
    "tau2": ("tau2-bench results", 5.0),
    "openai": ("OpenAI-style runs", 5.0),
    "labels-json": ("a labels file, JSON", 4.0),
    "labels-csv": ("a labels file, CSV", 5.0),
    "proto": ("the collector's protobuf file (binary: about three times denser than its JSON)", 8.0),
    "zstd": ("the collector's zstd file (JSON lines), against the JSON it holds", 4.0),
}


def _content_bytes(kind: str, path: Path) -> int:
    """What an input holds: its size, and for zstd the size of the JSON lines it decompresses to."""
    if kind != "zstd":
        return path.stat().st_size
    import struct

    import zstandard
    data, total, i = path.read_bytes(), 0, 0
    dctx = zstandard.ZstdDecompressor()
    while i + 4 <= len(data):
        (n,) = struct.unpack_from(">I", data, i)
        total += len(dctx.decompressobj().decompress(data[i + 4:i + 4 + n]))
        i += 4 + n
    return total


def _figure(kind: str) -> str:
    return f"{kind}: peak memory / input size"


TARGETS = [Target(f"memory: {what} ({kind})", _figure(kind), "<=", target)
           for kind, (what, target) in KINDS.items()]


def run(quick: bool = False) -> list[Figure]:
    repeats = 1 if quick else 3
    folder = cache_dir()
    paths = {kind: make(kind, SIZE, folder) for kind in KINDS}
    got: dict[str, list[dict[str, object]]] = {kind: [] for kind in KINDS}
    for _ in range(repeats):                        # the kinds interleaved, a process each
        for kind, path in paths.items():
            got[kind].append(measure(kind, path))
    figures = []
    for kind, path in paths.items():
        size_mib = _content_bytes(kind, path) / 2**20
        runs = got[kind]
        errors = {str(r["error"]) for r in runs if r["error"]}
        if errors:
            raise RuntimeError(f"{kind}: {errors.pop()}")
        growth = [float(r["growth_mib"]) for r in runs]   # type: ignore[arg-type]
        what = KINDS[kind][0]
        figures.append(summarize(f"{kind}: peak memory growth", growth, "MiB", iterations=1, group=NAME,
                                 notes=f"{what}: {size_mib:.0f} MiB, {int(runs[0]['spans']):,} "  # type: ignore[call-overload]
                                       f"{'labels' if kind.startswith('labels') else 'spans'}"))
        figures.append(summarize(_figure(kind), [g / size_mib for g in growth], "x", iterations=1, group=NAME))
    return figures


def summary(figures: list[Figure]) -> str:
    rows = [f"| {KINDS[k][0]} | {f.median:.2f} x | {KINDS[k][1]:g} x |"
            for k in KINDS for f in figures if f.name == _figure(k)]
    return "\n".join(["| input kind | peak memory / input size | target |", "| --- | ---: | ---: |", *rows])


if __name__ == "__main__":
    module_main(run)
