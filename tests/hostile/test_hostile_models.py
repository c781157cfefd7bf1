"""Hostile model files (``models/``, written by ``generate.py``): each one
gets exit 2 from ``irqlab check`` with a one-line message naming the field
and the rule, or -- the ``ok`` cases -- is accepted and simulates within the
timeout and the memory cap (``conftest.py``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hostile_util import SIMULATE_TIMEOUT_S, assert_clean_error, irqlab_fork

HERE = Path(__file__).parent
EXPECTED: dict[str, dict] = json.loads((HERE / "expected.json").read_text())


def _model(name: str, tmp_path: Path) -> Path:
    if not EXPECTED[name]["generated"]:
        return HERE / "models" / f"{name}.yaml"
    sys.path.insert(0, str(HERE))
    try:
        import generate
    finally:
        sys.path.remove(str(HERE))
    p = tmp_path / f"{name}.yaml"
    p.write_text(generate.big_cases()[name])
    return p


def _params() -> list:
    out = []
    for name, e in sorted(EXPECTED.items()):
        marks = [pytest.mark.xfail(strict=True, reason=e["xfail"])] if e["xfail"] else []
        out.append(pytest.param(name, marks=marks, id=name))
    return out


def test_suite_size() -> None:
    assert len(EXPECTED) >= 150
    assert sum(1 for _ in (HERE / "models").glob("*.yaml")) + sum(
        e["generated"] for e in EXPECTED.values()) == len(EXPECTED)


@pytest.mark.parametrize("name", _params())
def test_hostile_model(name: str, tmp_path: Path) -> None:
    e = EXPECTED[name]
    model = _model(name, tmp_path)
    r = irqlab_fork("check", model)
    if e["expect"] != "ok":
        assert_clean_error(r, e["expect"])
        return
    assert r.code == 0, r.err
    assert "\x1b" not in r.out
    if e["simulate"]:
        s = irqlab_fork("simulate", model, "--out", tmp_path / "out",
                        timeout=SIMULATE_TIMEOUT_S)
        assert s.code == 0, s.err[-2000:]
        metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
        assert metrics["duration_ns"] > 0
