"""agentobs' own spans: GenAI conventions plus the kernel's ``agentobs.step`` span around each step."""
from __future__ import annotations

from ....contract.semconv import STEP_SPAN
from ._table import NAME, STEP, Dialect, Rule, When

AGENTOBS = Dialect(name="agentobs", rules=(Rule(role=STEP, when=(When(key=NAME, equals=(STEP_SPAN,)),)),),
                   where="agentobs/contract/semconv.py")
