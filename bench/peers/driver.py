"""How each contender goes from a file of traces to a per-run table, on the same generated traces.

The traces: ``bench.realistic`` in the GenAI dialect (seed 2026) at about 20,000 and 90,000 spans (quick: 3,000),
each export request of the file turned into the protobuf ``ExportTraceServiceRequest`` an SDK's OTLP/HTTP
exporter would send (``bench/peers/otlp.py``).

* **MLflow** (its OTLP ingestion, MLflow 3.6 and later): ``mlflow server`` on 127.0.0.1 with a SQLite backend
  store in a temporary folder; the requests posted to ``/v1/traces`` with ``x-mlflow-experiment-id`` (a new
  experiment); then ``mlflow.search_traces(locations=[experiment], return_type="pandas")`` against the server,
  the spans flattened and aggregated per trace in pandas (``bench/peers/mlflow_side.py``).
* **Arize Phoenix**: ``phoenix serve`` on 127.0.0.1 (``PHOENIX_WORKING_DIR`` a temporary folder, so its SQLite
  database is fresh); the same requests posted to its OTLP/HTTP endpoint ``/v1/traces``; then
  ``phoenix.client.Client().spans.get_spans_dataframe(project_identifier="default", limit=all)`` and the same
  aggregation (``bench/peers/phoenix_side.py``).
* **agentobs**: ``agentobs runs FILE --out runs.csv`` (a fresh process, wall time from outside) and the Python
  API ``agentobs.analysis.analyze([FILE])`` (in a process, its imports not counted) on the same file.

Requests are posted one after the other, as one batch-export thread does, and retried on 429/502/503/504 with
the SDK exporters' backoff. Ingest rate: spans stored (counted in the peer's SQLite ``spans`` table, read-only)
over the seconds from the first request to the moment the count stopped growing (it has to stay unchanged for
two minutes, or reach what was accepted). Spans lost: spans sent minus spans in the DataFrame read back.
Query: the peer's documented call to a DataFrame; aggregation: the per-run table from it in pandas (one row per
trace: the peers have no run inside a trace). Ratios: the peer's time over ours, per repeat.

The peers run with telemetry off (``MLFLOW_DISABLE_TELEMETRY``, ``DO_NOT_TRACK``, ``PHOENIX_TELEMETRY_ENABLED=
false``, ``PHOENIX_ALLOW_EXTERNAL_RESOURCES=false``), ``HOME`` and their working folder set to the temporary
folder, and no OpenTelemetry variables of ours. ``AGENTOBS_PEERS_SIZES`` (e.g. ``20000``) picks the sizes.
"""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..analysis_child import run_child
from ..analysis_data import realistic
from ..common import Figure, ratio, summarize
from . import envs
from .otlp import Sent, post_all, requests_for
from .server import Server, free_port

NAME = "peers"
TITLE = "Peers side by side: MLflow and Arize Phoenix against agentobs on the same traces (optional)"
TARGETS: list = []
SIZES = (20_000, 90_000)
QUICK_SIZES = (3_000,)
HERE = Path(__file__).resolve().parent
QUERY_REPEATS = 2
OURS_REPEATS = 3
STALL_S = 120.0
PEERS = ("mlflow", "phoenix")
SHOWN = {"mlflow": "MLflow", "phoenix": "Phoenix"}
NOTES: list[str] = []            # what could not be measured and why, the versions: for the summary


def _sizes(quick: bool) -> tuple[int, ...]:
    given = os.environ.get("AGENTOBS_PEERS_SIZES")
    if given == "none":              # measure nothing: the section from the figures kept by earlier runs
        return ()
    if given:
        return tuple(int(x) for x in given.split(",") if x.strip())
    return QUICK_SIZES if quick else SIZES


def _env(home: Path) -> dict[str, str]:
    """A clean environment for a peer: no variables of ours (OTEL_*, AGENTOBS_*), telemetry off."""
    keep = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL", "TZ") if k in os.environ}
    return {**keep, "HOME": str(home), "TMPDIR": str(home), "PYTHONNOUSERSITE": "1",
            "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true",
            "PHOENIX_TELEMETRY_ENABLED": "false", "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false"}


