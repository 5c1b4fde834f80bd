"""Many small files: a report on a folder of one-trace files against a report on the same spans in one file.

Collectors, per-request exporters and hand-saved traces leave folders of thousands of small files. The data is
``bench.realistic`` traces (GenAI dialect, seed 2026) split into one OTLP JSON lines file per trace, in folders
of 250 and 2,000 files, and the same traces joined into one file each. Contenders, in this process, repeats
interleaved: ``analyze([folder])`` and ``analyze([file])`` (load, runs table, signatures, percentiles, caps); and
the folder of 2,000 files with every file gzip-compressed (as an exporter that compresses what it writes leaves
them).

Targets: the cost of many files stays linear (time per file at 2,000 files / at 250 files <= 1.5), a folder
of 2,000 files takes at most 10 x the time of its spans in one file (each file is opened, sniffed and read on its
own; the analysis after loading is the same), and the gzip folder at most 1.5 x the plain one (small gzip files
are inflated and read in batches like plain ones).

    python -m bench.folder_bench [--quick]
"""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from .common import Figure, Plan, Target, cache_dir, module_main, ratio, summarize, time_interleaved

NAME = "folder"
TITLE = "Many small files: a folder of one-trace files vs the same spans in one file"
SIZES = (250, 2000)

TARGETS = [
    Target("folder: time per file, 2,000 files / 250 files", "time per file: 2,000 files / 250 files", "<=", 1.5),
    Target("folder: 2,000 files / the same spans in one file", "2,000 files / one file", "<=", 10.0),
    Target("folder: 2,000 gzip files / 2,000 plain files", "2,000 gzip files / 2,000 plain files", "<=", 1.5),
]

FULL = Plan(repeats=7, iterations=1, warmup=1)
QUICK = Plan(repeats=3, iterations=1, warmup=1)


def _folders() -> dict[int, tuple[Path, Path]]:
    """(folder of ``n`` one-trace files, one file of the same requests) for each size, made once."""
    from .analysis_data import realistic

    source, _ = realistic(100_000, "genai")
    root = Path(cache_dir()) / "folders"
    out: dict[int, tuple[Path, Path]] = {}
    by_trace: dict[str, list[bytes]] | None = None
    for n in SIZES:
        folder, joined = root / f"traces-{n}", root / f"traces-{n}.jsonl"
        if not (folder.is_dir() and joined.exists() and len(list(folder.iterdir())) == n):
            by_trace = by_trace or _split(source)
            traces = sorted(by_trace)[:n]
            if len(traces) < n:
                raise RuntimeError(f"{source} holds {len(traces)} traces, fewer than {n}")
            folder.mkdir(parents=True, exist_ok=True)
            for old in folder.iterdir():
                old.unlink()
            for i, t in enumerate(traces):
                (folder / f"{i:05d}.jsonl").write_bytes(b"".join(by_trace[t]))
            joined.write_bytes(b"".join(line for t in traces for line in by_trace[t]))
        out[n] = (folder, joined)
    return out


def _gzip_folder(folder: Path) -> Path:
    """A copy of ``folder`` with every file gzip-compressed, made once."""
    import gzip

    gz = folder.with_name(folder.name + "-gz")
    files = sorted(folder.iterdir())
    if not (gz.is_dir() and len(list(gz.iterdir())) == len(files)):
        gz.mkdir(parents=True, exist_ok=True)
        for f in files:
            (gz / (f.name + ".gz")).write_bytes(gzip.compress(f.read_bytes(), compresslevel=6))
    return gz


def _split(source: Path) -> dict[str, list[bytes]]:
    """The file's requests cut by trace: per trace id, requests holding only its spans (resource and scope kept)."""
    by_trace: dict[str, list[bytes]] = defaultdict(list)
    with open(source, "rb") as f:
        for line in f:
            parts: dict[str, list[dict]] = defaultdict(list)
            for rs in json.loads(line).get("resourceSpans", []):
                for ss in rs.get("scopeSpans", []):
                    spans: dict[str, list[dict]] = defaultdict(list)
                    for span in ss.get("spans", []):
                        spans[str(span.get("traceId", ""))].append(span)
                    for trace, group in spans.items():
                        parts[trace].append({"resource": rs.get("resource", {}),
                                             "scopeSpans": [{**ss, "spans": group}]})
            for trace, rss in parts.items():
                by_trace[trace].append(json.dumps({"resourceSpans": rss}, separators=(",", ":")).encode() + b"\n")
    return by_trace


def run(quick: bool = False) -> list[Figure]:
    from agentobs.analysis.report.engine import analyze

    plan = QUICK if quick else FULL
    data = _folders()
    contenders = {}
    for n, (folder, joined) in data.items():
        contenders[f"folder {n}"] = (lambda p: lambda: analyze([str(p)]))(folder)
        contenders[f"file {n}"] = (lambda p: lambda: analyze([str(p)]))(joined)
    gz = _gzip_folder(data[SIZES[-1]][0])
    contenders["gzip folder"] = lambda: analyze([str(gz)])
    runs = {n: len(analyze([str(folder)]).runs) for n, (folder, _) in data.items()}
    if len(analyze([str(gz)]).runs) != runs[SIZES[-1]]:
        raise AssertionError("the gzip folder gives other runs than the plain one")
    t = time_interleaved(contenders, plan)
    s = {k: [x / 1e9 for x in v] for k, v in t.items()}
    g = dict(group=NAME)
    figs: list[Figure] = []
    for n in SIZES:
        figs += [summarize(f"analyze: folder of {n:,} one-trace files", s[f"folder {n}"], "s", iterations=1,
                           notes=f"{runs[n]:,} runs", **g),
                 summarize(f"analyze: the same spans in one file ({n:,} traces)", s[f"file {n}"], "s", iterations=1,
                           **g)]
    small, large = SIZES
    per_file = [(a / large) / (b / small) for a, b in zip(t[f"folder {large}"], t[f"folder {small}"], strict=True)]
    figs += [summarize("time per file: 2,000 files / 250 files", per_file, "x", notes="1.0 is linear growth", **g),
             ratio("2,000 files / one file", t[f"folder {large}"], t[f"file {large}"], **g),
             ratio("250 files / one file", t[f"folder {small}"], t[f"file {small}"], **g),
             summarize(f"analyze: folder of {large:,} gzip one-trace files", s["gzip folder"], "s", iterations=1,
                       notes=f"{runs[large]:,} runs, as from the plain folder", **g),
             ratio("2,000 gzip files / 2,000 plain files", t["gzip folder"], t[f"folder {large}"], **g)]
    return figs


if __name__ == "__main__":
    module_main(run)
