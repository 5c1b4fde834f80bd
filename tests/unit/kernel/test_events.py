"""The kernel's cheaper ways to make events and read its clock give what the plain ways give."""
from __future__ import annotations

import dataclasses
import inspect
import pickle

import pytest

from agentobs.contract import events as ev
from agentobs.contract.vocabulary import RunStatus, StopReason
from agentobs.kernel.clock import SimClock
from agentobs.kernel.events import maker

EVENT_TYPES = [t for t in vars(ev).values() if isinstance(t, type) and dataclasses.is_dataclass(t)]


def _values(t: type) -> dict[str, object]:
    """A distinct value for every field of ``t`` (the types do not matter to construction)."""
    return {f.name: (f.name, i) for i, f in enumerate(dataclasses.fields(t))}


@pytest.mark.parametrize("t", EVENT_TYPES, ids=lambda t: t.__name__)
def test_maker_builds_what_the_class_builds(t: type) -> None:
    kw = _values(t)
    made, called = maker(t)(**kw), t(**kw)
    assert type(made) is t and made == called and hash(made) == hash(called)
    assert {f.name: getattr(made, f.name) for f in dataclasses.fields(t)} == kw
    assert pickle.loads(pickle.dumps(made)) == made
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(made, dataclasses.fields(t)[0].name, "changed")
    # the same keyword-only signature as the class, so the same mistakes fail the same way
    assert inspect.signature(maker(t)).parameters.keys() == inspect.signature(t).parameters.keys()
    with pytest.raises(TypeError):
        maker(t)(*kw.values())
    with pytest.raises(TypeError):
        maker(t)(**kw, not_a_field=1)
    first = dataclasses.fields(t)[0].name
    with pytest.raises(TypeError):
        maker(t)(**{k: v for k, v in kw.items() if k != first})


def test_defaults_apply_as_in_the_class() -> None:
    u = maker(ev.TokenUsage)(input_tokens=3, output_tokens=4, source="reported")
    assert u == ev.TokenUsage(input_tokens=3, output_tokens=4, source="reported")
    assert u.cache_read_input_tokens is None and u.reasoning_output_tokens is None


def test_the_kernel_emits_equal_events_of_the_contract_types() -> None:
    from agentobs import EventLog
    from agentobs.domain.scenarios import SEED000
    log = EventLog()
    SEED000["A normal run"]([log])
    kinds = [type(e) for e in log.events]
    assert kinds[0] is ev.RunStarted and kinds[-1] is ev.RunFinished and ev.ModelReturned in kinds
    done = log.of(ev.RunFinished)[0]
    assert done.stop is StopReason.DONE and done.status is RunStatus.STOPPED
    for e in log.events:
        assert e == dataclasses.replace(e)          # rebuilt through the class: equal


def test_sim_clock_wall_time_follows_simulated_time() -> None:
    c = SimClock(1_000_000_000)
    assert c.wall_ns() == 1_000_000_000
    c.sleep(1.5)
    assert c.wall_ns() == 2_500_000_000
    c.spend(c.now(), 0.25)
    assert c.wall_ns() == 2_750_000_000 == c.epoch_ns + round(c.t * 1e9)
    c.t = 0.0                                        # set directly, as a test may
    assert c.wall_ns() == 1_000_000_000
