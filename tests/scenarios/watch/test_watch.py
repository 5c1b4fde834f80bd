"""``agentobs watch``: runs checked against their caps while they run.

- what the watch reports of a file equals what the batch analysis of the same file says crossed the caps (a
  replay, and a file a running ``agentobs simulate`` appends to), and since when is the end of the very span that
  took the run past the cap;
- a live population (real kernel runs in real time, some runaways) written to a file: every runaway is reported
  while it still runs, no normal run is;
- rotation under a running watch; ``--fail-fast``; Ctrl-C and SIGTERM stop it with a summary;
- finished runs are let go (by their root, or idle), and memory stays flat over a stream ten times longer.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from cli_process import CLI, child_env
from locations import ROOT

from agentobs.analysis import derive_runs, load_sources
from agentobs.analysis.watch import Batch, Settings, Watcher, open_source, read_caps, watch
from agentobs.analysis.watch.caps import Cap
from bench.watch_data import TICK_NS, Stream, write

CHILD = [sys.executable, str(ROOT / "tests" / "watch_child.py")]
STEP_CAP = Cap(limit="max_steps", dimension="steps", value=15)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory) -> tuple[Path, Path]:
    """A simulated population and the caps `agentobs caps --emit budget` writes for it."""
    d = tmp_path_factory.mktemp("watch")
    traces = d / "base.jsonl"
    subprocess.run([*CLI, "simulate", "--runs", "600", "--seed", "3", "--traces-out", str(traces), "--manifest",
                    str(d / "base-m.json")], check=True, capture_output=True, env=child_env())
    done = subprocess.run([*CLI, "caps", str(traces), "--emit", "budget"], capture_output=True, text=True,
                          env=child_env(), check=True)
    caps = d / "caps.py"
    caps.write_text(done.stdout)
    return traces, caps


def crossings(path: Path, caps: list[Cap]) -> tuple[set[tuple[str, str]], dict[str, str]]:
    """(run id, limit) of every run of the batch analysis whose final value crosses a cap, computed from the runs
    table alone: what the watch must report; and the run id of each trace."""
    runs, _, _ = derive_runs(load_sources([str(path)]))
    out = set()
    for c in caps:
        v = runs[c.dimension].astype("Float64")
        hit = (v >= c.value) if c.at_cap else (v > c.value)
        out |= {(str(r), c.limit) for r in runs.loc[hit.fillna(False).to_numpy(), "run_id"]}
    run_of = {str(t): str(r) for r, traces in zip(runs["run_id"], runs["trace_ids"], strict=True) for t in traces}
    return out, run_of


def replay(path: Path, caps: list[Cap]) -> tuple[list, Watcher]:
    src = open_source(str(path), from_start=True)
    w = Watcher(caps)
    events = list(watch(src, w, Settings(interval_s=0.01, once=True)))
    src.close()
    return events, w


# -- the same caps crossed as the batch analysis finds ---------------------------------------------------------

def test_a_replayed_file_reports_what_the_batch_analysis_finds(baseline, tmp_path):
    _, caps_file = baseline
    caps = read_caps(caps_file)
    other = tmp_path / "other.jsonl"
    subprocess.run([*CLI, "simulate", "--runs", "300", "--seed", "11", "--traces-out", str(other), "--manifest",
                    str(tmp_path / "m.json")], check=True, capture_output=True, env=child_env())
    events, w = replay(other, caps)
    want, run_of = crossings(other, caps)
    got = [(run_of[e.trace_id], e.cap.limit) for e in events]
    assert want and len(got) == len(set(got))          # each run and cap once
    assert set(got) == want
    assert not w.seen and w.held.spans.empty          # every run ended: nothing is held


def test_a_selection_reports_only_the_runs_it_selects(baseline, tmp_path):
    """``--since``/``--until`` and the other filters of the batch commands (issue 46): the watch reports the crossings
    of the runs the batch analysis selects, and no other (the window's ends fall between two runs' starts)."""
    from agentobs.analysis.select.selection import Selection, select_runs
    _, caps_file = baseline
    caps = read_caps(caps_file)
    other = tmp_path / "other.jsonl"
    subprocess.run([*CLI, "simulate", "--runs", "300", "--seed", "11", "--traces-out", str(other), "--manifest",
                    str(tmp_path / "m.json")], check=True, capture_output=True, env=child_env())
    runs, spans, _ = derive_runs(load_sources([str(other)]))
    starts = sorted(runs["start"])
    since, until = ((starts[i] + (starts[i + 1] - starts[i]) / 2).floor("us") for i in (100, 220))
    sel = Selection(since=since.to_pydatetime(), until=until.to_pydatetime())
    picked = set(select_runs(runs, spans, sel)["run_id"].astype(str))
    assert len(picked) == 120
    src = open_source(str(other), from_start=True)
    w = Watcher(caps, selection=sel)
    events = list(watch(src, w, Settings(interval_s=0.01, once=True)))
    src.close()
    want, run_of = crossings(other, caps)
    got = {(run_of[e.trace_id], e.cap.limit) for e in events}
    assert got and got == {(r, limit) for r, limit in want if r in picked}
    done = subprocess.run([*CLI, "watch", str(other), "--caps", str(caps_file), "--from", "start", "--once",
                           "--format", "json", "--since", since.isoformat(), "--until", until.isoformat()],
                          capture_output=True, text=True, env=child_env(), check=True)
    lines = [json.loads(x) for x in done.stdout.splitlines()]
    assert {(run_of[x["trace_id"]], x["limit"]) for x in lines if x["event"] == "cap_crossed"} == got
    assert "only runs selected by --since" in done.stderr


def test_since_is_the_end_of_the_span_that_crossed(tmp_path):
    """A runaway's 16th model call takes it past max_steps=15: since = the end of the step span holding that call
    (the batch rules place a call in its run through the spans above it: the step, here, which ends just after the
    call and its tool call), found by bisection among the spans of the batch that showed it (a replay hands the
    whole file at once)."""
    s = Stream(runs=60, concurrent=8, runaway_every=6, runaway_steps=30, cross_at=16, seed=4)
    path = tmp_path / "s.jsonl"
    write(str(path), s)
    events, _ = replay(path, [STEP_CAP])
    assert {e.trace_id for e in events} == set(s.runaway_traces)
    for e in events:
        tick = s.crossing_tick[e.trace_id]
        step_end_ns = s.start_ns + (tick + 1) * TICK_NS - 1000
        assert e.crossed_at is not None and round(e.crossed_at.timestamp() * 1e6) == step_end_ns // 1000
        assert e.value == 30 and not e.running            # seen at the end: the whole run was in the batch


def test_a_stream_read_line_by_line_reports_runaways_while_they_run(tmp_path):
    """Each line is an export batch: fed one at a time, a runaway is reported at its 16th model call, with its
    root span still to come, and every finished trace is let go."""
    s = Stream(runs=40, concurrent=6, runaway_every=5, runaway_steps=25, cross_at=16, seed=5)
    w = Watcher([STEP_CAP])
    from agentobs.analysis.otlp.load import load_bytes
    seen: dict[str, int] = {}
    for tick, line in enumerate(s.lines()):
        for e in w.ingest(Batch(spans=load_bytes(line, "s"), arrived=time.time())):
            seen[e.trace_id] = tick
            assert e.running and e.value == 16 and e.run_id == e.trace_id
    assert seen == s.crossing_tick
    assert not w.seen and w.stats.runs_finished >= 40 and w.stats.held_traces_max <= 6 + 1


def test_an_idle_trace_is_let_go(tmp_path):
    s = Stream(runs=1, concurrent=1, steps=(5, 5), seed=6)
    lines = list(s.lines())
    now = [0.0]
    w = Watcher([STEP_CAP], idle_s=30, clock=lambda: now[0])
    from agentobs.analysis.otlp.load import load_bytes
    for line in lines[:3]:                              # three steps, no root: in flight
        w.ingest(Batch(spans=load_bytes(line, "s"), arrived=0.0))
    assert len(w.seen) == 1 and not w.held.spans.empty
    now[0] = 29
    assert w.expire() == 0
    now[0] = 31
    assert w.expire() == 1 and w.held.spans.empty and w.stats.traces_idle == 1


def test_polled_whole_traces_replace_what_is_held_and_are_not_reported_twice(tmp_path):
    """Jaeger answers hold whole traces, again and again while they are in the window: a trace is derived again only
    when its spans changed, a cap is reported once, and a trace let go is not taken up again."""
    s = Stream(runs=3, concurrent=3, runaway_every=3, runaway_steps=20, cross_at=16, seed=7)
    path = tmp_path / "s.jsonl"
    write(str(path), s)
    lines = path.read_bytes().splitlines(keepends=True)
    from agentobs.analysis.otlp.load import load_bytes
    w = Watcher([STEP_CAP], done_s=60)
    events = []
    for k in range(1, len(lines) + 1):
        whole = load_bytes(b"".join(lines[:k]), "jaeger")      # what Jaeger holds after k export batches
        for _ in range(2):                                       # each answer seen twice
            events += w.ingest(Batch(spans=whole, arrived=time.time(), replace=True))
    assert [e.trace_id for e in events] == s.runaway_traces
    assert not w.seen and set(w.done) == set(s.runaway_traces + s.normal_traces)
    again = w.ingest(Batch(spans=load_bytes(b"".join(lines), "jaeger"), arrived=time.time(), replace=True))
    assert again == [] and w.held.spans.empty


def test_bad_lines_cost_only_themselves_and_a_failing_batch_never_ends_the_watch(tmp_path, monkeypatch):
    s = Stream(runs=12, concurrent=4, runaway_every=4, runaway_steps=20, cross_at=16, seed=9)
    lines = list(s.lines())
    path = tmp_path / "s.jsonl"
    junk = [b"not json at all\n", b'{"resourceSpans": [{"scopeSpans": "no"}]}\n', b'{"truncated": \n', b"\xff\xfe\n"]
    path.write_bytes(b"".join(line + junk[i % len(junk)] for i, line in enumerate(lines)))
    events, w = replay(path, [STEP_CAP])
    assert {e.trace_id for e in events} == set(s.runaway_traces)
    assert w.stats.source_issues >= 3 and w.stats.failed_traces == 0
    import agentobs.analysis.watch.inflight as inflight
    real, calls = inflight.derive, [0]

    def flaky(*a):
        calls[0] += 1
        if calls[0] == 2:
            raise ValueError("a bug in a derivation")
        return real(*a)
    monkeypatch.setattr(inflight, "derive", flaky)
    events, w = replay(path, [STEP_CAP])
    assert w.stats.failed_traces > 0 and "ValueError: a bug in a derivation" in (w.stats.first_failure or "")
    assert "traces let go unchecked" in w.stats.line()


# -- live: a growing file --------------------------------------------------------------------------------------

class Watching:
    """``agentobs watch`` in a child process; its stdout lines collected with the time each arrived."""

    def __init__(self, *args: str):
        self.proc = subprocess.Popen([*CLI, "watch", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=child_env())
        self.lines: list[tuple[float, str]] = []
        self._t = threading.Thread(target=self._read, daemon=True)
        self._t.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append((time.time(), line))

    def stop(self, sig: int = signal.SIGINT) -> tuple[int, str]:
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        self._t.join(timeout=10)
        assert self.proc.stderr is not None
        return rc, self.proc.stderr.read()

    def settle(self, done, timeout: float = 120) -> None:
        """Waits until ``done()`` (the watch caught up with what was written), then 1 s more for anything extra."""
        deadline = time.time() + timeout
        while not done() and time.time() < deadline:
            time.sleep(0.25)
        time.sleep(1)

    def events(self) -> list[dict]:
        return [d for _, line in self.lines if (d := json.loads(line))["event"] == "cap_crossed"]

    def started(self, timeout: float = 30) -> None:
        """Waits until the watch has read its caps and opened its source (its first line on stderr)."""
        assert self.proc.stderr is not None
        deadline = time.time() + timeout
        line = self.proc.stderr.readline()
        assert "watching" in line or time.time() > deadline, line


def test_a_file_a_running_simulation_appends_to(baseline, tmp_path):
    """`agentobs simulate` writing its traces file while `agentobs watch` follows it: the events are exactly the
    batch analysis's crossings of the finished file."""
    _, caps_file = baseline
    live = tmp_path / "live.jsonl"
    live.touch()
    w = Watching(str(live), "--caps", str(caps_file), "--format", "json")
    w.started()
    subprocess.run([*CLI, "simulate", "--runs", "400", "--seed", "5", "--traces-out", str(live), "--manifest",
                    str(tmp_path / "m.json")], check=True, capture_output=True,
                   env=child_env(OTEL_BSP_SCHEDULE_DELAY="100"))
    want, run_of = crossings(live, read_caps(caps_file))
    w.settle(lambda: {(run_of[e["trace_id"]], e["limit"]) for e in w.events()} >= want)
    rc, err = w.stop()
    assert rc == 0, err
    got = [(run_of[e["trace_id"]], e["limit"]) for e in w.events()]
    assert want and len(got) == len(set(got)) and set(got) == want
    assert "watched" in err and w.lines[-1][1].startswith('{"event": "summary"')


