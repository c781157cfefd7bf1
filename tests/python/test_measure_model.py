"""Hand-checked behaviour of the Latencies IP reference model (irqlab.measure.ipmodel)."""

from __future__ import annotations

import pytest

from irqlab.measure.ipmodel import LatencyIPModel


def levels(*segs: tuple[int, int, int]) -> list[tuple[bool, bool]]:
    out = []
    for irq, ack, n in segs:
        out += [(bool(irq), bool(ack))] * n
    return out


def fresh(**kw: int) -> LatencyIPModel:
    m = LatencyIPModel(**kw)
    m.step(False, False)
    m.we = True
    return m


def test_eq2_latency_in_cycles() -> None:
    m = fresh()
    assert m.run(levels((1, 0, 3), (0, 0, 9), (0, 1, 1), (0, 0, 2))) == [12]
    assert (m.last, m.max, m.min, m.num, m.ram) == (12, 12, 12, 1, [12])


def test_reset_values() -> None:
    m = LatencyIPModel()
    assert (m.last, m.max, m.min, m.num, m.alarm_lat) == (0, 0, 0xFFFF, 0, 0xFFFF)
    assert m.status().encode() == 0


def test_orphan_ack_and_overrun() -> None:
    m = fresh()
    assert m.run(levels((0, 1, 2), (0, 0, 2))) == [] and m.orphan_ack
    assert m.run(levels((1, 0, 1), (0, 0, 4), (1, 0, 1), (0, 0, 4), (0, 1, 1))) == [10]
    assert m.overrun


def test_simultaneous_edges() -> None:
    m = fresh()
    assert m.run(levels((1, 1, 1), (0, 0, 2))) == [0]
    assert m.run(levels((1, 0, 1), (0, 0, 6), (1, 1, 1), (0, 0, 3), (0, 1, 1))) == [7, 4]


def test_saturation_and_full() -> None:
    m = fresh(cnt_width=4, depth=2)
    assert m.run(levels((1, 0, 1), (0, 0, 30), (0, 1, 1), (0, 0, 1))) == [15]
    assert m.saturated and m.max == 15
    m.run(levels((1, 0, 1), (0, 0, 2), (0, 1, 1), (0, 0, 1)))
    m.run(levels((1, 0, 1), (0, 1, 1), (0, 0, 1)))
    assert m.full and m.ram == [15, 3] and m.num == 3 and (m.last, m.min) == (1, 1)


def test_we_low_abandons_and_ignores() -> None:
    m = fresh()
    m.run(levels((1, 0, 1), (0, 0, 2)))
    m.we = False
    m.run(levels((0, 0, 1)))
    m.we = True
    assert m.run(levels((0, 1, 1), (0, 0, 1))) == [] and m.orphan_ack and m.num == 0


def test_alarm_sticky_and_clear() -> None:
    m = fresh()
    m.alarm_lat = 5
    m.run(levels((1, 0, 1), (0, 0, 4), (0, 1, 1), (0, 0, 1)))  # 5: not above
    assert not m.alarm
    m.run(levels((1, 0, 1), (0, 0, 5), (0, 1, 1), (0, 0, 1)))  # 6
    m.run(levels((1, 0, 1), (0, 1, 1), (0, 0, 1)))  # 1
    assert m.alarm
    m.write_status(0b1)
    assert not m.alarm
    m.clear()
    assert (m.num, m.min, m.max, m.ram) == (0, 0xFFFF, 0, [])


def test_bad_generics() -> None:
    with pytest.raises(ValueError, match="cnt_width"):
        LatencyIPModel(cnt_width=40)
    with pytest.raises(ValueError, match="depth"):
        LatencyIPModel(depth=0)
