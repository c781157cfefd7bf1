"""VINT Figure 8: schedulable task sets and serviceable interrupt sets as the
WCET of the physical ISRs grows ([k, k + 5] us).

At Table II's inter-arrival times [5, 10] ms the trend appears only past
200 us ISRs (200 us: DSbase schedules 96.5 %; 400 us: 0 %), so it is
checked at short inter-arrival times [1, 1.5] ms, where it shows over 5-200
us (the paper does not give its Figure 8's ranges: labelled as not its
stated parameters).
Falsifier: the physical ISRs kept at Table II's 5-10 us at every point."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from irqlab.analysis import vint_curve
from irqlab.experiments import Check, Result
from irqlab.experiments._vint import MS, US, flat, sets_for, table, write
from irqlab.experiments.claims import falsify, key_of, ordering

NAME = "vint-fig8"
TITLE = "VINT Figure 8: physical ISR length"
SECONDS = {"quick": 5, "full": 30}  # measured: see irqlab.experiments
KS = [5, 25, 50, 75, 100, 150, 200]
IRQ = (1 * MS, 3 * MS // 2)
FALSIFIERS = {"fixed": "physical ISRs of 5-10 us (Table II) at every point"}


def measure(sets: int, variant: str | None) -> list[dict[str, Any]]:
    if key_of(FALSIFIERS, variant) == "fixed":
        return flat(KS, {"irq_interarrival": IRQ}, sets, seed=80)
    pts = [(k, {"isr_wcet": (k * US, (k + 5) * US), "irq_interarrival": IRQ}) for k in KS]
    return vint_curve(pts, sets, seed=8)


def judge(curve: list[dict[str, Any]]) -> list[Check]:
    def drop(metric: str) -> float:
        """The largest fall over the schemes from the first point to the last,
        or the largest rise (negative) if any scheme rises."""
        d = [curve[0][metric][s] - curve[-1][metric][s] for s in curve[0][metric]]
        return min(d) if min(d) < 0 else max(d)

    def shown(metric: str) -> str:
        return ", ".join(f"{s} {curve[0][metric][s]:.0f}->{curve[-1][metric][s]:.0f}"
                         for s in curve[0][metric])

    why = "the paper does not state Figure 8's inter-arrival times; [1, 1.5] ms assumed"
    return [
        ordering("schedulability falls as the physical ISR WCET grows (first - last, points)",
                 "falls", drop("schedulable"), 5, what="drop (none rises)",
                 shown=shown("schedulable"), falsifier=FALSIFIERS["fixed"], paper_params=False,
                 note=why),
        ordering("serviceability falls as the physical ISR WCET grows (first - last, points)",
                 "falls", drop("serviceable"), 5, what="drop (none rises)",
                 shown=shown("serviceable"), falsifier=FALSIFIERS["fixed"], paper_params=False,
                 note=why),
    ]


def run(out_dir: Path, *, quick: bool = False) -> Result:
    curve, checks = falsify(lambda v: measure(sets_for(quick), v), judge)
    files = write(out_dir, "vint_fig8", curve, "physical ISR WCET k (us)", "VINT Fig. 8")
    return Result(NAME, checks, table(curve, "k (us)"), files, {"curve": curve})
