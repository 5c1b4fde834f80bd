"""The agentobs command line: parse, call the library, render. User errors end in one line, never a traceback."""
from __future__ import annotations

import sys

import click

from ..errors import AgentobsError
from .analysis_cmds import caps_cmd, report_cmd, runs_cmd, trace_cmd
from .demo import demo
from .safe_text import clean
from .simulate import simulate_cmd


class _Group(click.Group):
    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            sys.stderr.close()          # the reader went away (e.g. `| head`): not an error
            sys.exit(0)
        except AgentobsError as exc:
            click.echo(clean(f"agentobs: error: {exc}", None), err=True)
            sys.exit(2)
        except OSError as exc:
            click.echo(clean(f"agentobs: error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), None),
                       err=True)
            sys.exit(2)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="agentobs")
def cli() -> None:
    """Bounded, observable and explainable agent runs on OpenTelemetry."""


cli.add_command(demo)
cli.add_command(simulate_cmd)
for _cmd in (report_cmd, caps_cmd, runs_cmd, trace_cmd):
    cli.add_command(_cmd)


def main() -> None:
    cli(prog_name="agentobs")
