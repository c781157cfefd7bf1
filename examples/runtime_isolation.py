"""Run the shipped `isolation` model on real threads from Python, with the
flood's bottom halves on a 5 % PIBS I/O VCPU and on a plain SCHED_FIFO
I/O VCPU (no budget), and compare the control task.

    .venv/bin/python examples/runtime_isolation.py

Needs SCHED_FIFO (root or CAP_SYS_NICE) for the priority order; without it
the runtime runs in park-only mode and says so in the run's warnings.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from irqlab import runtime

PIBS = "{name: io.flood, kind: io, policy: pibs, utilization: 5%, io_class: flood}"
NONE = "{name: io.flood, kind: io, policy: fifo, priority: 90, io_class: flood}"


def main() -> None:
    text = runtime.model_path("isolation").read_text()
    with tempfile.TemporaryDirectory() as d:
        for label, model in (("5 % I/O VCPU", text), ("no budget", text.replace(PIBS, NONE))):
            path = Path(d) / "isolation.yaml"
            path.write_text(model)
            r = runtime.run_model(path, duration_ns=1_000_000_000)
            control = next(t for t in r["tasks"] if t["name"] == "control")
            flood = next(s for s in r["servers"] if s["name"] == "io.flood")
            print(f"{label:>13}: mode {r['mode']}, control {control['completed']} jobs "
                  f"{control['deadline_misses']} misses, flood used "
                  f"{flood['share_fraction'] * 100:.1f} %")


if __name__ == "__main__":
    main()
