"""Claims of a paper reproduction: two-sided, and each with a falsifier.

A claim (`Check`) says what the paper reports, what irqlab computed, and the
band irqlab's value must fall in: a lower *and* an upper side (`within`), an
ordering with a stated margin (`ordering`: a ratio or difference that must
reach the margin), or an exact outcome (`exact`: a deadline met or missed).

Every claim also names a *falsifier*: a variant of the experiment's own
system in which the claimed effect must disappear (no I/O VCPU, one
interrupter instead of two, no vINT, SS instead of PIBS, ...). `falsify`
runs the experiment's measurement once more per variant, judges the same
claims on it and records, next to each claim, its value and verdict there.
A claim that still holds under its falsifier cannot tell the mechanism it
credits from its absence: the test suite fails on it
(tests/python/test_falsifiers.py).

Design principles: one small module that every experiment uses the same
way (measure(variant) -> data, judge(data) -> claims); the falsifier's
result sits in the claim's JSON (`--json`); a claim says whether it runs at
the paper's own parameters (`paper_params`) and carries the derivation of
any value the paper does not state (`note`).
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass
class Falsifier:
    """The variant that must break the claim, and what the claim gives there."""

    variant: str
    irqlab: Any = None
    holds: bool | None = None


@dataclass
class Check:
    """One claim of a paper and how irqlab's figure compares with it.

    `kind` is "band" (`lower <= value <= upper`, both finite), "ordering"
    (`value >= lower`, the margin; value is a ratio or a difference) or
    "exact" (`value == lower == upper`). `tolerance` is the band as text.
    """

    claim: str
    paper: Any
    irqlab: Any
    tolerance: Any
    holds: bool
    kind: str = "band"
    value: float | None = None
    lower: float | None = None
    upper: float | None = None
    falsifier: Falsifier | None = None
    paper_params: bool = True
    note: str = ""


def _num(x: float) -> str:
    return f"{x:.6g}"


def key_of(falsifiers: dict[str, str], variant: str | None) -> str | None:
    """The key in an experiment's `FALSIFIERS` (key -> description) of the
    variant `falsify` passes (the description), or None for the system
    itself."""
    if variant is None:
        return None
    for k, v in falsifiers.items():
        if v == variant:
            return k
    raise ValueError(f"unknown falsifier {variant!r}; known: {', '.join(falsifiers)}")


def within(claim: str, paper: Any, value: float, lower: float, upper: float, *,
           falsifier: str, shown: Any = None, paper_params: bool = True,
           note: str = "") -> Check:
    """A two-sided band: `lower <= value <= upper`."""
    if not (math.isfinite(lower) and math.isfinite(upper) and lower <= upper):
        raise ValueError(f"{claim}: band [{lower}, {upper}] must be finite and ordered")
    ok = bool(lower <= value <= upper)
    return Check(claim, paper, value if shown is None else shown,
                 f"{_num(lower)} .. {_num(upper)}", ok, "band", float(value), lower, upper,
                 Falsifier(falsifier), paper_params, note)


def ordering(claim: str, paper: Any, value: float, margin: float, *, falsifier: str,
             shown: Any = None, what: str = "", paper_params: bool = True,
             note: str = "") -> Check:
    """An ordering with a margin: `value >= margin` (value a ratio A/B or a
    difference A - B; `what` says which, e.g. "SS / PIBS")."""
    ok = bool(value >= margin)
    return Check(claim, paper, value if shown is None else shown,
                 f"{what + ' ' if what else ''}>= {_num(margin)}", ok, "ordering",
                 float(value), margin, None, Falsifier(falsifier), paper_params, note)


def exact(claim: str, paper: Any, value: float, expected: float, *, falsifier: str,
          shown: Any = None, paper_params: bool = True, note: str = "") -> Check:
    """An exact outcome (1/0 for yes/no, or a count)."""
    return Check(claim, paper, value if shown is None else shown, f"== {_num(expected)}",
                 bool(value == expected), "exact", float(value), expected, expected,
                 Falsifier(falsifier), paper_params, note)


def memo(fn: Callable[[dict[str, Any]], T]) -> Callable[[dict[str, Any]], T]:
    """`fn` (e.g. `irqlab.sim.simulate`) memoized on its config: a falsifier
    that changes one system of an experiment re-runs only that one."""
    cache: dict[str, T] = {}

    def call(cfg: dict[str, Any]) -> T:
        k = json.dumps(cfg, sort_keys=True, default=str)
        if k not in cache:
            cache[k] = fn(cfg)
        return cache[k]

    return call


def falsify(measure: Callable[[str | None], T],
            judge: Callable[[T], list[Check]]) -> tuple[T, list[Check]]:
    """Measure the experiment's system (`variant=None`), judge its claims,
    then measure each falsifier variant once, judge the same claims there
    and record each claim's value and verdict under its own falsifier.

    `judge` must return the same claims, in the same order, for every
    variant."""
    t0 = time.monotonic()
    base = measure(None)
    checks = judge(base)
    variants: list[str] = []
    for c in checks:
        if c.falsifier is not None and c.falsifier.variant not in variants:
            variants.append(c.falsifier.variant)
    for i, v in enumerate(variants):
        # progress on stderr: the paper's system is done, the falsifiers
        # follow (each a run of about the same length)
        print(f"  [{time.monotonic() - t0:5.0f} s] falsifier {i + 1}/{len(variants)}: {v}",
              file=sys.stderr, flush=True)
        alt = judge(measure(v))
        if len(alt) != len(checks):
            raise RuntimeError(f"falsifier {v!r}: {len(alt)} claims, expected {len(checks)}")
        for c, a in zip(checks, alt, strict=True):
            if c.falsifier is not None and c.falsifier.variant == v:
                c.falsifier.irqlab = a.irqlab
                c.falsifier.holds = a.holds
    return base, checks


def summary(checks: list[Check]) -> dict[str, int]:
    """Counts for the closing note: claims, holding, with a falsifier, broken
    by it, at the paper's own parameters."""
    return {
        "claims": len(checks),
        "holding": sum(c.holds for c in checks),
        "with_falsifier": sum(c.falsifier is not None for c in checks),
        "falsified": sum(c.falsifier is not None and c.falsifier.holds is False
                         for c in checks),
        "paper_params": sum(c.paper_params for c in checks),
    }


