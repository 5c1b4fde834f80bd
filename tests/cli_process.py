"""The command line in a child process, as the tests that start it use it: ``CLI`` (the argv prefix) and
``child_env`` (this process's environment without its OTEL_ settings, agentobs importable from the checkout)."""
from __future__ import annotations

import os
import sys

from locations import ROOT

CLI = [sys.executable, "-c", "from agentobs.cli.main import main; main()"]


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return {**env, "PYTHONPATH": str(ROOT), **extra}