def test_live_runaways_are_reported_while_they_run_and_normal_runs_never(baseline, tmp_path):
    """Real kernel runs in real time written to a file (the kernel's own exporter, 100 ms batches): each runaway is
    reported before it ends, with its root span still to come; no normal run is reported."""
    _, caps_file = baseline
    live = tmp_path / "live.jsonl"
    live.touch()
    w = Watching(str(live), "--caps", str(caps_file), "--format", "json")
    w.started()
    child = subprocess.run([*CHILD, "--traces-out", str(live), "--normal", "8", "--runaway", "3", "--delay", "0.06"],
                           capture_output=True, text=True, env=child_env(OTEL_BSP_SCHEDULE_DELAY="100"), timeout=300)
    assert child.returncode == 0, child.stderr
    ran = [json.loads(x) for x in child.stdout.splitlines()]
    w.settle(lambda: {r["trace_id"] for r in ran if r["kind"] == "runaway"} <= {e["trace_id"] for e in w.events()})
    rc, err = w.stop(signal.SIGTERM)
    assert rc == 0, err
    runaway = {r["trace_id"]: r for r in ran if r["kind"] == "runaway"}
    normal = {r["trace_id"] for r in ran if r["kind"] == "normal"}
    assert len(runaway) == 3 and len(normal) == 8
    events = w.events()
    assert not {e["trace_id"] for e in events} & normal, "a normal run was reported"
    for trace, r in runaway.items():
        mine = [e for e in events if e["trace_id"] == trace]
        assert mine, f"runaway {r['task_id']} was not reported"
        first = min(mine, key=lambda e: e["reported_at"])
        assert first["running"], first
        reported = _unix(first["reported_at"])
        assert reported < r["ended_at"], (first, r)        # while it ran
        assert first["delay_s"] >= 0 and _unix(first["crossed_at"]) <= reported


