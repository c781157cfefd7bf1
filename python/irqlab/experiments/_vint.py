"""Shared plotting/CSV for VINT Figures 4-9 (one sweep per x value)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from irqlab import plots
from irqlab.analysis import SCHEMES, vint_sweep

MS = 1_000_000
US = 1_000


def sets_for(quick: bool) -> int:
    return 200 if quick else 10_000


def write(out_dir: Path, stem: str, curve: list[dict[str, Any]], xlabel: str, title: str,
          metrics: tuple[str, ...] = ("schedulable", "serviceable")) -> list[str]:
    files = []
    xs = [p["x"] for p in curve]
    for metric in metrics:
        files.append(str(plots.lines(
            out_dir / f"{stem}_{metric}.png",
            {s: (xs, [p[metric][s] for p in curve]) for s in SCHEMES},
            title=f"{title}: {metric} sets", xlabel=xlabel, ylabel="%")))
    csv = out_dir / f"{stem}.csv"
    head = "x," + ",".join(f"{m}_{s}" for m in ("schedulable", "serviceable") for s in SCHEMES)
    rows = [",".join([str(p["x"])] + [f"{p[m][s]:.2f}" for m in ("schedulable", "serviceable")
                                      for s in SCHEMES]) for p in curve]
    csv.write_text(head + "\n" + "\n".join(rows) + "\n")
    files.append(str(csv))
    return files


def table(curve: list[dict[str, Any]], xlabel: str) -> str:
    head = f"{xlabel:>10} " + " ".join(f"{'sched ' + s:>14}" for s in SCHEMES) + " " + \
        " ".join(f"{'serv ' + s:>13}" for s in SCHEMES)
    return head + "\n" + "\n".join(
        f"{p['x']!s:>10} " + " ".join(f"{p['schedulable'][s]:14.1f}" for s in SCHEMES) + " "
        + " ".join(f"{p['serviceable'][s]:13.1f}" for s in SCHEMES) for p in curve)


def at(curve: list[dict[str, Any]], x: float) -> dict[str, Any]:
    return min(curve, key=lambda p: abs(p["x"] - x))


def falsifier_sets(sets: int) -> int:
    """Sets per point of a falsifier's sweep: a tenth of the experiment's
    (at least 200). A falsifier needs a clear verdict, not the figure's
    precision; its sweeps would otherwise double the run time."""
    return max(200, sets // 10)


def flat(xs: list[Any], params: dict[str, Any], sets: int, seed: int,
         pseudo_ratio: tuple[int, int] = (1, 1)) -> list[dict[str, Any]]:
    """One sweep of the system `params` reported at every x: the falsifier
    variants that replace what the figure varies by one fixed system."""
    r = vint_sweep(params, falsifier_sets(sets), seed=seed, pseudo_ratio=pseudo_ratio)
    return [{"x": x, **r} for x in xs]
