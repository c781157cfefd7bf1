"""Real threads on Linux: run a system model (or a runtime scenario) with
``irqlab-rt``.

A thin layer over ``irqlab._native.rt`` (the runtime itself is Rust):
:func:`run_model` runs a system model -- the file ``irqlab analyze`` and
``irqlab simulate`` take -- and returns its result (the simulator's metric
names: docs/runtime.md, "irqlab run MODEL.yaml"); :func:`run` runs a runtime
scenario (the lower-level format with upcalls and kernel upcalls) and
returns the parsed report, the cyclictest-style summary and the histogram
file. :func:`is_model` tells the two apart (a model has ``machine:``).
Invalid models and scenarios raise :class:`ScenarioError` (a
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
    "check_model",
    "is_model",
    "run",
    "run_model",
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


def is_model(path: Path) -> bool:
    """Is ``path`` a system model (a top-level ``machine:`` key) rather than a
    runtime scenario?"""
    import yaml

    try:
        doc = yaml.safe_load(path.read_text())
    except yaml.YAMLError:
        return False
    return isinstance(doc, dict) and "machine" in doc


def model_path(name_or_path: str | Path) -> Path:
    """A file path, or a shipped system model (``irqlab.model.scenarios``)
    by name."""
    from irqlab.model import scenario_path as shipped_model

    p = Path(name_or_path)
    if p.exists():
        return p
    return shipped_model(str(name_or_path))


def check_model(model: str | Path) -> list[str]:
    """Load a system model and lower it for a real run without running it;
    returns the notes (model values the real machine replaces with its own).
    Raises :class:`ScenarioError` for what cannot run for real (field, value,
    reason)."""
    path = model_path(model)
    return list(_rt.check_model(path.name, path.read_text()))


def run_model(model: str | Path, duration_ns: int | None = None,
              seed: int | None = None) -> dict[str, Any]:
    """Run a system model on real threads (blocks for its duration); returns
    the result (``tasks``, ``devices``, ``servers``, ``notes``...)."""
    path = model_path(model)
    return json.loads(_rt.run_model(path.name, path.read_text(), duration_ns, seed))
