"""VINT Figure 7: schedulable task sets as the pseudo-VCPU period grows
(ratio to the interrupts' minimum inter-arrival time; Table II otherwise).

Claims: DSvINT's schedulability falls as the pseudo-VCPU period grows (a
deferrable pseudo-VCPU's budget, Eq. 2, grows with its period and so does
its back-to-back interference), SSvINT's stays flat. Falsifiers: the
pseudo-VCPU period kept at the inter-arrival time (ratio 1) at every point
for the first; Figure 4's short inter-arrival times [0.6, 1.1] ms for the
second, a VCPU period of 1 ms (pseudo-VCPU periods longer than the VCPU's
then leave its tasks no room)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from irqlab.analysis import vint_curve
from irqlab.experiments import Check, Result
from irqlab.experiments._vint import MS, falsifier_sets, flat, sets_for, table, write
from irqlab.experiments.claims import falsify, key_of, ordering, within

NAME = "vint-fig7"
TITLE = "VINT Figure 7: pseudo-VCPU period"
SECONDS = {"quick": 5, "full": 71}  # measured: see irqlab.experiments
RATIOS = [1, 2, 3, 4, 5, 6, 8, 10]
FALSIFIERS = {
    "ratio1": "pseudo-VCPU period = the inter-arrival time (ratio 1) at every point",
    "short-vcpu": "VCPU period 1 ms (Table II: 10 ms)",
}


def measure(sets: int, variant: str | None) -> list[dict[str, Any]]:
    f = key_of(FALSIFIERS, variant)
    if f == "ratio1":
        return flat(RATIOS, {}, sets, seed=70)
    params = {"vcpu_period": MS} if f == "short-vcpu" else {}
    pts = [(r, params) for r in RATIOS]
    return vint_curve(pts, falsifier_sets(sets) if f else sets, seed=7,
                      pseudo_ratio=[(r, 1) for r in RATIOS])


def judge(curve: list[dict[str, Any]]) -> list[Check]:
    ds = [p["schedulable"]["DSvINT"] for p in curve]
    ss = [p["schedulable"]["SSvINT"] for p in curve]
    return [
        ordering("DSvINT schedulability falls as the pseudo-VCPU period grows (first - last, "
                 "points)", "falls", ds[0] - ds[-1], 5, what="drop",
                 shown=f"{ds[0]:.1f} -> {ds[-1]:.1f}", falsifier=FALSIFIERS["ratio1"]),
        within("SSvINT stays flat (max - min over the curve, points)", "flat",
               max(ss) - min(ss), 0, 2, shown=f"{min(ss):.1f} .. {max(ss):.1f}",
               falsifier=FALSIFIERS["short-vcpu"]),
    ]


def run(out_dir: Path, *, quick: bool = False) -> Result:
    curve, checks = falsify(lambda v: measure(sets_for(quick), v), judge)
    files = write(out_dir, "vint_fig7", curve, "pseudo-VCPU period / inter-arrival", "VINT Fig. 7",
                  ("schedulable",))
    return Result(NAME, checks, table(curve, "ratio"), files, {"curve": curve})
