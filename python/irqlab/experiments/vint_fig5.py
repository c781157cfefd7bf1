"""VINT Figure 5: serviceable interrupt sets for long inter-arrival times
[k, k + 5] ms (Table II otherwise)."""

from __future__ import annotations

from pathlib import Path

from irqlab.analysis import vint_curve
from irqlab.experiments import Check, Result
from irqlab.experiments._vint import MS, at, sets_for, table, write

NAME = "vint-fig5"
TITLE = "VINT Figure 5: long interrupt inter-arrival times [k, k+5] ms"
KS = list(range(5, 21))


def run(out_dir: Path, *, quick: bool = False) -> Result:
    pts = [(k, {"irq_interarrival": (k * MS, (k + 5) * MS)}) for k in KS]
    curve = vint_curve(pts, sets_for(quick), seed=5)
    all_sched = all(p["schedulable"][s] == 100.0 for p in curve for s in p["schedulable"])
    ds13, ss11 = at(curve, 13)["serviceable"]["DSbase"], at(curve, 11)["serviceable"]["SSbase"]
    checks = [
        Check("all schemes schedule 100 % of task sets", "100 %",
              "100 %" if all_sched else "below 100 % somewhere", "every point", all_sched),
        Check("DSbase services under 1 % of interrupt sets at [13, 18] ms", "< 1 %",
              f"{ds13:.1f} %", "< 1 %", ds13 < 1.0),
        Check("SSbase services under 2 % of interrupt sets at [11, 16] ms", "< 2 %",
              f"{ss11:.1f} %", "< 2 %", ss11 < 2.0),
    ]
    files = write(out_dir, "vint_fig5", curve, "k (ms)", "VINT Fig. 5", ("serviceable",))
    return Result(NAME, checks, table(curve, "k (ms)"), files, {"curve": curve})
