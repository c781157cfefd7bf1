"""VINT Figure 5: serviceable interrupt sets for long inter-arrival times
[k, k + 5] ms (Table II otherwise).

The paper's points are where the baselines stop servicing as the range
shrinks: DSbase under 1 % from [13, 18] ms, SSbase under 2 % from [11, 16]
ms. The claims are those crossings, two-sided (+/- 1 ms, the figure's
step), not "under 1 %" alone, which a curve of zeros would pass.
Falsifiers: a VCPU period of 2 ms (the baselines then service short
ranges too, Figure 6) and Figure 4's short inter-arrival times [0.6, 1.1]
ms (not every task set is schedulable any more)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from irqlab.analysis import vint_curve
from irqlab.experiments import Check, Result
from irqlab.experiments._vint import MS, falsifier_sets, flat, sets_for, table, write
from irqlab.experiments.claims import exact, falsify, key_of, within

NAME = "vint-fig5"
TITLE = "VINT Figure 5: long interrupt inter-arrival times [k, k+5] ms"
SECONDS = {"quick": 8, "full": 178}  # measured: see irqlab.experiments
KS = list(range(5, 21))
FALSIFIERS = {
    "short-vcpu": "VCPU period 2 ms (Table II: 10 ms)",
    "short-irq": "Figure 4's inter-arrival times [0.6, 1.1] ms at every point",
}


def measure(sets: int, variant: str | None) -> list[dict[str, Any]]:
    f = key_of(FALSIFIERS, variant)
    if f == "short-irq":
        return flat(KS, {"irq_interarrival": (6 * MS // 10, 11 * MS // 10)}, sets, seed=50)
    extra = {"vcpu_period": 2 * MS} if f == "short-vcpu" else {}
    pts = [(k, {"irq_interarrival": (k * MS, (k + 5) * MS), **extra}) for k in KS]
    return vint_curve(pts, falsifier_sets(sets) if f else sets, seed=5)


def crossing(curve: list[dict[str, Any]], scheme: str, below: float) -> float:
    """The largest k at which `scheme` services under `below` % (the range
    from which on, shrinking, it stops servicing); inf if it never does."""
    ks = [p["x"] for p in curve if p["serviceable"][scheme] < below]
    return float(max(ks)) if ks else float("inf")


def judge(curve: list[dict[str, Any]]) -> list[Check]:
    sched = min(p["schedulable"][s] for p in curve for s in p["schedulable"])
    ds, ss = crossing(curve, "DSbase", 1.0), crossing(curve, "SSbase", 2.0)
    vcpu = FALSIFIERS["short-vcpu"]
    shift = ("irqlab's baselines need inter-arrival ranges 2 ms longer than the paper's (the "
             "table: DSbase 0.4 % at 15, 54 % at 16). Eq. 8's VCPU term ceil((W + C)/T)(T - C) "
             "makes a baseline's response about one VCPU period long; the paper's curve "
             "implies a response 2-3 ms shorter. Not resolved.")
    return [
        exact("all schemes schedule 100 % of task sets (min, %)", 100, sched, 100,
              shown=f"{sched:.1f} %", falsifier=FALSIFIERS["short-irq"]),
        within("DSbase services under 1 % from [13, 18] ms on (largest such k, ms)", 13, ds,
               12, 14, falsifier=vcpu, note=shift),
        within("SSbase services under 2 % from [11, 16] ms on (largest such k, ms)", 11, ss,
               10, 12, falsifier=vcpu, note=shift),
    ]


def run(out_dir: Path, *, quick: bool = False) -> Result:
    curve, checks = falsify(lambda v: measure(sets_for(quick), v), judge)
    files = write(out_dir, "vint_fig5", curve, "k (ms)", "VINT Fig. 5", ("serviceable",))
    return Result(NAME, checks, table(curve, "k (ms)"), files, {"curve": curve})
