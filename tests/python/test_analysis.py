"""Analyses from Python: QUEST-VCPU Eq. 1, USB-DIFFSERV Eq. 4-8, the VINT
sweep (deterministic, parameter errors) and reduced VINT figures."""

from __future__ import annotations

from pathlib import Path

import pytest

from irqlab import experiments
from irqlab.analysis import quest_eq1, usb_latency_bound, usb_typical_throughput, vint_sweep


def test_quest_eq1() -> None:
    demand, bound, slack, ok = quest_eq1([(1, 4), (1, 5)], [0.1])
    assert demand == pytest.approx(0.64) and bound == pytest.approx(0.8284271247)
    assert ok and slack == pytest.approx(bound - demand)
    with pytest.raises(ValueError, match="U in"):
        quest_eq1([(1, 4)], [1.5])


def test_usb_equations() -> None:
    assert int(usb_typical_throughput(512, 0.0002, 0.04, 0.00002)) == 101_992
    assert int(usb_typical_throughput(512, 0.0002, 0.01, 0.00002)) == 25_574
    assert round(usb_typical_throughput(512, 0.00002, 0.02, 0.0)) == 512_000
    assert usb_latency_bound(0.0002, 0.01, 0.00002, 0.002, 0.02) == pytest.approx(0.04)


def test_sweep_is_deterministic() -> None:
    a = vint_sweep({"irq_interarrival": (700_000, 1_200_000)}, 100, seed=3, threads=1)
    b = vint_sweep({"irq_interarrival": (700_000, 1_200_000)}, 100, seed=3, threads=2)
    assert a == b
    # vINT services what the baselines cannot at short inter-arrival times
    assert a["serviceable"]["SSvINT"] > 90 and a["serviceable"]["SSbase"] == 0


def test_sweep_rejects_bad_parameters() -> None:
    with pytest.raises(ValueError, match='unknown key "isr"' ):
        vint_sweep({"isr": (1, 2)}, 10)
    with pytest.raises(ValueError, match="low above high"):
        vint_sweep({"isr_wcet": (10, 5)}, 10)


@pytest.mark.parametrize("name", ["vint-fig5", "vint-fig6", "vint-fig7"])
def test_reduced_figures_hold(name: str, tmp_path: Path) -> None:
    r = experiments.run(name, tmp_path, quick=True)
    assert all(c.holds for c in r.checks), [(c.claim, c.irqlab) for c in r.checks]
    assert any(f.endswith(".csv") for f in r.files)


def test_vint_case_storm_protects_the_decoder(tmp_path: Path) -> None:
    r = experiments.run("vint-case-storm", tmp_path, quick=True)
    fps = r.data["fps"]
    # vINT bounds the storm by its pseudo-VCPU: the decoder keeps its 30 fps
    assert all(v == pytest.approx(30.0, abs=0.6) for v in fps["vINT"])
    # without vINT the storm eats the VCPU's budget
    assert all(b < q for b, q in zip(fps["Baseline"], fps["Baseline, no storm"], strict=True))


def test_vint_case_rtt(tmp_path: Path) -> None:
    r = experiments.run("vint-case-rtt", tmp_path, quick=True)
    f = r.data["within_200us"]
    # vINT serves the receiver on the pseudo-VCPU's budget and priority
    assert f["vINT"] >= 99.0
    # Baseline: only while the VCPU still has budget (about 40 % of the time)
    assert 30.0 <= f["Baseline"] <= 50.0


def test_vint_case_throughput(tmp_path: Path) -> None:
    r = experiments.run("vint-case-throughput", tmp_path, quick=True)
    assert all(c.holds for c in r.checks), [(c.claim, c.irqlab) for c in r.checks]
    base = r.data["mbps"]["Baseline"]
    # budget-bound: throughput proportional to the utilization (20 % -> 60 %)
    assert base[-1] == pytest.approx(3 * base[0], rel=0.02)
