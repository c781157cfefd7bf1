"""Regenerate the simulator's golden files (``tests/golden.rs`` compares).

Every system the shipped scenarios and the ``irqlab reproduce`` experiments
(quick mode) hand to the simulator is recorded: its resolved configuration
(``NAME.config.json``); the metrics of each (``NAME.metrics.json``, the
``metrics.json`` text) are then written by the Rust test itself
(``IRQLAB_GOLDEN_WRITE=1``), so the text compared is the text written.
The Rust test runs each configuration and compares the metrics byte for byte,
so a refactoring or optimisation of the simulator that changes any result
fails. Regenerate only on purpose (a change of behaviour, stated in the
commit): ``.venv/bin/python crates/irqlab-sim/tests/golden/generate.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import irqlab.sim as sim_module
from irqlab import experiments, model

HERE = Path(__file__).resolve().parent


class _Recorder:
    """Stands in for ``irqlab._native.sim``: records the configuration of
    each ``run`` (a dict, or its JSON text), then runs it."""

    def __init__(self, native: object) -> None:
        self.native = native
        self.label = ""
        self.seen: dict[str, tuple[str, str]] = {}

    def run(self, config: object, *args: object) -> object:
        cfg = json.loads(config) if isinstance(config, str) else config
        text = json.dumps(cfg, sort_keys=True)
        digest = hashlib.sha256(text.encode()).hexdigest()[:10]
        if digest not in self.seen:
            self.seen[digest] = (self.label, text)
        return self.native.run(config, *args)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self.native, name)


def main() -> int:
    rec = _Recorder(sim_module._sim)
    sim_module._sim = rec  # type: ignore[assignment]
    for name in model.scenarios():
        rec.label = f"scenario-{name}"
        sim_module.simulate(model.load(model.scenario_path(name)).sim_config)
    with tempfile.TemporaryDirectory() as tmp:
        for name in experiments.registry():
            rec.label = f"exp-{name}"
            experiments.run(name, Path(tmp) / name, quick=True)
    for old in HERE.glob("*.json"):
        old.unlink()
    counts: dict[str, int] = {}
    for label, text in rec.seen.values():
        k = counts.get(label, 0)
        counts[label] = k + 1
        stem = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{label}-{k:03d}")
        (HERE / f"{stem}.config.json").write_text(text + "\n")
    subprocess.run(["cargo", "test", "-q", "-p", "irqlab-sim", "--release", "--test", "golden"],
                   check=True, env={**os.environ, "IRQLAB_GOLDEN_WRITE": "1"})
    print(f"{len(rec.seen)} systems from {len(counts)} sources", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