def _unix(iso: str) -> float:
    from datetime import datetime
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def test_a_folder_whose_file_is_rotated_under_the_watch(baseline, tmp_path):
    """The collector's rotation while the watch follows the folder: lines go to traces.jsonl, which is renamed
    traces-<time>.jsonl half way, a new traces.jsonl taking the rest. The events are those of the whole file."""
    _, caps_file = baseline
    caps = read_caps(caps_file)
    whole = tmp_path / "whole.jsonl"
    subprocess.run([*CLI, "simulate", "--runs", "300", "--seed", "9", "--traces-out", str(whole), "--manifest",
                    str(tmp_path / "m.json")], check=True, capture_output=True,
                   env=child_env(OTEL_BSP_MAX_EXPORT_BATCH_SIZE="64"))
    lines = whole.read_bytes().splitlines(keepends=True)
    expected = {(e.trace_id, e.cap.limit) for e in replay(whole, caps)[0]}
    archive = tmp_path / "archive"
    archive.mkdir()
    active = archive / "traces.jsonl"
    active.touch()
    w = Watching(str(archive), "--caps", str(caps_file), "--format", "json")
    w.started()
    half = len(lines) // 2
    for i, line in enumerate(lines):
        with active.open("ab") as f:
            f.write(line)
        if i == half:
            active.rename(archive / "traces-2026-01-01T00-00-00.000.jsonl")
            active.touch()
        time.sleep(0.01)
    w.settle(lambda: {(e["trace_id"], e["limit"]) for e in w.events()} >= expected)
    rc, err = w.stop()
    assert rc == 0, err
    assert {(e["trace_id"], e["limit"]) for e in w.events()} == expected


