"""Real threads on Linux: run a runtime scenario with ``irqlab-rt``.

A thin layer over ``irqlab._native.rt`` (the runtime itself is Rust):
:func:`run` returns the parsed report, the cyclictest-style summary and the
histogram file. Invalid scenarios raise :class:`ScenarioError` (a
``ValueError``) naming the field, the value and the rule; a missing
privilege or kernel feature raises :class:`RuntimeUnavailable` (an
``OSError``) with the kernel's reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from irqlab._native import rt as _rt

ScenarioError = _rt.ScenarioError
RuntimeUnavailable = _rt.RuntimeUnavailable

__all__ = [
    "RunOutput",
    "RuntimeUnavailable",
    "ScenarioError",
    "check",
    "run",
    "scenario_path",
    "scenarios",
]


@dataclass(frozen=True)
class RunOutput:
    """What ``irqlab run`` produced."""

    result: dict[str, Any]
    summary: str
    histogram: str

    @property
    def report(self) -> dict[str, Any]:
        return self.result["report"]


def scenarios() -> list[str]:
    """Names of the shipped runtime scenarios."""
    root = resources.files("irqlab") / "scenarios" / "runtime"
    return sorted(p.name.removesuffix(".yaml") for p in root.iterdir() if p.name.endswith(".yaml"))


def scenario_path(name_or_path: str | Path) -> Path:
    """A file path, or the path of a shipped runtime scenario by name."""
    p = Path(name_or_path)
    if p.exists():
        return p
    root = resources.files("irqlab") / "scenarios" / "runtime"
    shipped = Path(str(root / f"{name_or_path}.yaml"))
    if shipped.exists():
        return shipped
    raise FileNotFoundError(
        f"{name_or_path}: no such file and not a shipped runtime scenario "
        f"({', '.join(scenarios())})"
    )


def check(scenario: str | Path) -> Path:
    """Validate a scenario and build its runtime without starting it;
    returns its path. Raises :class:`ScenarioError` when invalid."""
    path = scenario_path(scenario)
    _rt.check_scenario(path.name, path.read_text())
    return path


def run(scenario: str | Path, duration_ns: int | None = None) -> RunOutput:
    """Run a scenario on real threads (blocks for its duration)."""
    path = scenario_path(scenario)
    text = path.read_text()
    result, summary, hist = _rt.run_scenario(path.name, text, duration_ns)
    return RunOutput(json.loads(result), summary, hist)
