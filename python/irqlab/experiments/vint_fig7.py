"""VINT Figure 7: schedulable task sets as the pseudo-VCPU period grows
(ratio to the interrupts' minimum inter-arrival time; Table II otherwise)."""

from __future__ import annotations

from pathlib import Path

from irqlab.analysis import vint_curve
from irqlab.experiments import Check, Result
from irqlab.experiments._vint import sets_for, table, write

NAME = "vint-fig7"
TITLE = "VINT Figure 7: pseudo-VCPU period"
RATIOS = [1, 2, 3, 4, 5, 6, 8, 10]


def run(out_dir: Path, *, quick: bool = False) -> Result:
    pts = [(r, {}) for r in RATIOS]
    curve = vint_curve(pts, sets_for(quick), seed=7, pseudo_ratio=[(r, 1) for r in RATIOS])
    ds = [p["schedulable"]["DSvINT"] for p in curve]
    ss = [p["schedulable"]["SSvINT"] for p in curve]
    checks = [
        Check("DSvINT schedulability falls as the pseudo-VCPU period grows (first - last)",
              "falls", f"{ds[0]:.1f} -> {ds[-1]:.1f}", "drop > 5 points", ds[0] - ds[-1] > 5),
        Check("SSvINT stays flat", "flat", f"{min(ss):.1f} .. {max(ss):.1f}", "within 2 points",
              max(ss) - min(ss) <= 2),
    ]
    files = write(out_dir, "vint_fig7", curve, "pseudo-VCPU period / inter-arrival", "VINT Fig. 7",
                  ("schedulable",))
    return Result(NAME, checks, table(curve, "ratio"), files, {"curve": curve})
