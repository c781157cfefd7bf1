"""The core through its Python bindings: hand-checked traces, clear errors."""

from __future__ import annotations

from fractions import Fraction

import pytest

from irqlab.core import LatencyRecorder, Scheduler, ms, percent


def test_figure2_pibs_worst_case_by_hand() -> None:
    """QUEST-VCPU Figure 2: T = 4, U = 0.5 -> 3 units inside the window 4."""
    s = Scheduler()
    io = s.add_pibs("iovcpu", percent(50))
    bh = s.add_thread("bh", io)
    assert s.wakeup(0, bh, inherit_period=4)
    d = s.schedule(0)
    assert (d.server, d.thread, d.next_update) == (io, bh, 2)
    # runs 1 unit, blocks: e2 = 0 + 1 / 0.5 = 2
    assert s.block(1, bh)
    assert s.schedule(1).server is None
    st = s.server_state(io)
    assert st["eligibility"] == 2 and st["replenishment"] == (2, 2)
    s.wakeup(1, bh, inherit_period=4)
    d = s.schedule(1)
    assert d.server is None and d.next_update == 2
    d = s.schedule(2)
    assert d.server == io and d.next_update == 4  # C_max = 2 more units
    d = s.schedule(4)
    assert d.server is None
    assert s.server_state(io)["eligibility"] == 6


def test_sporadic_state_is_visible() -> None:
    s = Scheduler()
    v = s.add_sporadic("VCPU0", ms(2), ms(5))
    t = s.add_thread("cpu", v)
    s.wakeup(0, t)
    s.schedule(0)
    s.block(ms(1), t)
    s.schedule(ms(1))
    st = s.server_state(v)
    assert st["replenishments"] == [(0, ms(1)), (ms(5), ms(1))]
    assert st["budget"] == ms(1)
    assert s.stats()["schedule_calls"] == 2


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s: s.add_sporadic("x", ms(12), ms(10)), "budget 12ms exceeds period 10ms"),
        (lambda s: s.add_sporadic("x", ms(1), ms(10), max_repl=1), "max_repl 1 is below 2"),
        (lambda s: s.add_pibs("x", Fraction(3, 2)), "utilization 3/2 must be in (0, 1]"),
        (lambda s: s.add_pibs("x", 0.1), "utilization must be a fractions.Fraction"),
        (lambda s: s.add_pibs("x", percent(1), inherit="greedy"), "inherit: \"greedy\""),
        (lambda s: s.add_thread("t", 7), "unknown server id 7"),
        (lambda s: s.add_cbs("x", 0, 10), "budget must be positive"),
    ],
)
def test_invalid_arguments_raise_value_error(call, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call(Scheduler())


def test_time_cannot_go_backwards() -> None:
    s = Scheduler()
    s.schedule(10)
    with pytest.raises(ValueError, match="time went backwards"):
        s.schedule(5)


def test_latency_recorder() -> None:
    r = LatencyRecorder(capacity=4, alarm_lat=100)
    r.irq(0)
    assert r.ack(40) == 40
    r.irq(100)
    assert r.ack(250) == 150
    assert r.alarm and (r.min, r.max, r.num, r.last) == (40, 150, 2, 150)
    assert r.samples == [40, 150]
    assert r.ack(300) is None and r.spurious_acks == 1