def test_fail_fast_exits_at_the_first_event(baseline, tmp_path):
    _, caps_file = baseline
    s = Stream(runs=30, concurrent=5, runaway_every=5, runaway_steps=20, cross_at=16, seed=8)
    path = tmp_path / "s.jsonl"
    write(str(path), s)
    done = subprocess.run([*CLI, "watch", str(path), "--caps", str(caps_file), "--from", "start", "--fail-fast"],
                          capture_output=True, text=True, env=child_env(), timeout=120)
    assert done.returncode == 1, done.stderr
    assert len(done.stdout.splitlines()) == 1 and " run " in done.stdout
    calm = subprocess.run([*CLI, "watch", str(path), "--max-wall-s", "3600", "--from", "start", "--once",
                           "--fail-fast"], capture_output=True, text=True, env=child_env(), timeout=120)
    assert calm.returncode == 0 and calm.stdout == "", calm.stderr


# -- memory over a long stream -----------------------------------------------------------------------------------

PEAK = ("import atexit, sys\n"
        "def peak():\n"
        "    for line in open('/proc/self/status'):\n"
        "        if line.startswith('VmHWM:'):\n"
        "            sys.stderr.write('PEAK ' + line.split()[1] + '\\n')\n"
        "atexit.register(peak)\n"
        "from agentobs.cli.main import main\n"
        "main()\n")


def peak_kib(path: Path, caps: Path) -> int:
    done = subprocess.run([sys.executable, "-c", PEAK, "watch", str(path), "--caps", str(caps), "--from", "start",
                           "--once", "--format", "json"], capture_output=True, text=True, env=child_env(), timeout=900)
    assert done.returncode == 0, done.stderr
    return int(next(x for x in done.stderr.splitlines() if x.startswith("PEAK "))[5:])


def test_memory_stays_flat_over_a_stream_ten_times_longer(tmp_path):
    """The peak resident size of the watch over a stream of 300 runs and of 3,000 (50 in flight at any time, one
    in 20 a runaway): finished runs are let go, so the longer stream costs no more memory."""
    caps = tmp_path / "caps.py"
    caps.write_text("budget = Budget(max_steps=15)  # cuts off 0.5% of 1000 successful runs\n")
    short, long_ = tmp_path / "short.jsonl", tmp_path / "long.jsonl"
    write(str(short), Stream(runs=300, runaway_every=20, cross_at=16, seed=1))
    write(str(long_), Stream(runs=3000, runaway_every=20, cross_at=16, seed=2))
    a, b = peak_kib(short, caps), peak_kib(long_, caps)
    assert b <= a * 1.15 + 8 * 1024, (a, b)
