"""scripts/stack.sh itself, on a SECOND instance (its own ports and run folder) beside the main stack, which keeps
running: `up` starts and waits for health, a second `up` is harmless and fast, `status` reports it, `down` leaves
no process and no listening port behind; and two private stacks side by side, where `down` stops only what its
own run folder started."""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from stackutil import STACK_PORT_SETTINGS, STACK_SCRIPT, PrivateStack, free_ports, healthy, listening

pytestmark = pytest.mark.stack

SCRIPT, PORT_SETTINGS = STACK_SCRIPT, STACK_PORT_SETTINGS


def _run(env: dict[str, str], *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=timeout)


def _exports(stdout: str) -> dict[str, str]:
    out = {}
    for line in stdout.splitlines():
        if line.startswith("export ") and "=" in line:
            k, v = line[len("export "):].split("=", 1)
            out[k] = v.strip("'")
    return out


@pytest.fixture
def second(stack, tmp_path):
    """The environment of a second instance: the main stack's exports removed, every port free, its own run
    folder (pids, logs, archive, Prometheus data); the built binaries are shared (the cache)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AGENTOBS_", "JAEGER_", "OTEL_")) and k != "PROMETHEUS_URL"}
    ports = dict(zip(PORT_SETTINGS, free_ports(len(PORT_SETTINGS)), strict=True))
    env.update({k: str(v) for k, v in ports.items()})
    env["AGENTOBS_STACK_RUN"] = str(tmp_path / "run")
    if os.environ.get("AGENTOBS_STACK_CACHE"):
        env["AGENTOBS_STACK_CACHE"] = os.environ["AGENTOBS_STACK_CACHE"]
    yield env, ports
    _run(env, "down", timeout=120)                  # whatever happened above


def _pids(run: Path) -> dict[str, int]:
    return {p.stem: int(p.read_text().split()[0]) for p in (run / "pids").glob("*.pid")}    # "PID START"


def test_a_second_instance_starts_twice_harmlessly_and_stops_without_leftovers(stack, second):
    env, ports = second
    run = Path(env["AGENTOBS_STACK_RUN"])
    listed = _run(env, "ports")
    assert listed.returncode == 0, listed.stderr
    assert {ln.split()[1]: int(ln.split()[0]) for ln in listed.stdout.splitlines()} == ports
    assert not any(listening(p) for p in ports.values())

    first = _run(env, "up")
    assert first.returncode == 0, first.stderr
    exports = _exports(first.stdout)
    assert exports["JAEGER_URL"] == f"http://127.0.0.1:{ports['AGENTOBS_JAEGER_QUERY_HTTP_PORT']}"
    assert exports["PROMETHEUS_URL"] == f"http://127.0.0.1:{ports['AGENTOBS_PROMETHEUS_PORT']}"
    assert exports["AGENTOBS_COLLECTOR_ARCHIVE"].startswith(str(run))
    assert (run / "stack.env").read_text().strip() == first.stdout.strip()
    for url in (exports["AGENTOBS_COLLECTOR_HEALTH_URL"], exports["JAEGER_HEALTH_URL"],
                exports["PROMETHEUS_URL"] + "/-/ready"):
        assert healthy(url), url
    pids = _pids(run)
    assert set(pids) == {"collector", "jaeger", "prometheus"}
    assert all(listening(p) for p in ports.values()), {k: p for k, p in ports.items() if not listening(p)}
    # the main stack is untouched
    assert healthy(stack.env["JAEGER_HEALTH_URL"]) and healthy(stack.env["AGENTOBS_COLLECTOR_HEALTH_URL"])

    t0 = time.monotonic()
    again = _run(env, "up")
    took = time.monotonic() - t0
    assert again.returncode == 0, again.stderr
    assert again.stdout == first.stdout
    assert _pids(run) == pids                        # nothing restarted
    assert again.stderr.count("already running and healthy") == 3, again.stderr
    assert took < 15, f"a second up took {took:.1f}s"

    status = _run(env, "status")
    assert status.returncode == 0, status.stdout + status.stderr
    lines = status.stdout.splitlines()
    assert len(lines) == 3 and all("healthy (pid " in ln for ln in lines), status.stdout
    for name, pid in pids.items():
        assert f"pid {pid})" in next(ln for ln in lines if ln.startswith(name))

    down = _run(env, "down", timeout=120)
    assert down.returncode == 0, down.stderr
    assert "stack is down" in down.stderr
    for name, pid in pids.items():
        assert not _alive(pid), f"{name} (pid {pid}) still running"      # (a zombie init has not reaped yet: gone)
    still = {k: p for k, p in ports.items() if listening(p)}
    assert not still, f"ports still listening after down: {still}"
    assert not list((run / "pids").glob("*.pid"))
    status = _run(env, "status")
    assert status.returncode != 0 and status.stdout.count("stopped") == 3, status.stdout
    # the main stack still runs
    assert healthy(stack.env["JAEGER_HEALTH_URL"]) and healthy(stack.env["AGENTOBS_COLLECTOR_HEALTH_URL"])
    assert healthy(stack.prometheus + "/-/ready")


def test_up_refuses_a_port_in_use_and_leaves_nothing_running(stack, second):
    """A port taken by something else: `up` fails with the port's setting name, before starting anything."""
    env, ports = second
    import socket
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", ports["AGENTOBS_PROMETHEUS_PORT"]))
        s.listen()
        failed = _run(env, "up")
    assert failed.returncode != 0
    assert "AGENTOBS_PROMETHEUS_PORT" in failed.stderr, failed.stderr
    run = Path(env["AGENTOBS_STACK_RUN"])
    assert not list((run / "pids").glob("*.pid"))
    assert not any(listening(p) for k, p in ports.items() if k != "AGENTOBS_PROMETHEUS_PORT")


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(") ")[2].split()[0] != "Z"
    except OSError:
        return False


