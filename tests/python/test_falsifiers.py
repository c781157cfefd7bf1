"""Every claim of every simulated reproduction is two-sided (or an ordering
with a margin) and breaks under its falsifier: a variant of the
experiment's own system in which the claimed effect must disappear
(python/irqlab/experiments/claims.py). Experiments that measure this
machine (`MEASURED = True`) are run by their own tests."""

from __future__ import annotations

import json
import math
from collections.abc import Callable

import pytest

from irqlab import experiments
from irqlab.experiments.claims import exact, falsify, ordering, summary, within

SIMULATED = [n for n, m in experiments.registry().items() if not getattr(m, "MEASURED", False)]


@pytest.mark.parametrize("name", SIMULATED)
def test_every_claim_breaks_under_its_falsifier(
        name: str, reproduced: Callable[[str], experiments.Result]) -> None:
    r = reproduced(name)
    assert r.checks, name
    for c in r.checks:
        assert c.falsifier is not None, c.claim
        assert c.falsifier.holds is False, (c.claim, c.falsifier)
        assert c.kind in ("band", "ordering", "exact"), c.claim
        assert c.lower is not None and math.isfinite(c.lower), c.claim
        if c.kind != "ordering":
            assert c.upper is not None and math.isfinite(c.upper) and c.lower <= c.upper
        assert c.holds == (c.value is not None and c.lower <= c.value
                           and (c.upper is None or c.value <= c.upper)), c.claim
        # a claim that fails says why, and so does one off the paper's parameters
        if not c.holds or not c.paper_params:
            assert c.note, c.claim
    doc = json.loads(json.dumps(r.to_json(), default=str))
    assert doc["summary"] == summary(r.checks)
    assert all("falsifier" in c and "holds" in c["falsifier"] for c in doc["checks"])


def test_claim_shapes_by_hand() -> None:
    c = within("x", 5, 4.0, 3, 6, falsifier="v")
    assert c.holds and c.tolerance == "3 .. 6" and c.falsifier is not None
    assert not within("x", 5, 6.5, 3, 6, falsifier="v").holds
    assert not within("x", 5, 2.9, 3, 6, falsifier="v").holds  # the lower side counts
    assert ordering("r", ">", 1.06, 1.05, falsifier="v").holds
    assert not ordering("r", ">", 1.0, 1.05, falsifier="v").holds
    assert exact("e", 0, 0, 0, falsifier="v").holds and not exact("e", 0, 1, 0, falsifier="v").holds
    with pytest.raises(ValueError, match="finite and ordered"):
        within("x", 5, 4.0, 6, 3, falsifier="v")
    with pytest.raises(ValueError, match="finite and ordered"):
        within("x", 5, 4.0, 3, math.inf, falsifier="v")


def test_falsify_runs_each_variant_once_and_records_its_verdict() -> None:
    calls: list[str | None] = []

    def measure(variant: str | None) -> float:
        calls.append(variant)
        return {None: 10.0, "halved": 5.0, "same": 10.0}[variant]

    def judge(x: float) -> list[experiments.Check]:
        return [within("a", 10, x, 9, 11, falsifier="halved"),
                within("b", 10, x, 9, 11, falsifier="halved"),
                within("c", 10, x, 9, 11, falsifier="same")]

    _, checks = falsify(measure, judge)
    assert calls == [None, "halved", "same"]
    assert [c.falsifier.holds for c in checks if c.falsifier] == [False, False, True]
    assert checks[0].falsifier is not None and checks[0].falsifier.irqlab == 5.0
    assert summary(checks) == {"claims": 3, "holding": 3, "with_falsifier": 3, "falsified": 2,
                               "paper_params": 3}
