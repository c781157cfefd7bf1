"""Checks of experiments measured on this machine (UPCALL Figures 1-2 and 4-6,
QUEST-VCPU Figure 7, LATENCY-IP Table 4 from real latencies).

A measured figure cannot be made to fail by changing a model parameter, so
each claim carries a *falsifier*: the same test applied to a variant of the
measured system in which the paper's effect is absent (another kind of event,
another mechanism, another budget unit). The JSON records the claim's result
and the falsifier's next to each other; a claim whose falsifier also holds
does not discriminate on this machine, and says so. Timing results are
reported, never asserted in the test suite.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from irqlab.experiments import Check, Result


@dataclass
class MeasuredCheck(Check):
    """A check plus its falsifier: ``falsifier`` names the variant,
    ``falsifier_irqlab`` is the same statistic there and
    ``falsifier_holds`` whether the claim's test passes there (it must not)."""

    falsifier: str = ""
    falsifier_irqlab: Any = None
    falsifier_holds: bool | None = None


def within(v: float, lo: float, hi: float) -> bool:
    return lo <= v <= hi  # False for NaN


def ratio(a: float, b: float) -> float:
    """``a / b``; infinity for a positive ``a`` over 0, NaN for 0 / 0."""
    if b == 0:
        return float("inf") if a > 0 else float("nan")
    return a / b


def band_check(claim: str, paper: Any, value: float, lo: float, hi: float,
               falsifier: str, falsifier_value: float, digits: int = 3) -> MeasuredCheck:
    """A two-sided band ``[lo, hi]`` applied to this machine's value and to
    the falsifier's."""
    return MeasuredCheck(
        claim, paper, round(value, digits), f"[{lo:g}, {hi:g}]", within(value, lo, hi),
        falsifier, round(falsifier_value, digits), within(falsifier_value, lo, hi),
    )


def with_falsifiers(table: str, checks: list[MeasuredCheck]) -> str:
    """``table`` plus one line per claim: the falsifier, its value, and
    whether the claim's test (wrongly) passes there."""
    if not checks:
        return table
    out = [table, "", "falsifiers (the claim's test on a variant without the effect; must fail):"]
    for i, c in enumerate(checks, 1):
        verdict = "passes too: does not discriminate" if c.falsifier_holds else "fails, as it must"
        out.append(f"  claim {i}: {c.falsifier} -> {c.falsifier_irqlab} ({verdict})")
    return "\n".join(out)


def skipped(name: str, why: str) -> Result:
    """The result of a measured experiment that cannot run here."""
    return Result(name, [], f"skipped: {why}", [], {"skipped": why})
