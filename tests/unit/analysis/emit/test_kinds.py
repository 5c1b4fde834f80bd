"""The command line keeps the emitters' kinds as a literal (so ``agentobs caps --help`` imports no pandas) and the
emitter keeps the budget's default output limit as a literal (the analysis imports no kernel): the copies stay
equal to what they copy."""
import click

from agentobs import Budget
from agentobs.analysis.emit import config as emit
from agentobs.analysis.emit.kinds import emit as emit_kind
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


def test_the_emitters_budget_defaults_are_the_budgets():
    """What the emitted text says a left-out Budget field keeps is what Budget() has."""
    for name, value in emit.BUDGET_DEFAULTS.items():
        assert getattr(Budget(), name) == value, name


def test_a_budget_field_left_out_names_the_default_it_keeps():
    """"not set: tool_calls" read as "no limit", but the pasted Budget stops a run at its default of 6 tool calls
    (found by fuzzing: 200 of 200 runs of 12 to 20 tool calls stopped). The text now says which defaults apply."""
    text = emit_kind([], "budget").text
    assert "so Budget's defaults apply to them: max_steps=8, max_tool_calls=6, max_tokens=4000" in text
    assert "defaults apply" in emit_kind([], "openai-agents").text
    assert "defaults apply" not in emit_kind([], "pydantic-ai").text      # UsageLimits' defaults are no limit
