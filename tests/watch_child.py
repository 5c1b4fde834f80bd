"""A live population for ``agentobs watch`` tests: real kernel runs, in real time, some of them runaways.

    python tests/watch_child.py --normal 6 --runaway 3 [--traces-out FILE | --otlp URL --service NAME] [--delay 0.05]

Normal runs follow the simulated population's healthy support tasks (plan, read the order, refund, e-mail, answer)
with at most one extra policy look-up; a runaway keeps searching the policy with a new query every step (progress
each time: no repeat or stall guard stops it) under a budget loose enough that only ``--runaway-steps`` stops it.
Every model and tool call takes ``--delay`` seconds of real time (the kernel runs on its real clock), all runs at
once in threads, each with its own kernel and observer. Telemetry goes to a traces file (the exporter's batch
delay from ``OTEL_BSP_SCHEDULE_DELAY``) or over OTLP. Prints one JSON line per run as it ends: its task id, trace
id, kind, and ``ended_at`` (time.time()).
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentobs.domain.population import AGENT, BUDGET, PopulationDesk, PopulationPolicy
from agentobs.domain.support import FACTS
from agentobs.kernel.budget import Budget
from agentobs.kernel.clock import RealClock
from agentobs.kernel.loop import Kernel
from agentobs.kernel.models import ModelRequest, ModelResponse
from agentobs.kernel.state import TaskState
from agentobs.telemetry import OTelObserver, configure
from agentobs.testing import SleepingModel, SleepingTools


class Runaway:
    """Searches the policy with a new query every step, forever."""

    provider, blocking, name = "agentobs", True, "support-policy-sim"

    def __init__(self, delay: float):
        self.delay, self.calls = delay, 0

    def propose(self, request: ModelRequest) -> ModelResponse:
        time.sleep(self.delay)
        self.calls += 1
        view = json.loads(request.view)
        if not view["plan"]:
            return ModelResponse(reply={"type": "plan", "steps": [{"id": "s1", "tool": "search_policy",
                                                                    "depends_on": []}]})
        return ModelResponse(reply={"type": "tool", "name": "search_policy",
                                    "args": {"q": f"refund rules, part {self.calls}"}})


LOOSE = Budget(max_steps=40, max_tool_calls=40, max_tokens=10_000_000, max_output_tokens=300, deadline_s=3600.0,
               max_repeat=50, max_stalls=50, progress="state_or_observation", max_plan_steps=8)


def one(tel, i: int, kind: str, delay: float, steps: int, lock: threading.Lock) -> None:
    rng = random.Random(1000 + i)
    order, customer = f"ord_{20000 + i}", f"cu_{20000 + i}"
    desk = PopulationDesk(rng, order, customer, rng.randrange(3000, 12000, 100))
    if kind == "runaway":
        model, budget = Runaway(delay), Budget(**{**LOOSE.__dict__, "max_steps": steps})
    else:
        policy = PopulationPolicy(rng, "healthy", order=order, amount=rng.randrange(500, 2900, 100),
                                  extra_lookups=rng.randint(0, 1), latency=1.0)
        model, budget = SleepingModel(policy, delay), BUDGET
    observer = tel.observer()
    kernel = Kernel(model, SleepingTools(desk, delay), budget=budget, clock=RealClock(), facts=FACTS,
                    price_as="gpt-4.1-mini", observers=[observer])
    state = TaskState(task_id=f"live-{kind}-{i:03d}", user_id=customer, goal=f"refund the damaged item on order "
                      f"{order}", agent_name=AGENT)
    kernel.run(state)
    trace = observer.trace_id() if isinstance(observer, OTelObserver) else None
    with lock:
        print(json.dumps({"task_id": state.task_id, "trace_id": trace, "kind": kind, "steps": state.step,
                          "stop": str(state.stop), "ended_at": time.time()}), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--normal", type=int, default=6)
    ap.add_argument("--runaway", type=int, default=3)
    ap.add_argument("--runaway-steps", type=int, default=40)
    ap.add_argument("--delay", type=float, default=0.05)
    ap.add_argument("--stagger", type=float, default=0.1, help="seconds between two runs' starts")
    ap.add_argument("--traces-out", default=None)
    ap.add_argument("--otlp", default=None)
    ap.add_argument("--service", default="agentobs-watch-live")
    a = ap.parse_args()
    tel = configure(traces_out=a.traces_out, otlp_endpoint=a.otlp, service_name=a.service)
    kinds = ["runaway" if k < a.runaway else "normal" for k in range(a.normal + a.runaway)]
    random.Random(7).shuffle(kinds)
    lock = threading.Lock()
    threads = []
    for i, kind in enumerate(kinds):
        t = threading.Thread(target=one, args=(tel, i, kind, a.delay, a.runaway_steps, lock))
        t.start()
        threads.append(t)
        time.sleep(a.stagger)
    for t in threads:
        t.join()
    tel.shutdown()


if __name__ == "__main__":
    main()
