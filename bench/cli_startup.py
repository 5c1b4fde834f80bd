"""Start-up of the command line: `agentobs --help` and `agentobs report --help` against `python -c "import click"`.

Each contender is a child process started from this one (the installed `agentobs` console script next to this
interpreter, or `python -c` calling the same entry point when there is none), with its output discarded; the
repeats are interleaved as everywhere (bench/common.py), and the ratios are medians of per-repeat ratios. A bare
interpreter (`python -c pass`) is reported too, as the floor every Python command starts from. The commands'
modules are imported only when a command runs (agentobs/cli/main.py), so neither help loads pandas, pyarrow or
OpenTelemetry.

Targets: each help within 4 × the time of `python -c "import click"`.

    python -m bench.cli_startup [--quick]
"""
from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable

from .common import Figure, Plan, Target, module_main, ratio, summarize, time_interleaved

NAME = "cli"
TITLE = "Command-line start-up: agentobs --help and report --help vs python -c 'import click' (child processes)"

F_HELP = "agentobs --help / import click"
F_REPORT = "agentobs report --help / import click"
TARGETS = [
    Target("cli: agentobs --help / python -c 'import click'", F_HELP, "<=", 4.0),
    Target("cli: agentobs report --help / python -c 'import click'", F_REPORT, "<=", 4.0),
]

FULL = Plan(repeats=15, iterations=3, warmup=3)
QUICK = Plan(repeats=7, iterations=2, warmup=2)


def _agentobs() -> list[str]:
    script = os.path.join(os.path.dirname(sys.executable), "agentobs")
    if os.access(script, os.X_OK):
        return [script]
    return [sys.executable, "-c", "from agentobs.cli.main import main; main()"]


def _child(argv: list[str]) -> Callable[[], object]:
    def run() -> object:
        return subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return run


def contenders() -> dict[str, Callable[[], object]]:
    agentobs = _agentobs()
    return {
        "agentobs --help": _child([*agentobs, "--help"]),
        "agentobs report --help": _child([*agentobs, "report", "--help"]),
        "import click": _child([sys.executable, "-c", "import click"]),
        "python -c pass": _child([sys.executable, "-c", "pass"]),
    }


def run(quick: bool = False) -> list[Figure]:
    plan = QUICK if quick else FULL
    t = time_interleaved(contenders(), plan)
    ms = {k: [x / 1e6 for x in v] for k, v in t.items()}
    n = dict(iterations=plan.iterations, group=NAME)
    g = dict(group=NAME)
    return [
        summarize("agentobs --help, per start", ms["agentobs --help"], "ms", **n),
        summarize("agentobs report --help, per start", ms["agentobs report --help"], "ms", **n),
        summarize("python -c 'import click', per start", ms["import click"], "ms", **n),
        summarize("python -c pass, per start", ms["python -c pass"], "ms", notes="the interpreter alone", **n),
        ratio(F_HELP, t["agentobs --help"], t["import click"], **g),
        ratio(F_REPORT, t["agentobs report --help"], t["import click"], **g),
        ratio("agentobs report --help / python -c pass", t["agentobs report --help"], t["python -c pass"], **g),
    ]


if __name__ == "__main__":
    module_main(run)
