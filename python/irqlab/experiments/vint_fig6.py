"""VINT Figure 6: serviceable interrupt sets as the VCPU period grows
(Table II otherwise).

Claims: every scheme schedules 100 % of task sets and both vINT schemes
service 100 % of interrupt sets at every period; without vINT the
percentage drops for periods above 3.5 ms (checked on both sides: >= 99 %
up to 3 ms, < 10 % from 4.5 ms). Falsifiers: Figure 4's short inter-arrival
times [0.5, 1.0] ms (vINT no longer serves everything, nor does any scheme
schedule everything), and long inter-arrival times [20, 25] ms at a 10 ms
VCPU period (the baselines no longer drop)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from irqlab.analysis import vint_curve
from irqlab.experiments import Check, Result
from irqlab.experiments._vint import MS, flat, sets_for, table, write
from irqlab.experiments.claims import exact, falsify, key_of, within

NAME = "vint-fig6"
TITLE = "VINT Figure 6: VCPU period"
SECONDS = {"quick": 7, "full": 133}  # measured: see irqlab.experiments
PERIODS = [1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]
FALSIFIERS = {
    "short-irq": "Figure 4's inter-arrival times [0.5, 1.0] ms at every point",
    "long-irq": "inter-arrival times [20, 25] ms at a 10 ms VCPU period at every point",
}


def measure(sets: int, variant: str | None) -> list[dict[str, Any]]:
    f = key_of(FALSIFIERS, variant)
    if f == "short-irq":
        return flat(PERIODS, {"irq_interarrival": (MS // 2, MS)}, sets, seed=60)
    if f == "long-irq":
        return flat(PERIODS, {"irq_interarrival": (20 * MS, 25 * MS)}, sets, seed=61)
    pts = [(t, {"vcpu_period": int(t * MS)}) for t in PERIODS]
    return vint_curve(pts, sets, seed=6)


def judge(curve: list[dict[str, Any]]) -> list[Check]:
    sched = min(p["schedulable"][s] for p in curve for s in p["schedulable"])
    vint = min(p["serviceable"][s] for p in curve for s in ("DSvINT", "SSvINT"))
    base = ("DSbase", "SSbase")
    short_ok = min(p["serviceable"][s] for p in curve if p["x"] <= 3.0 for s in base)
    long_max = max(p["serviceable"][s] for p in curve if p["x"] >= 4.5 for s in base)
    short, long_ = FALSIFIERS["short-irq"], FALSIFIERS["long-irq"]
    return [
        exact("all schemes schedule 100 % of task sets at every period (min, %)", 100, sched,
              100, shown=f"{sched:.1f} %", falsifier=short,
              note="only DSvINT at a 1 ms VCPU period falls short (see the table): its "
                   "deferrable pseudo-VCPUs sit above every VCPU and interfere in Eq. 3 with "
                   "release jitter T - C (VINT §III), which a 1 ms VCPU period cannot absorb. "
                   "The paper's figure shows 100 % there; the difference is not resolved."),
        exact("with vINT 100 % serviceable for every VCPU period (min, %)", 100, vint, 100,
              shown=f"{vint:.1f} %", falsifier=short),
        within("without vINT: serviceable up to 3 ms (min of DSbase, SSbase, %)", "100 %",
               short_ok, 99, 100, shown=f"{short_ok:.1f} %", falsifier=short),
        within("without vINT: drops for periods above 3.5 ms (max from 4.5 ms, %)", "drops",
               long_max, 0, 10, shown=f"{long_max:.1f} %", falsifier=long_),
    ]


def run(out_dir: Path, *, quick: bool = False) -> Result:
    curve, checks = falsify(lambda v: measure(sets_for(quick), v), judge)
    files = write(out_dir, "vint_fig6", curve, "VCPU period (ms)", "VINT Fig. 6")
    return Result(NAME, checks, table(curve, "T (ms)"), files, {"curve": curve})
