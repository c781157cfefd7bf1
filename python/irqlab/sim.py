"""Run the simulator from Python (``irqlab._native.sim``).

``simulate(config)`` takes the resolved simulation configuration (a dict in
the shape of ``irqlab_sim::SimConfig``: servers, tasks, classes, devices,
times in integer ns) and returns the metrics and the Perfetto trace as
dicts. The YAML system model (``irqlab.model``) lowers into this form;
experiments may also build it directly. Errors raise ``ValueError`` naming
the field, the value and the rule.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from irqlab._native import sim as _sim


@dataclass
class SimResult:
    metrics: dict[str, Any]
    trace: dict[str, Any]

    def task(self, name: str) -> dict[str, Any]:
        return _by_name(self.metrics["tasks"], name)

    def server(self, name: str) -> dict[str, Any]:
        return _by_name(self.metrics["servers"], name)

    def device(self, name: str) -> dict[str, Any]:
        return _by_name(self.metrics["devices"], name)


def _by_name(items: list[dict[str, Any]], name: str) -> dict[str, Any]:
    for item in items:
        if item["name"] == name:
            return item
    raise KeyError(f"no {name!r} in the metrics")


def simulate(config: dict[str, Any]) -> SimResult:
    metrics, trace = _sim.run(json.dumps(config))
    return SimResult(json.loads(metrics), json.loads(trace))
