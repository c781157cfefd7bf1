"""The analyses from Python (``irqlab._native.analysis``): QUEST-VCPU Eq. 1,
USB-DIFFSERV Eq. 1-3 and Eq. 4-8, the VINT Eq. 3-8 bounds of a hypervisor
machine, and the VINT sweeps (Figures 4-9).

The sweep runs in Rust on all cores, deterministic for a seed whatever the
number of threads. Times are integer nanoseconds.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from irqlab._native import analysis as _a

SCHEMES = ("DSbase", "SSbase", "DSvINT", "SSvINT")

quest_eq1 = _a.quest_eq1
usb_typical_throughput = _a.usb_typical_throughput
usb_latency_bound = _a.usb_latency_bound


def hypervisor_bounds(sim_config: dict[str, Any]) -> dict[str, Any]:
    """VINT Eq. 3-8 for a lowered hypervisor machine (``LoadedModel.sim_config``
    of a ``vms`` model): per CPU, Eq. 3 of every VCPU and pseudo-VCPU, Eq. 4
    of every guest task, Eq. 5 of every physical ISR and the flow bound of
    every virtual interrupt (Eq. 5 + 7 or 5 + 8). An item without a bound
    (``None``) says why in ``note``. Raises ``ValueError`` on a configuration
    the analysis does not cover."""
    return json.loads(_a.hypervisor_bounds(json.dumps(sim_config)))


def vint_sweep(
    params: dict[str, Any], sets: int, *, seed: int = 0, pcpus: int = 4,
    pseudo_ratio: tuple[int, int] = (1, 1), threads: int | None = None,
) -> dict[str, Any]:
    """Percentages of schedulable task sets and serviceable interrupt sets
    per scheme for `sets` generated systems (VINT Table II + `params`)."""
    if sets <= 0:
        raise ValueError(f"sets: {sets} must be positive")
    r = _a.vint_sweep(params, sets, seed=seed, pcpus=pcpus, pseudo_ratio=pseudo_ratio,
                      threads=threads or os.cpu_count() or 1)
    n = r["sets"]
    return {
        "sets": n,
        "schedulable": {k: 100.0 * v / n for k, v in r["schedulable"].items()},
        "serviceable": {k: 100.0 * v / n for k, v in r["serviceable"].items()},
    }


def vint_curve(points: Sequence[tuple[float, dict[str, Any]]], sets: int, *, seed: int = 0,
               pseudo_ratio: Sequence[tuple[int, int]] | None = None) -> list[dict[str, Any]]:
    """One sweep per point (x, params); progress on stderr."""
    out = []
    for i, (x, params) in enumerate(points):
        ratio = pseudo_ratio[i] if pseudo_ratio else (1, 1)
        r = vint_sweep(params, sets, seed=seed + i, pseudo_ratio=ratio)
        out.append({"x": x, **r})
        print(f"\r  point {i + 1}/{len(points)}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return out
