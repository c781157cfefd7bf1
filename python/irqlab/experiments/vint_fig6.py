"""VINT Figure 6: serviceable interrupt sets as the VCPU period grows
(Table II otherwise)."""

from __future__ import annotations

from pathlib import Path

from irqlab.analysis import vint_curve
from irqlab.experiments import Check, Result
from irqlab.experiments._vint import MS, sets_for, table, write

NAME = "vint-fig6"
TITLE = "VINT Figure 6: VCPU period"
PERIODS = [1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]


def run(out_dir: Path, *, quick: bool = False) -> Result:
    pts = [(t, {"vcpu_period": int(t * MS)}) for t in PERIODS]
    curve = vint_curve(pts, sets_for(quick), seed=6)
    vint100 = all(p["serviceable"][s] == 100.0 for p in curve for s in ("DSvINT", "SSvINT"))
    base = ("DSbase", "SSbase")
    short_ok = min(p["serviceable"][s] for p in curve if p["x"] <= 3.0 for s in base)
    long_max = max(p["serviceable"][s] for p in curve if p["x"] >= 4.5 for s in base)
    checks = [
        Check("with vINT 100 % serviceable for every VCPU period", "100 %",
              "100 %" if vint100 else "below 100 % somewhere", "every point", vint100),
        Check("without vINT serviceability drops for periods above 3.5 ms",
              "drops", f"min {short_ok:.1f} % up to 3 ms, max {long_max:.1f} % from 4.5 ms",
              ">= 99 % up to 3 ms, < 10 % from 4.5 ms", short_ok >= 99 and long_max < 10),
    ]
    files = write(out_dir, "vint_fig6", curve, "VCPU period (ms)", "VINT Fig. 6")
    return Result(NAME, checks, table(curve, "T (ms)"), files, {"curve": curve})
