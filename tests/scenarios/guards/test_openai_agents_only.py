"""What the budget guard for the OpenAI Agents SDK does that the conformance suite (test_conformance.py) does not
cover: through the SDK and the real OpenAI client against a scripted server on 127.0.0.1."""
from __future__ import annotations

import pytest

pytest.importorskip("agents")
pytest.importorskip("openai")

from agents import Runner
from guard_drivers import DRIVERS, PROMPT, ROOMY
from providers import ProviderServer, same_call

from agentobs import Budget, StopReason
from agentobs.domain.support import SupportDesk
from agentobs.guards.openai_agents import BudgetGuard, BudgetStop

DRIVER = DRIVERS["openai_agents"]


def test_the_hooks_alone_guard_a_runner_call():
    """For code that calls Runner.run itself: guard.hooks() checks before each call (no span, no time cut-off)."""
    desk = SupportDesk()
    with ProviderServer(same_call) as srv:
        agent = DRIVER.agent(srv, desk)
        hooks = BudgetGuard(Budget(**ROOMY)).hooks()
        with pytest.raises(BudgetStop) as stop:
            Runner.run_sync(agent, PROMPT, hooks=hooks)
    assert stop.value.stop is StopReason.REPEATED_CALL
    assert srv.count == 3 and hooks.account.tool_calls == 2 and desk.calls == 2
