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
from pathlib import Path
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


def write_outputs(
    result: SimResult, out_dir: Path, *, title: str = "irqlab simulation"
) -> list[Path]:
    """Write ``metrics.json``, ``trace.json`` when tracing was on (open in
    ui.perfetto.dev) and
    PNG plots (CPU share per server; I/O latency per device) into
    ``out_dir``; returns the paths. JSON is written with sorted keys so the
    same run gives byte-identical files."""
    from irqlab import plots

    out_dir.mkdir(parents=True, exist_ok=True)
    files = [out_dir / "metrics.json"]
    files[0].write_text(json.dumps(result.metrics, indent=1, sort_keys=True) + "\n")
    if result.trace.get("traceEvents"):  # tracing was on
        files.append(out_dir / "trace.json")
        files[1].write_text(json.dumps(result.trace, sort_keys=True) + "\n")
    m = result.metrics
    shares = {s["name"]: {"CPU share %": 100.0 * s["share"]} for s in m["servers"]}
    if shares:
        files.append(plots.bars(out_dir / "cpu_share.png", shares, title=f"{title}: CPU share",
                                ylabel="% CPU"))
    lat = {
        d["name"]: {"mean": d["latency"]["mean"] / 1e3, "max": d["latency"]["max"] / 1e3}
        for d in m["devices"]
        if d["latency"]["count"]
    }
    if lat:
        files.append(plots.bars(out_dir / "io_latency.png", lat, title=f"{title}: I/O latency",
                                ylabel="us"))
    return files
