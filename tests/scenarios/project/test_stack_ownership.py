"""`scripts/stack.sh down` stops only what its own run folder started (issue 43, point 9), without building anything.

`down` used to take any listener on its ports whose binary sat in the shared build cache for an orphan of its own
and stop it: another checkout's collector and Jaeger, run from the same cache. A service is now ours only when our
run folder's pid file names it with its start time (field 22 of /proc/PID/stat), so neither a process found by its
binary's path nor a pid the system gave to another process since is ever signalled. Here the "other checkout's
collector" is a copy of the Python interpreter placed where the cache keeps the collector's binary, listening on
a port; the processes a pid file names are `sleep`s. Every port the script looks at is a free one of its own.
(tests/scenarios/stack/test_stack_script.py runs two real stacks side by side.)"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import textwrap
import time
from pathlib import Path

import pytest
from locations import ROOT

SCRIPT = ROOT / "scripts" / "stack.sh"

pytestmark = pytest.mark.skipif(not (Path("/proc/self/stat").exists() and shutil.which("bash") and shutil.which("ss")
                                     and shutil.which("flock")),
                                reason="needs Linux's /proc, bash, ss and flock")

LISTENER = textwrap.dedent("""
    import socket, sys, time
    s = socket.socket()
    s.bind(("127.0.0.1", int(sys.argv[1])))
    s.listen()
    print("listening", flush=True)
    time.sleep(600)
""")


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _settings() -> list[str]:
    done = subprocess.run([str(SCRIPT), "ports"], capture_output=True, text=True, check=True)
    return [line.split()[1] for line in done.stdout.splitlines()]


@pytest.fixture()
def stack_env(tmp_path):
    """The environment of a run folder of our own: its own cache, every port a free one."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTOBS_", "JAEGER_", "OTEL_"))}
    names = _settings()
    env.update(zip(names, map(str, _free_ports(len(names))), strict=True))
    env["AGENTOBS_STACK_RUN"] = str(tmp_path / "run")
    env["AGENTOBS_STACK_CACHE"] = str(tmp_path / "cache")
    return env


def _down(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(SCRIPT), "down"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


def _start_time(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rpartition(") ")[2].split()[19]


def _alive(proc: subprocess.Popen) -> bool:
    return proc.poll() is None


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=10)


def test_a_listener_run_from_the_shared_cache_is_named_never_stopped(stack_env, tmp_path):
    """Another checkout's collector, its binary in the cache both checkouts share, listens on a port this run folder
    is configured for; this run folder started nothing. `down` leaves it running and says whose port it is."""
    cache_bin = tmp_path / "cache" / "collector-0.161.0-0123456789ab" / "agentobs-otelcol"
    cache_bin.parent.mkdir(parents=True)
    real = Path(sys.executable).resolve()
    shutil.copy2(real, cache_bin)
    port = int(stack_env["AGENTOBS_COLLECTOR_OTLP_GRPC_PORT"])
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    other = subprocess.Popen([str(cache_bin), "-c", LISTENER, str(port)], stdout=subprocess.PIPE, text=True,
                             cwd=tmp_path, env={**os.environ, "PYTHONHOME": sys.base_prefix,
                                                "LD_LIBRARY_PATH": libdir}, start_new_session=True)
    try:
        assert other.stdout is not None and other.stdout.readline().strip() == "listening"
        assert os.readlink(f"/proc/{other.pid}/exe") == str(cache_bin)
        done = _down(stack_env)
        time.sleep(0.3)
        assert _alive(other), done.stderr
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            pass
        assert (f"warning: port {port} (AGENTOBS_COLLECTOR_OTLP_GRPC_PORT) is held by pid {other.pid}"
                in done.stderr), done.stderr
        assert "left running" in done.stderr and "orphan" not in done.stderr
    finally:
        _stop(other)


def _pidfile(env: dict[str, str], service: str, text: str) -> Path:
    f = Path(env["AGENTOBS_STACK_RUN"]) / "pids" / f"{service}.pid"
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(text)
    return f


@pytest.mark.parametrize("content", ["wrong start", "legacy elsewhere"])
def test_a_pid_file_naming_someone_elses_process_stops_nothing(stack_env, tmp_path, content):
    """The pid was given to another process since ours ended (its start time differs), or an older stack.sh's pid
    file (no start time) names a process that does not run in this run folder: left alone, the stale file
    removed."""
    sleeper = subprocess.Popen(["sleep", "300"], cwd=tmp_path, start_new_session=True)
    try:
        text = (f"{sleeper.pid} {int(_start_time(sleeper.pid)) + 1}\n" if content == "wrong start"
                else f"{sleeper.pid}\n")
        f = _pidfile(stack_env, "jaeger", text)
        done = _down(stack_env)
        time.sleep(0.3)
        assert _alive(sleeper), done.stderr
        assert not f.exists() and "jaeger: not running" in done.stderr
    finally:
        _stop(sleeper)


@pytest.mark.parametrize("content", ["pid and start", "legacy in the run folder"])
def test_a_process_this_run_folder_started_is_stopped(stack_env, content):
    """The pid file's process with its start time (or an older stack.sh's pid file whose process runs in this run
    folder, where the script starts every service): SIGTERM, and the file goes."""
    run = Path(stack_env["AGENTOBS_STACK_RUN"])
    run.mkdir(parents=True, exist_ok=True)
    sleeper = subprocess.Popen(["sleep", "300"], cwd=run, start_new_session=True)
    try:
        text = f"{sleeper.pid} {_start_time(sleeper.pid)}\n" if content == "pid and start" else f"{sleeper.pid}\n"
        f = _pidfile(stack_env, "collector", text)
        done = _down(stack_env)
        assert sleeper.wait(timeout=10) == -signal.SIGTERM, done.stderr
        assert not f.exists() and f"collector: stopped (pid {sleeper.pid})" in done.stderr
    finally:
        _stop(sleeper)
