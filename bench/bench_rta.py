"""The analysis before and after the issue-14 RTA, in the same run.

* ``rta-100-tasks``: 200 sets of 100 tasks (UUniFast, total 0.9, periods
  log-uniform 1 ms - 1 s, release jitter up to T/2, RM), every task's bound
  by the old single-job iteration (kept verbatim in
  ``crates/irqlab-analysis/examples/rta_bench.rs``) and by ``rta::fp_rta``.
* ``model-100-tasks``: ``irqlab.analysis.model_bounds`` on a quest machine of
  10 sporadic Main VCPUs x 10 periodic tasks and a generic device (the old
  ``analyze`` printed only QUEST-VCPU Eq. 1 for it: no "before").
* ``vint-fig4-sweep-before-after``: the full VINT Figure 4 sweep with this
  build and with the build of ``$IRQLAB_BEFORE_PYTHON`` (a Python whose
  ``irqlab`` is the code before, e.g. another checkout's venv), one after
  the other; the curves must be identical (no IPIs in Table II systems: the
  RTA fix does not change them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SWEEP = """
import json, sys, time, tempfile
from pathlib import Path
from irqlab import experiments
with tempfile.TemporaryDirectory() as d:
    t0 = time.perf_counter()
    r = experiments.run("vint-fig4", Path(d))
    dt = time.perf_counter() - t0
print(json.dumps({"seconds": dt, "curve": r.data["curve"]}))
"""


def model_100() -> dict:
    vcpus = [{"name": f"v{i}", "policy": "sporadic", "budget": f"{90 - 5 * i}us",
              "period": f"{1000 + 250 * i}us"} for i in range(10)]
    tasks = [{"name": f"t{i}.{k}", "vcpu": f"v{i}", "priority": k + 1,
              "period": f"{(k + 1) * 20}ms", "program": [{"compute": "5us"}]}
             for i in range(10) for k in range(10)]
    return {"machine": {"cpus": 1, "path": "quest"}, "simulation": {"duration": "1s"},
            "vcpus": vcpus + [{"name": "io", "kind": "io", "policy": "pibs",
                               "utilization": "5%", "io_class": "dev"}],
            "classes": [{"name": "dev", "consumer": "t0.0"}],
            "tasks": tasks,
            "devices": [{"name": "dev", "kind": "generic", "class": "dev",
                         "min_interarrival": "1ms", "isr": "5us", "dsr": "20us"}]}


def main() -> int:
    out = subprocess.run(["cargo", "run", "-q", "--release", "-p", "irqlab-analysis",
                          "--example", "rta_bench"], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    print(out.stdout.strip(), flush=True)

    import tempfile

    import yaml

    from irqlab.analysis import model_bounds
    from irqlab.model import load
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "m.yaml"
        p.write_text(yaml.safe_dump(model_100()))
        cfg = load(p).sim_config
    t0 = time.perf_counter()
    reps = 20
    for _ in range(reps):
        b = model_bounds(cfg)
    dt = (time.perf_counter() - t0) / reps
    print(json.dumps({"figure": "model-100-tasks", "seconds_per_analysis": round(dt, 5),
                      "tasks": len(b["tasks"]),
                      "bounded": sum(t["schedulable"] for t in b["tasks"])}), flush=True)

    runs = {"after": sys.executable}
    before = os.environ.get("IRQLAB_BEFORE_PYTHON")
    if before:
        runs["before"] = before
    res = {}
    for name, py in runs.items():
        r = subprocess.run([py, "-c", SWEEP], capture_output=True, text=True, check=True,
                           cwd="/")
        res[name] = json.loads(r.stdout.strip().splitlines()[-1])
    line = {"figure": "vint-fig4-sweep-before-after",
            "after_s": round(res["after"]["seconds"], 2)}
    if "before" in res:
        line["before_s"] = round(res["before"]["seconds"], 2)
        line["after_over_before"] = round(res["after"]["seconds"] / res["before"]["seconds"], 3)
        line["curves_identical"] = res["after"]["curve"] == res["before"]["curve"]
    else:
        line["note"] = "set IRQLAB_BEFORE_PYTHON to compare with the code before"
    print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
