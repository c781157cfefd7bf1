"""Real threads on Linux: run a system model with ``irqlab-rt``.

A thin layer over ``irqlab._native.rt`` (the runtime itself is Rust):
:func:`run` runs a system model -- the file ``irqlab analyze`` and
``irqlab simulate`` take, with its upcalls, sources and ``runtime:``
options (docs/runtime.md, "irqlab run MODEL.yaml") -- and returns the
result (the simulator's metric names, plus irqlab-rt's own report under
``runtime``), the cyclictest-style summary and the histogram file;
:func:`run_model` returns the result alone. There is one format and one
loader: an invalid model, or one that cannot run for real here, raises
:class:`ScenarioError` (a ``ValueError``) naming the field, the value and
the rule; a missing privilege or kernel feature raises
:class:`RuntimeUnavailable` (an ``OSError``) with the kernel's reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from irqlab._native import rt as _rt

ScenarioError = _rt.ScenarioError
RuntimeUnavailable = _rt.RuntimeUnavailable

__all__ = [
    "RunOutput",
    "RuntimeUnavailable",
    "ScenarioError",
    "check_model",
    "model_path",
    "run",
    "run_model",
]


@dataclass(frozen=True)
class RunOutput:
    """What ``irqlab run`` produced."""

    result: dict[str, Any]
    summary: str
    histogram: str

    @property
    def report(self) -> dict[str, Any] | None:
        """irqlab-rt's report (quest paths; ``None`` on the linux path)."""
        return self.result.get("runtime")


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
    # the full path: files the model names (arrival traces) are read
    # relative to its directory
    return list(_rt.check_model(str(path), path.read_text()))


def run(model: str | Path, duration_ns: int | None = None,
        seed: int | None = None) -> RunOutput:
    """Run a system model on real threads (blocks for its duration)."""
    path = model_path(model)
    # the full path: files the model names (arrival traces) are read
    # relative to its directory
    result, summary, hist = _rt.run_model(str(path), path.read_text(), duration_ns, seed)
    return RunOutput(json.loads(result), summary, hist)


def run_model(model: str | Path, duration_ns: int | None = None,
              seed: int | None = None) -> dict[str, Any]:
    """Run a system model on real threads (blocks for its duration); returns
    the result (``tasks``, ``devices``, ``servers``, ``notes``, ``runtime``...)."""
    return run(model, duration_ns, seed).result
