"""Simulator speed next to SimSo, in one run (DESIGN.md §9).

The same 10-task rate-monotonic task set (seeded), 20 s simulated, in SimSo
and in irqlab; prints jobs per second of each and the ratio. irqlab's time
includes the Python call and JSON conversion. Best of 3 runs each.
"""

from __future__ import annotations

import json
import random
import sys
import time

from irqlab.sim import simulate
from irqlab.tasksets import MS, random_rm_taskset, rm_config

DURATION_MS = 20_000


def run_simso(tasks) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    from simso.configuration import Configuration
    from simso.core import Model

    c = Configuration()
    c.duration = DURATION_MS * c.cycles_per_ms
    for i, t in enumerate(tasks):
        c.add_task(name=t.name, identifier=i + 1, period=t.period / MS,
                   activation_date=0, wcet=t.wcet / MS, deadline=t.period / MS)
    c.add_processor(name="CPU 1", identifier=1)
    c.scheduler_info.clas = "simso.schedulers.RM"
    c.check_all()
    m = Model(c)
    t0 = time.perf_counter()
    m.run_model()
    dt = time.perf_counter() - t0
    jobs = sum(1 for task in m.results.tasks for j in task.jobs if j.end_date is not None)
    return dt, jobs


def run_irqlab(tasks) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    cfg = rm_config(tasks, DURATION_MS * MS)
    t0 = time.perf_counter()
    m = simulate(cfg).metrics
    dt = time.perf_counter() - t0
    return dt, sum(t["completed"] for t in m["tasks"])


def main() -> int:
    tasks = random_rm_taskset(random.Random(2026), 10, min_period_ms=10, max_period_ms=100)
    simso_t, simso_jobs = min(run_simso(tasks) for _ in range(3))
    ours_t, ours_jobs = min(run_irqlab(tasks) for _ in range(3))
    print(json.dumps({
        "figure": "sim-jobs-per-second",
        "taskset": "10-task RM, 20 s simulated",
        "jobs": ours_jobs,
        "simso_jobs": simso_jobs,
        "irqlab_jobs_per_s": round(ours_jobs / ours_t),
        "simso_jobs_per_s": round(simso_jobs / simso_t),
        "irqlab_over_simso": round((ours_jobs / ours_t) / (simso_jobs / simso_t), 1),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