def _count(db: Path) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as c:
            return int(c.execute("select count(*) from spans").fetchone()[0])
    except sqlite3.Error:
        return 0


def _wait_stored(db: Path, sent: Sent) -> tuple[int, float]:
    """Spans stored, and seconds from the first request to when that count was reached."""
    last, changed = -1, time.monotonic()
    while True:
        n = _count(db)
        now = time.monotonic()
        if n != last:
            last, changed = n, now
        if n >= sent.spans_accepted or now - changed > STALL_S:
            return n, max(changed, sent.last_answer) - sent.first_post
        time.sleep(1.0)


def _side(py: Path, script: str, before: list[str], after: list[str], env: dict[str, str], cwd: Path
          ) -> dict[str, Any]:
    """Runs ``script`` of this folder in the peer's interpreter: ``script *before OUT_JSON *after``."""
    out = cwd / f"{script}.{time.monotonic_ns()}.json"
    t0 = time.perf_counter()
    r = subprocess.run([str(py), str(HERE / script), *before, str(out), *after], env=env, cwd=cwd,
                       capture_output=True, text=True, timeout=7200)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"{script} failed ({r.returncode}): {r.stderr.strip()[-1500:]}")
    res = json.loads(out.read_text())
    res["wall_s"] = wall
    return res


