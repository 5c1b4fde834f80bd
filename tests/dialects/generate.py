"""Regenerate the dialect fixtures: ``python tests/dialects/generate.py [name ...]`` (all when none named).

Each dialect's driver ``gen_<name>.py`` runs in its own virtualenv, built on first use (and reused after)
under ``~/.cache/agentobs/dialects/<name>-<hash>`` (``$AGENTOBS_DIALECT_VENVS`` overrides the folder) from the
pinned ``requirements/<name>.txt`` plus this repository (``pip install -e``; with ``--no-deps`` when the file
has the line ``# agentobs: no-deps``), so the drivers can use ``agentobs.telemetry.otlp_json``. The hash covers
the requirements file and the Python version: bumping an instrumentation is one edit of its requirements file
and one command. Finally VERSIONS.md is rewritten from the truth files.

A JavaScript dialect is a folder ``js/<name>/`` (package.json with exact versions, package-lock.json,
driver.mjs) beside its ``gen_<name>.py``: its node_modules are installed with ``npm ci`` under
``~/.cache/agentobs/dialects/js-<name>-<hash>`` (``js_harness.install``) and ``gen_<name>.py`` runs with this
Python (the project's environment: it needs only opentelemetry-proto), starting the scripted server, the OTLP
receiver and Node.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
REQS = HERE / "requirements"
JS = HERE / "js"
FIXTURES = HERE / "fixtures"


def python_dialects() -> list[str]:
    return sorted(p.stem for p in REQS.glob("*.txt"))


def js_dialects() -> list[str]:
    return sorted(p.parent.name for p in JS.glob("*/package.json"))


def dialects() -> list[str]:
    return sorted(python_dialects() + js_dialects())


def venv_root() -> Path:
    return Path(os.environ.get("AGENTOBS_DIALECT_VENVS") or Path.home() / ".cache" / "agentobs" / "dialects")


def venv_python(name: str) -> Path:
    req = REQS / f"{name}.txt"
    key = hashlib.sha256(req.read_bytes() + sys.version.encode()).hexdigest()[:12]
    root = venv_root() / f"{name}-{key}"
    python = root / "bin" / "python"
    marker = root / ".installed"
    if not marker.exists():
        print(f"{name}: building {root} (pip install from PyPI)", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(root)], check=True)
        pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        if "# agentobs: no-deps" in req.read_text():
            # the framework pins OpenTelemetry below what agentobs needs: agentobs goes in without its
            # dependencies and the driver loads agentobs/telemetry/otlp_json.py by itself (common.encoder)
            subprocess.run([*pip, "-r", str(req)], check=True)
            subprocess.run([*pip, "--no-deps", "-e", str(REPO)], check=True)
        else:
            subprocess.run([*pip, "-r", str(req), "-e", str(REPO)], check=True)
        marker.write_text(req.read_text())
    return python


def generate(name: str) -> None:
    driver = HERE / f"gen_{name}.py"
    if not driver.exists():
        raise SystemExit(f"{name}: no driver {driver.name} beside requirements/{name}.txt")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_", "LANGFUSE_", "MLFLOW_",
                                                                     "TRACELOOP_", "LANGCHAIN_", "LANGSMITH_"))}
    env["PYTHONPATH"] = str(HERE)
    env["PYTHONHASHSEED"] = "0"
    if name in js_dialects():
        import js_harness
        env["DIALECT_NODE_ROOT"] = str(js_harness.install(name))
        python = Path(sys.executable)
    else:
        python = venv_python(name)
    subprocess.run([str(python), str(driver)], cwd=str(HERE), env=env, check=True, timeout=900)


def write_versions() -> None:
    rows = ["# Versions used for the dialect fixtures", "",
            "Written by `generate.py` from the truth files (the packages installed in each dialect's venv).", ""]
    for truth in sorted(FIXTURES.glob("*.truth.json")):
        t = json.loads(truth.read_text())
        pk = ", ".join(f"{k} {v}" for k, v in t["packages"].items())
        runtime = f"Node {t['node']}" if t.get("node") else f"Python {t['python']}"
        rows.append(f"- **{t['dialect']}** ({runtime}): {pk}")
    (FIXTURES / "VERSIONS.md").write_text("\n".join(rows) + "\n")


def main(argv: list[str]) -> int:
    names = argv or dialects()
    unknown = [n for n in names if n not in dialects()]
    if unknown:
        print(f"unknown dialect(s) {', '.join(unknown)}; known: {', '.join(dialects())}", file=sys.stderr)
        return 2
    failed = []
    for n in names:
        try:
            generate(n)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, SystemExit) as e:
            print(f"{n}: generation failed ({e})", file=sys.stderr)
            failed.append(n)
    write_versions()
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
