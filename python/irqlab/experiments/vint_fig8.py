"""VINT Figure 8: schedulable task sets and serviceable interrupt sets as the
WCET of the physical ISRs grows ([k, k + 5] us; short inter-arrival times
[1, 1.5] ms so that the trend is visible)."""

from __future__ import annotations

from pathlib import Path

from irqlab.analysis import vint_curve
from irqlab.experiments import Check, Result
from irqlab.experiments._vint import MS, US, sets_for, table, write

NAME = "vint-fig8"
TITLE = "VINT Figure 8: physical ISR length"
KS = [5, 25, 50, 75, 100, 150, 200]


def run(out_dir: Path, *, quick: bool = False) -> Result:
    pts = [(k, {"isr_wcet": (k * US, (k + 5) * US), "irq_interarrival": (1 * MS, 3 * MS // 2)})
           for k in KS]
    curve = vint_curve(pts, sets_for(quick), seed=8)

    def falls(metric: str) -> bool:
        return all(curve[0][metric][s] >= curve[-1][metric][s] for s in curve[0][metric]) and any(
            curve[0][metric][s] - curve[-1][metric][s] > 5 for s in curve[0][metric])

    checks = [
        Check("schedulability falls as the physical ISR WCET grows", "falls",
              ", ".join(f"{s} {curve[0]['schedulable'][s]:.0f}->{curve[-1]['schedulable'][s]:.0f}"
                        for s in curve[0]["schedulable"]), "no scheme rises; some fall > 5",
              falls("schedulable")),
        Check("serviceability falls as the physical ISR WCET grows", "falls",
              ", ".join(f"{s} {curve[0]['serviceable'][s]:.0f}->{curve[-1]['serviceable'][s]:.0f}"
                        for s in curve[0]["serviceable"]), "no scheme rises; some fall > 5",
              falls("serviceable")),
    ]
    files = write(out_dir, "vint_fig8", curve, "physical ISR WCET k (us)", "VINT Fig. 8")
    return Result(NAME, checks, table(curve, "k (us)"), files, {"curve": curve})
