"""The Python side of a JavaScript/TypeScript dialect fixture: install its node_modules, run its Node driver.

A JS fixture is ``js/<name>/`` (``package.json`` with exact versions, the committed ``package-lock.json``,
``driver.mjs``) plus ``gen_<name>.py`` here, which calls ``run_fixture``. That starts, on 127.0.0.1, the
``ScriptedServer``, the OTLP ``OtlpReceiver`` (the Node SDK exports to it over OTLP/HTTP protobuf) and a
``Control`` server through which the driver logs each tool execution, each sub-agent and each run's start and
end, into the same ``Recorder`` the Python drivers use: the truth is computed by the same code from the same
logs. The driver learns the server, receiver and control URLs and the runs to make (``DIALECT_PLAN``: a list of
{shape, keys}) from its environment, shared helpers come from ``js/common.mjs``.

node_modules are installed once with ``npm ci`` (from the lock; no install scripts) under
``~/.cache/agentobs/dialects/js-<name>-<hash of package.json, package-lock.json and the Node version>``
(``$AGENTOBS_DIALECT_VENVS`` moves the folder, as for the Python venvs); the driver and ``common.mjs`` are copied
beside them before each run, so that Node resolves the packages from there.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import common
from common import FIXTURES, PLAIN, SHAPE_OF, Recorder, Script, ScriptedServer
from receiver import OtlpReceiver

HERE = Path(__file__).resolve().parent
JS = HERE / "js"


def cache_root() -> Path:
    return Path(os.environ.get("AGENTOBS_DIALECT_VENVS") or Path.home() / ".cache" / "agentobs" / "dialects")


def node_version() -> str:
    try:
        return subprocess.run(["node", "--version"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit(f"node is needed for the JavaScript fixtures (Node 20 or later on PATH): {e}") from e


def install(name: str) -> Path:
    """The folder holding js/<name>'s node_modules, installed with ``npm ci`` on first use."""
    src = JS / name
    pkg, lock = src / "package.json", src / "package-lock.json"
    if not lock.exists():
        raise SystemExit(f"{name}: no package-lock.json beside js/{name}/package.json (run `npm install "
                         f"--package-lock-only --omit-lockfile-registry-resolved` there and commit it)")
    key = hashlib.sha256(pkg.read_bytes() + lock.read_bytes() + node_version().encode()).hexdigest()[:12]
    root = cache_root() / f"js-{name}-{key}"
    marker = root / ".installed"
    if not marker.exists():
        print(f"{name}: installing {root} (npm ci)", flush=True)
        if root.exists():
            shutil.rmtree(root)
        root.mkdir(parents=True)
        shutil.copy(pkg, root / "package.json")
        shutil.copy(lock, root / "package-lock.json")
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"], cwd=root,
                       check=True, timeout=900)
        marker.write_text(pkg.read_text())
    return root


def copy_sources(name: str, root: Path) -> Path:
    """js/*.mjs (common.mjs, openai_loop.mjs) and js/<name>/*.mjs into <root>/src/js/ (the same layout:
    ``../common.mjs`` resolves); returns the driver's path."""
    dest = root / "src" / "js"
    if dest.exists():
        shutil.rmtree(dest)
    (dest / name).mkdir(parents=True)
    for f in JS.glob("*.mjs"):
        shutil.copy(f, dest / f.name)
    for f in (JS / name).glob("*.mjs"):
        shutil.copy(f, dest / name / f.name)
    return dest / name / "driver.mjs"


def installed_versions(root: Path, name: str) -> dict[str, str]:
    """The version installed of each dependency named in js/<name>/package.json."""
    deps = json.loads((JS / name / "package.json").read_text()).get("dependencies", {})
    out = {}
    for dep in deps:
        meta = root / "node_modules" / dep / "package.json"
        out[dep] = json.loads(meta.read_text())["version"] if meta.exists() else "not installed"
    return out