def _answering(s: PrivateStack) -> bool:
    e = s.exports
    return all(healthy(u) for u in (e["AGENTOBS_COLLECTOR_HEALTH_URL"], e["JAEGER_HEALTH_URL"],
                                    e["PROMETHEUS_URL"] + "/-/ready"))


def test_down_stops_its_own_stack_and_never_another_one(tmp_path):
    """Two stacks from the same build cache, each with its own run folder and ports (as two checkouts): `down` in
    one stops its three services and leaves the other answering; `down` from a run folder that started nothing,
    configured on the other's ports (a checkout whose stack is not up), names the other's listeners and stops
    none of them. Needs no main stack."""
    a, b = PrivateStack(tmp_path / "a"), PrivateStack(tmp_path / "b")
    try:
        a.up()
        b.up()
        pa, pb = _pids(a.run), _pids(b.run)
        assert set(pa) == set(pb) == {"collector", "jaeger", "prometheus"} and not set(pa.values()) & set(pb.values())
        assert _answering(a) and _answering(b)

        down = a.script("down", timeout=120)
        assert down.returncode == 0, down.stderr
        assert not [name for name, pid in pa.items() if _alive(pid)], down.stderr
        assert not [k for k, p in a.ports.items() if listening(p)], down.stderr
        assert _answering(b) and all(_alive(pid) for pid in pb.values())
        assert _pids(b.run) == pb and b.script("status").returncode == 0

        stranger = {**a.env, **{k: str(v) for k, v in b.ports.items()}, "AGENTOBS_STACK_RUN": str(tmp_path / "c")}
        down = subprocess.run([str(SCRIPT), "down"], env=stranger, capture_output=True, text=True, timeout=120)
        assert down.returncode == 0, down.stderr
        assert _answering(b) and all(_alive(pid) for pid in pb.values()), down.stderr
        for pid in pb.values():
            assert f"held by pid {pid} " in down.stderr, down.stderr
        assert "stopped" not in down.stderr and "left running" in down.stderr
    finally:
        a.down()
        b.down()
    assert not [k for k, p in b.ports.items() if listening(p)]
