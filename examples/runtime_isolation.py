"""Run the shipped `isolation` runtime scenario from Python, with and
without an I/O VCPU for the flood, and compare the control task.

    .venv/bin/python examples/runtime_isolation.py

Needs SCHED_FIFO (root or CAP_SYS_NICE) for the priority order; without it
the runtime runs in park-only mode and says so in the report's warnings.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from irqlab import runtime

PIBS = "{name: io.flood, kind: io, policy: pibs, utilization: 5%, io_class: flood, serves: bulk}"
NONE = "{name: io.flood, kind: io, policy: unbounded, io_class: flood}"


def main() -> None:
    text = runtime.scenario_path("isolation").read_text()
    with tempfile.TemporaryDirectory() as d:
        for label, scenario in (("5 % I/O VCPU", text), ("no I/O VCPU", text.replace(PIBS, NONE))):
            path = Path(d) / "scenario.yaml"
            path.write_text(scenario)
            out = runtime.run(path, duration_ns=1_000_000_000)
            rep = out.report
            control = next(t for t in rep["tasks"] if t["name"] == "control")
            flood = next(s for s in rep["servers"] if s["name"] == "io.flood")
            print(f"{label:>13}: mode {rep['mode']}, control {control['jobs']} jobs "
                  f"{control['deadline_misses']} misses, flood used {flood['share'] * 100:.1f} %")


if __name__ == "__main__":
    main()