class Control:
    """HTTP on 127.0.0.1 for the Node driver: ``POST /run/start`` {key, shape, group}, ``/run/end`` {key,
    raised}, ``/tool`` {run, tool, args, error}, ``/sub_agent`` {run, agent, how}; each answers ``{}``."""

    def __init__(self, rec: Recorder):
        lock = threading.Lock()

        def handle(path: str, m: dict) -> None:
            with lock:
                if path == "/run/start":
                    rec.start_run(m["key"], m["shape"], m.get("group"))
                elif path == "/run/end":
                    rec.end_run(m["key"], m.get("raised"))
                elif path == "/tool":
                    # the scripted tool failure raises here too: the driver's tool throws it itself
                    with contextlib.suppress(RuntimeError):
                        rec.tool(m["tool"], m.get("args") or {}, fail=bool(m.get("error")), run=m["run"])
                elif path == "/sub_agent":
                    rec.sub_agent(m["agent"], m.get("how", "agent_tool"), run=m["run"])
                else:
                    raise KeyError(path)

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: Any) -> None:
                pass

            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                try:
                    handle(self.path, json.loads(self.rfile.read(n) or b"{}"))
                    status, body = 200, b"{}"
                except (KeyError, ValueError) as e:
                    status, body = 400, json.dumps({"error": str(e)}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> Control:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def run_fixture(name: str, script: Script, plan: list[dict], *, notes: tuple[str, ...] = (),
                records_tokens: bool = True, env: dict[str, str] | None = None, out_dir: Path = FIXTURES) -> None:
    """Runs js/<name>/driver.mjs under Node for the runs of ``plan`` ([{shape, keys}], in order) and writes
    the fixture and its truth. ``env`` adds the framework's own settings (its telemetry off, ...) to Node's
    environment."""
    root = Path(os.environ["DIALECT_NODE_ROOT"]) if os.environ.get("DIALECT_NODE_ROOT") else install(name)
    driver = copy_sources(name, root)
    with OtlpReceiver() as rcv:
        rec = Recorder(name, rcv, script, records_tokens=records_tokens, notes=notes,
                       versions=installed_versions(root, name), runtime={"node": node_version()},
                       paths={str(root): "<node_root>"})
        with ScriptedServer(script) as srv, Control(rec) as ctl:
            node_env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_", "NODE_OPTIONS"))}
            node_env.update({"DIALECT_NAME": name, "DIALECT_SERVER_URL": srv.base_url,
                             "DIALECT_CONTROL_URL": ctl.url, "DIALECT_OTLP_URL": f"{rcv.endpoint}/v1/traces",
                             "DIALECT_PLAN": json.dumps(plan), "OPENAI_API_KEY": "sk-dummy-not-a-real-key",
                             "OTEL_METRICS_EXPORTER": "none", "OTEL_LOGS_EXPORTER": "none", "NO_UPDATE_NOTIFIER": "1",
                             **(env or {})})
            proc = subprocess.run(["node", str(driver)], cwd=driver.parent, env=node_env, timeout=600)
            if proc.returncode != 0:
                raise SystemExit(f"{name}: node {driver.name} exited with {proc.returncode}")
            if rec.open:
                raise SystemExit(f"{name}: runs started but never ended: {sorted(rec.open)}")
        rec.write(out_dir)


def standard_plan(extras: tuple[str, ...]) -> list[dict]:
    """The runs a Node driver makes: each plain script, the HTTP shape, two runs in one trace, then each extra shape."""
    return ([{"shape": "plain", "keys": [k]} for k in PLAIN]
            + [{"shape": "http", "keys": ["http"]}, {"shape": "two_runs", "keys": ["two-a", "two-b"]}]
            + [{"shape": SHAPE_OF[k], "keys": [k]} for k in extras])


def run_standard(name: str, extras: tuple[str, ...], *, notes: tuple[str, ...]) -> None:
    """A Node fixture of the standard scripts and shapes, with ``extras``."""
    script = Script({**common.standard_script(), **common.shape_script(), **common.extra_script(*extras)})
    run_fixture(name, script, standard_plan(extras), notes=notes)
