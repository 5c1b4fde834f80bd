"""The command line keeps the emitters' kinds as a literal (so ``agentobs caps --help`` imports no pandas) and the
emitter keeps the budget's default output limit as a literal (the analysis imports no kernel): the copies stay
equal to what they copy."""
import click

from agentobs import Budget
from agentobs.analysis import emit
from agentobs.cli import analysis_cmds
from agentobs.cli.main import cli


def test_the_cli_emit_kinds_are_the_emitters_kinds():
    assert analysis_cmds.EMIT_KINDS == emit.KINDS


def test_caps_emit_offers_exactly_those_kinds():
    with click.Context(cli) as ctx:
        caps = cli.get_command(ctx, "caps")
    assert caps is not None
    (option,) = [p for p in caps.params if p.name == "emit_as"]
    assert isinstance(option.type, click.Choice)
    assert tuple(option.type.choices) == emit.KINDS


def test_the_emitters_output_limit_is_the_budgets_default():
    assert Budget().max_output_tokens == emit.DEFAULT_OUTPUT_CAP