def _mlflow(reqs: list[tuple[int, bytes]], tmp: Path) -> dict[str, Any]:
    py = envs.ensure("mlflow")
    port, env = free_port(), _env(tmp)
    db = tmp / "mlflow.db"
    cmd = [str(py.parent / "mlflow"), "server", "--backend-store-uri", f"sqlite:///{db}", "--default-artifact-root",
           str(tmp / "artifacts"), "--host", "127.0.0.1", "--port", str(port), "--workers", "1"]
    url = f"http://127.0.0.1:{port}"
    with Server(cmd, env, tmp, tmp / "mlflow-server.log") as srv:
        startup = srv.wait_ready(url + "/health")
        req = urllib.request.Request(url + "/api/2.0/mlflow/experiments/create", method="POST",
                                     data=json.dumps({"name": "agentobs-bench"}).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as r:
            exp = json.loads(r.read())["experiment_id"]
        sent = post_all(url + "/v1/traces", reqs, {"x-mlflow-experiment-id": exp}, timeout=600)
        stored, ingest_s = _wait_stored(db, sent)
        queries = [_side(py, "mlflow_side.py", [url, exp], [], env, tmp) for _ in range(QUERY_REPEATS)]
    return {"startup_s": startup, "sent": sent, "stored": stored, "ingest_s": ingest_s, "queries": queries}


def _phoenix(reqs: list[tuple[int, bytes]], tmp: Path) -> dict[str, Any]:
    py = envs.ensure("phoenix")
    port, env = free_port(), _env(tmp)
    env.update(PHOENIX_WORKING_DIR=str(tmp), PHOENIX_HOST="127.0.0.1", PHOENIX_PORT=str(port),
               PHOENIX_GRPC_PORT=str(free_port()))
    url = f"http://127.0.0.1:{port}"
    spans = sum(n for n, _ in reqs)
    with Server([str(py.parent / "phoenix"), "serve"], env, tmp, tmp / "phoenix-server.log") as srv:
        startup = srv.wait_ready(url + "/")
        sent = post_all(url + "/v1/traces", reqs, timeout=600)
        stored, ingest_s = _wait_stored(tmp / "phoenix.db", sent)
        queries = [_side(py, "phoenix_side.py", [url], [str(spans + 1000)], env, tmp)
                   for _ in range(QUERY_REPEATS)]
    return {"startup_s": startup, "sent": sent, "stored": stored, "ingest_s": ingest_s, "queries": queries}


RUNNERS: dict[str, Callable[[list[tuple[int, bytes]], Path], dict[str, Any]]] = {"mlflow": _mlflow,
                                                                                  "phoenix": _phoenix}


def _ours(path: Path) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {"cli": [], "api": []}
    for _ in range(OURS_REPEATS):
        out["cli"].append(run_child("runs", path))
        out["api"].append(run_child("analyze", path))
    return out


def _stored(size: int) -> Path:
    return Path(envs.env_dir("mlflow")).parent / f"results-{size}.json"


def run(quick: bool = False) -> list[Figure]:
    """Measures the sizes asked for; the figures of other sizes measured earlier (full mode) are added from the
    record each run leaves under the peers' folder, with a note saying when they were measured."""
    NOTES.clear()
    figs: list[Figure] = []
    sizes = _sizes(quick)
    for size in sizes:
        size_figs = _measure(size)
        notes = [x for x in NOTES if x.startswith(f"{size_figs[0].name.split(': ', 1)[0]},")] if size_figs else []
        if not quick and size_figs:
            _stored(size).write_text(json.dumps({"measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                                 "load": os.getloadavg()[0], "notes": notes,
                                                 "figures": [asdict(f) for f in size_figs]}))
        figs += size_figs
    if not quick:
        for other in SIZES:
            if other in sizes or not _stored(other).exists():
                continue
            rec = json.loads(_stored(other).read_text())
            old = [Figure(**f) for f in rec["figures"]]
            if old and not any("agentobs: spans lost" in f.name for f in old):    # records of before it was kept
                from ..analysis_contenders import ours as load
                path, n = realistic(other, "genai")
                old.append(summarize(f"{old[0].name.split(': ', 1)[0]}: agentobs: spans lost (in the file - read)",
                                     [n - load(path)], "spans", group=NAME))
            figs += old
            NOTES.extend(rec["notes"])
            if old:
                NOTES.append(f"{old[0].name.split(': ', 1)[0]}: measured in an earlier run, {rec['measured']} "
                             f"(load average {rec['load']:.1f})")
    for peer in PEERS:
        try:
            NOTES.append(f"{SHOWN[peer]} environment: " + ", ".join(f"{k} {v}" for k, v in envs.versions(peer).items()))
        except (OSError, subprocess.SubprocessError, ValueError) as exc:
            NOTES.append(f"{SHOWN[peer]} environment: not available ({exc})")
    return figs


def _measure(size: int) -> list[Figure]:
    figs: list[Figure] = []
    path, n = realistic(size, "genai")
    reqs = requests_for(path)
    label = f"{n:,} spans"
    ours = _ours(path)
    cli = [r["wall_s"] for r in ours["cli"]]
    api = [r["inner_s"] for r in ours["api"]]
    runs = ours["api"][0]["runs"]
    read = ours["api"][0]["spans"]
    figs += [summarize(f"{label}: agentobs runs FILE --out runs.csv (fresh process)", cli, "s", group=NAME,
                       notes=f"{runs:,} runs; wall time from outside, start-up included"),
             summarize(f"{label}: agentobs.analysis.analyze([FILE]) (imports excluded)", api, "s", group=NAME),
             summarize(f"{label}: agentobs: spans per second, file to runs table (CLI)", [n / x for x in cli],
                       "spans/s", group=NAME),
             summarize(f"{label}: agentobs: spans lost (in the file - read)", [n - read], "spans", group=NAME)]
    for peer in PEERS:
        name = SHOWN[peer]
        try:
            with tempfile.TemporaryDirectory(prefix=f"agentobs-bench-{peer}-") as d:
                res = RUNNERS[peer](reqs, Path(d))
        except (envs.PeerUnavailable, RuntimeError, OSError, subprocess.SubprocessError) as exc:
            NOTES.append(f"{label}, {name}: not measured: {' '.join(str(exc).split())[:600]}")
            continue
        sent: Sent = res["sent"]
        q = res["queries"]
        read = q[0]["spans"]
        query = [x["query_s"] for x in q]
        agg = [x["query_s"] + x["aggregate_s"] for x in q]
        answers = ", ".join(f"{k}: {v}" for k, v in sorted(sent.answers.items()))
        figs += [
            summarize(f"{label}: {name}: server start-up", [res["startup_s"]], "s", group=NAME),
            summarize(f"{label}: {name}: ingest rate (first request to last span stored)",
                      [res["stored"] / res["ingest_s"] if res["ingest_s"] else 0.0], "spans/s", group=NAME,
                      notes=f"{sent.spans_sent:,} spans sent in {sent.requests} requests, {sent.spans_accepted:,} "
                            f"accepted, {res['stored']:,} stored; answers {answers}; {sent.retries} retries, "
                            f"{sent.dropped_requests} requests dropped"),
            summarize(f"{label}: {name}: sender's rate (all requests answered)",
                      [sent.spans_sent / sent.seconds if sent.seconds else 0.0], "spans/s", group=NAME),
            summarize(f"{label}: {name}: spans lost (sent - read back)", [sent.spans_sent - read], "spans",
                      group=NAME, notes=f"{read:,} spans in the DataFrame; {q[0]['runs']:,} traces aggregated"),
            summarize(f"{label}: {name}: query to a DataFrame", query, "s", group=NAME,
                      notes=f"the process, imports included: {q[0]['wall_s']:.1f} s"),
            summarize(f"{label}: {name}: query + per-run aggregation in pandas", agg, "s", group=NAME),
            ratio(f"{label}: {name} query + aggregation / agentobs analyze()", agg, api[:len(agg)], group=NAME),
            ratio(f"{label}: {name} ingest + query + aggregation / agentobs runs (CLI)",
                  [res["ingest_s"] + a for a in agg], cli[:len(agg)], group=NAME,
                  notes="from a file of traces to a per-run table"),
        ]
    return figs


def summary(figures: list[Figure]) -> str:
    med = {f.name: f for f in figures}
    labels = sorted({f.name.split(": ", 1)[0] for f in figures}, key=lambda s: int(s.split()[0].replace(",", "")))
    L = ["Reproduce (builds the peers' environments under `~/.cache/agentobs/bench/peers` on first use; needs the "
         "package index):", "", "```sh",
         ".venv/bin/python -m bench.peers                      # prints the figures",
         ".venv/bin/python -m bench.run --only peers --update  # and rewrites this section of BENCHMARKS.md",
         "AGENTOBS_PEERS_SIZES=20000 .venv/bin/python -m bench.peers --update   # one size; the others kept",
         "AGENTOBS_PEERS_SIZES=none .venv/bin/python -m bench.peers --update    # the section again, measuring nothing",
         "```", ""]
    for label in labels:
        rows = []
        cli = med.get(f"{label}: agentobs runs FILE --out runs.csv (fresh process)")
        api = med.get(f"{label}: agentobs.analysis.analyze([FILE]) (imports excluded)")
        for peer in PEERS:
            name = SHOWN[peer]
            rate = med.get(f"{label}: {name}: ingest rate (first request to last span stored)")
            if rate is None:
                continue
            lost = med[f"{label}: {name}: spans lost (sent - read back)"].median
            q = med[f"{label}: {name}: query to a DataFrame"].median
            qa = med[f"{label}: {name}: query + per-run aggregation in pandas"].median
            r1 = med[f"{label}: {name} query + aggregation / agentobs analyze()"].median
            r2 = med[f"{label}: {name} ingest + query + aggregation / agentobs runs (CLI)"].median
            rows.append(f"| {name} | {rate.median:,.0f} spans/s | {lost:,.0f} | {q:.1f} s | {qa:.1f} s | "
                        f"{r1:.1f} x | {r2:.0f} x |")
        if cli and api:
            lost = med.get(f"{label}: agentobs: spans lost (in the file - read)")
            rows.append(f"| agentobs | (reads the file) | {'—' if lost is None else f'{lost.median:,.0f}'} | — | "
                        f"{api.median:.1f} s (`analyze`), {cli.median:.1f} s (`agentobs runs`) | 1 | 1 |")
        L += [f"#### {label}", "", "| | ingest rate | spans lost | query to DataFrame | query + per-run table | "
              "/ agentobs analyze() | file to per-run table, / agentobs runs |", "| --- | ---: | ---: | ---: | ---: | "
              "---: | ---: |", *rows, ""]
    L += [f"- {n}" for n in NOTES]
    return "\n".join(L)
