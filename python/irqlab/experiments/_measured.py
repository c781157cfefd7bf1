"""Claims of the experiments measured on this machine (UPCALL Figures 1-2 and
4-6, QUEST-VCPU Figure 7, LATENCY-IP Table 4 from real latencies).

A measured figure cannot be made to fail by changing a model parameter, so
each claim's falsifier (``irqlab.experiments.claims``) is a variant of the
measured system in which the paper's effect is absent -- another kind of
event, a SCHED_FIFO server, the same configuration measured twice -- taken in
the same run. The same band is applied to it and its value and verdict are
recorded under the claim; a claim whose falsifier also holds does not
discriminate on this machine, and the JSON says so. Timing results are
reported, never asserted in the test suite.
"""

from __future__ import annotations

from typing import Any

from irqlab.experiments import Result
from irqlab.experiments.claims import Check, within


def ratio(a: float, b: float) -> float:
    """``a / b``; infinity for a positive ``a`` over 0, NaN for 0 / 0."""
    if b == 0:
        return float("inf") if a > 0 else float("nan")
    return a / b


def band_check(claim: str, paper: Any, value: float, lo: float, hi: float,
               falsifier: str, falsifier_value: float, digits: int = 3,
               note: str = "") -> Check:
    """The two-sided band ``[lo, hi]`` applied to this machine's value and to
    the falsifier's (NaN holds nowhere)."""
    c = within(claim, paper, value, lo, hi, falsifier=falsifier, shown=round(value, digits),
               note=note)
    there = within(claim, paper, falsifier_value, lo, hi, falsifier=falsifier)
    assert c.falsifier is not None
    c.falsifier.irqlab = round(falsifier_value, digits)
    c.falsifier.holds = there.holds
    return c


def skipped(name: str, why: str) -> Result:
    """The result of a measured experiment that cannot run here."""
    return Result(name, [], f"skipped: {why}", [], {"skipped": why})