def markdown(doc: dict[str, Any]) -> str:
    """One experiment's `--json` document as the claim table of
    docs/reproductions.md: paper, irqlab, band, holds, falsifier and its
    result, and the note of every claim that fails or runs off the paper's
    parameters."""

    def cell(x: Any) -> str:
        return str(x).replace("|", "/").replace("\n", " ")

    rows = ["| claim | paper | irqlab | band | holds | falsifier -> irqlab there (verdict) |",
            "|---|---|---|---|---|---|"]
    notes = []
    for i, c in enumerate(doc["checks"], 1):
        f = c.get("falsifier") or {}
        verdict = {False: "breaks it", True: "**still holds**", None: "not run"}[f.get("holds")]
        star = "" if c.get("paper_params", True) else " (not the paper's parameters)"
        rows.append(f"| {i}. {cell(c['claim'])}{star} | {cell(c['paper'])} | "
                    f"{cell(c['irqlab'])} | {cell(c['tolerance'])} | "
                    f"{'yes' if c['holds'] else '**no**'} | {cell(f.get('variant', '-'))} -> "
                    f"{cell(f.get('irqlab'))} ({verdict}) |")
        if c.get("note") and (not c["holds"] or not c.get("paper_params", True)):
            notes.append(f"{i}. {c['note']}")
    return "\n".join(rows + ([""] + notes if notes else []))


def update_doc(text: str, docs: list[dict[str, Any]]) -> str:
    """Replace each `<!-- claims NAME -->` ... `<!-- /claims -->` block of a
    markdown text by NAME's claim table (the experiment's `--json`), after
    the experiment's own results table when it gives one (`data.table_md`,
    e.g. usb-latency's Table I next to the paper)."""
    import re

    for d in docs:
        s = d.get("summary") or summary([])
        extra = (d.get("data") or {}).get("table_md")
        block = (f"<!-- claims {d['experiment']} -->\n" + (f"{extra}\n\n" if extra else "")
                 + f"{s['holding']}/{s['claims']} claims hold, {s['falsified']}/{s['claims']} "
                 f"broken by their falsifier, {s['paper_params']}/{s['claims']} at the paper's "
                 f"parameters.\n\n{markdown(d)}\n<!-- /claims -->")
        pat = re.compile(rf"<!-- claims {re.escape(d['experiment'])} -->.*?<!-- /claims -->",
                         re.S)
        text = pat.sub(lambda _m, b=block: b, text)
    return text


if __name__ == "__main__":
    # python -m irqlab.experiments.claims docs/reproductions.md out/*.json
    import sys
    from pathlib import Path

    doc = Path(sys.argv[1])
    jsons = [json.loads(Path(p).read_text()) for p in sys.argv[2:]]
    doc.write_text(update_doc(doc.read_text(), jsons))
