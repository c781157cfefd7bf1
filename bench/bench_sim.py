"""Simulator speed next to SimSo, in one run (DESIGN.md §9, issue 20).

The same 10-task rate-monotonic task set (seeded), 20 s simulated, in SimSo
and in irqlab, in alternating rounds; prints the jobs per second of each and
the ratio, taken per round and summarised as min / median / max.

What is timed is the CPU time of the process (``time.process_time``) around
the same work on both sides, once the task set is built:

* SimSo: building its ``Model`` from a ``Configuration`` and ``run_model()``
  (the ``Configuration`` itself, like irqlab's configuration dict, is built
  before the clock starts);
* irqlab: ``irqlab.sim.simulate(cfg).metrics`` from Python, which converts
  the configuration dict, validates it, builds the simulation, runs it and
  hands the metrics back as Python objects.

Neither side includes interpreter start-up or imports (both are imported
before the first round). Both must complete the same jobs (``same_jobs``).
``IRQLAB_BENCH_ROUNDS`` (default 5) sets the rounds.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import time

from irqlab.sim import simulate
from irqlab.tasksets import MS, random_rm_taskset, rm_config

DURATION_MS = 20_000
ROUNDS = int(os.environ.get("IRQLAB_BENCH_ROUNDS", "5"))


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
    t0 = time.process_time()
    m = Model(c)
    m.run_model()
    dt = time.process_time() - t0
    jobs = sum(1 for task in m.results.tasks for j in task.jobs if j.end_date is not None)
    return dt, jobs


def run_irqlab(tasks) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    cfg = rm_config(tasks, DURATION_MS * MS)
    t0 = time.process_time()
    m = simulate(cfg).metrics
    dt = time.process_time() - t0
    return dt, sum(t["completed"] for t in m["tasks"])


def spread(xs: list[float], digits: int = 1) -> list[float]:
    """min, median, max."""
    return [round(min(xs), digits), round(statistics.median(xs), digits),
            round(max(xs), digits)]


def main() -> int:
    tasks = random_rm_taskset(random.Random(2026), 10, min_period_ms=10, max_period_ms=100)
    run_simso(tasks[:1])  # imports SimSo before the first timed round
    simso: list[float] = []
    ours: list[float] = []
    jobs = {"simso": 0, "irqlab": 0}
    for r in range(ROUNDS):
        order = ("simso", "irqlab") if r % 2 == 0 else ("irqlab", "simso")
        for who in order:
            dt, n = run_simso(tasks) if who == "simso" else run_irqlab(tasks)
            (simso if who == "simso" else ours).append(dt)
            jobs[who] = n
    ratios = [s / o for s, o in zip(simso, ours, strict=True)]
    print(json.dumps({
        "figure": "sim-jobs-per-second",
        "taskset": "10-task RM, 20 s simulated",
        "rounds": ROUNDS,
        "jobs": jobs["irqlab"],
        "same_jobs": jobs["irqlab"] == jobs["simso"],
        "irqlab_ms_min_med_max": spread([x * 1e3 for x in ours], 3),
        "simso_ms_min_med_max": spread([x * 1e3 for x in simso]),
        "irqlab_jobs_per_s_median": round(jobs["irqlab"] / statistics.median(ours)),
        "simso_jobs_per_s_median": round(jobs["simso"] / statistics.median(simso)),
        "irqlab_over_simso_min_med_max": spread(ratios),
        "irqlab_over_simso_per_round": [round(x, 1) for x in ratios],
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
