"""The agentobs command line: parse, call the library, render. User errors end in one line, never a traceback; so
does a bug (exit status 3, the traceback with ``AGENTOBS_DEBUG=1``).

Commands are imported when they are invoked (their ``--help`` included), never to list them, so
``agentobs --help`` loads no analysis, telemetry or kernel code. ``COMMANDS`` names each command's module
and its one-line help (tests/scenarios/project/test_imports.py keeps that line equal to the command's own).
"""
from __future__ import annotations

import importlib
import os
import sys
from typing import Any, NoReturn

import click

from ..errors import AgentobsError
from .safe_text import clean

DEBUG_ENV = "AGENTOBS_DEBUG"     # set: an unexpected exception shows its traceback instead of one line

# name -> (module, attribute, one-line help shown by `agentobs --help`)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "caps": ("agentobs.cli.analysis_cmds", "caps_cmd",
             "Recommended budget caps from the successful runs in SOURCES, with the share each candidate cuts off."),
    "diff": ("agentobs.cli.diff_cmd", "diff_cmd",
             "Two sources, or two windows of one, side by side: what changed, and whether it is larger than chance."),
    "demo": ("agentobs.cli.demo", "demo",
             "The main job: seed scenarios, a simulated population, its failure taxonomy and caps, an HTML report."),
    "report": ("agentobs.cli.analysis_cmds", "report_cmd",
               "Failure taxonomy, percentiles and recommended caps of the runs in SOURCES."),
    "runs": ("agentobs.cli.analysis_cmds", "runs_cmd",
             "The runs table (one row per run, documented columns): on the terminal, or as CSV."),
    "simulate": ("agentobs.cli.simulate", "simulate_cmd",
                 "Run a population of support tasks with stochastic stand-in models and every seed failure pattern."),
    "trace": ("agentobs.cli.analysis_cmds", "trace_cmd",
              "One trace as a tree: per span its role, start and duration in ms, tokens, cost and error."),
    "view": ("agentobs.cli.view_cmd", "view_cmd",
             "The run explorer in the browser, served from 127.0.0.1 for runs in SOURCES (Ctrl-C stops it)."),
    "watch": ("agentobs.cli.watch_cmd", "watch_cmd",
              "Report each run that crosses a cap while it runs, from a growing traces file or Jaeger (Ctrl-C "
              "stops)."),
}


class _Group(click.Group):
    """Lazy subcommands, and one-line errors for what the user can fix."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module, attr, _ = entry
        command = getattr(importlib.import_module(module), attr)
        assert isinstance(command, click.Command), f"{module}.{attr} is not a click command"
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """As click's own, from ``COMMANDS`` instead of the imported commands."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(map(len, names))
        with formatter.section("Commands"):
            formatter.write_dl([(name, click.Command(name, help=COMMANDS[name][2]).get_short_help_str(limit))
                                for name in names])

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            sys.stderr.close()          # the reader went away (e.g. `| head`): not an error
            sys.exit(0)
        except AgentobsError as exc:
            _fail(f"agentobs: error: {exc}")
        except OSError as exc:
            _fail(f"agentobs: error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "))
        except click.UsageError as exc:     # a bad option or argument of a command: one line, and where to look
            where = exc.ctx.command_path if exc.ctx is not None else "agentobs"
            _fail(f"agentobs: error: {exc.format_message()} (see: {where} --help)")
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise                       # --help, --version, Ctrl-C: click's own
        except Exception as exc:        # a bug: one line still, the traceback on request
            if os.environ.get(DEBUG_ENV):
                raise
            first = str(exc).splitlines()[0][:200] if str(exc) else ""
            _fail(f"agentobs: internal error: {type(exc).__name__}{': ' + first if first else ''} (a bug in "
                  f"agentobs: please report it with the input; {DEBUG_ENV}=1 shows the traceback)", code=3)


def _fail(message: str, code: int = 2) -> NoReturn:
    click.echo(clean(message, None), err=True)
    sys.exit(code)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="agentobs")
def cli() -> None:
    """Bounded, observable and explainable agent runs on OpenTelemetry."""


def main() -> None:
    cli(prog_name="agentobs")
