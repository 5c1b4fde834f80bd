"""What the budget guard for Pydantic AI does that the conformance suite (test_conformance.py) does not cover:
through Pydantic AI and the real OpenAI client against a scripted server on 127.0.0.1."""
from __future__ import annotations

import pytest

pytest.importorskip("pydantic_ai")
pytest.importorskip("openai")

from guard_drivers import DRIVERS, ROOMY
from providers import normal

from agentobs import Budget

DRIVER = DRIVERS["pydantic_ai"]


def test_a_model_setting_of_none_is_the_guards_to_fill():
    """model_settings={"max_tokens": None} raised TypeError in the guard (None > 300)."""
    out = DRIVER.run(normal(), Budget(**ROOMY), model_settings={"max_tokens": None, "request_timeout": None})
    assert out.stop is None and out.output == "Refund issued and confirmation sent."
    assert all(r["body"].get("max_tokens") == 300 or r["body"].get("max_completion_tokens") == 300
               for r in out.log)
