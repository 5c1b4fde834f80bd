"""A peer's server as a child process on 127.0.0.1: a free port, a temporary working folder, stopped at the end."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import IO


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """``cmd`` started in its own process group with ``env``, in ``cwd``; ``wait_ready(url)`` polls until an HTTP
    answer; ``stop()`` ends the group (SIGTERM, then SIGKILL)."""

    def __init__(self, cmd: list[str], env: dict[str, str], cwd: Path, log: Path):
        self.log: IO[bytes] = open(log, "ab")  # noqa: SIM115 - closed by stop()
        self.proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)

    def wait_ready(self, url: str, timeout: float = 300.0) -> float:
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited ({self.proc.returncode}) before answering {url}")
            try:
                with urllib.request.urlopen(url, timeout=5) as r:
                    r.read()
                    return time.monotonic() - t0
            except Exception:  # not up yet
                time.sleep(0.5)
        raise RuntimeError(f"{url} did not answer within {timeout:.0f} s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
            except ProcessLookupError:
                pass
        self.log.close()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
