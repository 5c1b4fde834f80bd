"""The peers' own virtual environments, built once under ``bench.common.cache_dir()/peers`` with pinned versions.

Each peer runs in its own interpreter, so nothing of theirs (their OpenTelemetry, pandas, SQLAlchemy pins)
touches ours. ``ensure(peer)`` creates the environment with ``python -m venv`` and installs the pinned
requirements with pip from the package index (the only network access of the benchmark); ``versions(peer)``
reads back what was installed, for the record.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ..common import cache_dir

PINS: dict[str, list[str]] = {
    "mlflow": ["mlflow==3.17.2"],
    "phoenix": ["arize-phoenix==20.26.1", "arize-phoenix-client==3.5.0"],
}
# what to read back and show, per peer
SHOWN: dict[str, list[str]] = {
    "mlflow": ["mlflow", "mlflow-skinny", "mlflow-tracing", "pandas", "sqlalchemy", "opentelemetry-sdk"],
    "phoenix": ["arize-phoenix", "arize-phoenix-client", "pandas", "sqlalchemy", "opentelemetry-sdk"],
}


class PeerUnavailable(RuntimeError):
    """A peer's environment could not be built; the message says why."""


def env_dir(peer: str) -> Path:
    return Path(cache_dir()) / "peers" / f"{peer}-{PINS[peer][0].split('==')[1]}"


def python(peer: str) -> Path:
    return env_dir(peer) / "bin" / "python"


def ensure(peer: str, log: Path | None = None) -> Path:
    """The peer's interpreter, its environment built first if needed."""
    d = env_dir(peer)
    done = d / ".agentobs-installed"
    if done.exists() and done.read_text() == json.dumps(PINS[peer]):
        return python(peer)
    d.parent.mkdir(parents=True, exist_ok=True)
    out = open(log, "a") if log else subprocess.DEVNULL  # noqa: SIM115 - closed in finally
    try:
        if not python(peer).exists():
            subprocess.run([sys.executable, "-m", "venv", str(d)], check=True, stdout=out, stderr=out)
        pip = [str(python(peer)), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
        r = subprocess.run([*pip, *PINS[peer]], stdout=out, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            raise PeerUnavailable(f"pip install {' '.join(PINS[peer])} failed: {r.stderr.strip()[-800:]}")
    finally:
        if log:
            out.close()   # type: ignore[union-attr]
    done.write_text(json.dumps(PINS[peer]))
    return python(peer)


def versions(peer: str) -> dict[str, str]:
    code = ("import json,sys\nfrom importlib import metadata\nout={}\nfor p in sys.argv[1:]:\n"
            "    try: out[p]=metadata.version(p)\n"
            "    except metadata.PackageNotFoundError: pass\nprint(json.dumps(out))")
    r = subprocess.run([str(python(peer)), "-c", code, *SHOWN[peer]], capture_output=True, text=True, check=True,
                       env={**os.environ, "PYTHONNOUSERSITE": "1"})
    return json.loads(r.stdout)
