"""Simulator speed next to SimSo, in one run (docs/performance.md, issue 20).

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
before the first round). Each timed call starts after a full garbage
collection (``gc.collect()``, untimed), so neither side pays for collecting
the previous round's garbage (SimSo's models are cyclic: without it, SimSo's
time included collecting an earlier model's and varied by a third between
runs). Both must complete the same jobs (``same_jobs``).
``IRQLAB_BENCH_ROUNDS`` (default 5) sets the rounds.

In the same rounds, two more figures put the SimSo target (1,000x) in scale
(issue 20): the Rust call alone (``irqlab_sim::simulate`` on the parsed
configuration) and the floor, a minimal event-driven RM simulator
(``bench/sim_runner/floor.rs``: one event heap and one ready heap, nothing
else), on the same set and simulated time, each timed as the CPU time of the
call in the runner of ``bench/bench_floor.py`` (built here if needed). The
floor must complete the same jobs. ``floor_over_simso`` is how far any
simulator of these jobs can get; ``IRQLAB_BENCH_NO_FLOOR=1`` skips both.
"""

from __future__ import annotations

import gc
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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
    gc.collect()
    t0 = time.process_time()
    m = Model(c)
    m.run_model()
    dt = time.process_time() - t0
    jobs = sum(1 for task in m.results.tasks for j in task.jobs if j.end_date is not None)
    return dt, jobs


def run_irqlab(tasks) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    cfg = rm_config(tasks, DURATION_MS * MS)
    gc.collect()
    t0 = time.process_time()
    m = simulate(cfg).metrics
    dt = time.process_time() - t0
    return dt, sum(t["completed"] for t in m["tasks"])


def run_native(runner: list[str], cfg_file: Path) -> tuple[float, int]:
    """CPU seconds of one call in the Rust runner (``--floor``: the floor),
    and the jobs it completed."""
    out = subprocess.run(runner + [str(cfg_file)], check=True, capture_output=True,
                         text=True).stdout.split()
    return int(out[1]) / 1e9, int(out[3])


def spread(xs: list[float], digits: int = 1) -> list[float]:
    """min, median, max."""
    return [round(min(xs), digits), round(statistics.median(xs), digits),
            round(max(xs), digits)]


def main() -> int:
    tasks = random_rm_taskset(random.Random(2026), 10, min_period_ms=10, max_period_ms=100)
    run_simso(tasks[:1])  # imports SimSo before the first timed round
    native: dict[str, list[str]] = {}
    if os.environ.get("IRQLAB_BENCH_NO_FLOOR") != "1":
        from bench_sim_revisions import ROOT, build

        work = Path(tempfile.mkdtemp(prefix="irqlab-sim-floor-"))
        runner = str(build(ROOT, work, "head", core=True))
        cfg_file = work / "rm-10-tasks-20s.config.json"
        cfg_file.write_text(json.dumps(rm_config(tasks, DURATION_MS * MS)))
        native = {"rust": [runner], "floor": [runner, "--floor"]}
    times: dict[str, list[float]] = {"simso": [], "irqlab": [], "rust": [], "floor": []}
    jobs = {"simso": 0, "irqlab": 0, "rust": 0, "floor": 0}
    for r in range(ROUNDS):
        order = ["simso", "irqlab", *native]
        for who in order if r % 2 == 0 else reversed(order):
            if who in native:
                dt, n = run_native(native[who], cfg_file)
            else:
                dt, n = run_simso(tasks) if who == "simso" else run_irqlab(tasks)
            times[who].append(dt)
            jobs[who] = n
    simso, ours = times["simso"], times["irqlab"]
    ratios = [s / o for s, o in zip(simso, ours, strict=True)]
    extra: dict[str, object] = {}
    for who in native:
        extra[f"{who}_ms_min_med_max"] = spread([x * 1e3 for x in times[who]], 3)
        extra[f"{who}_over_simso_min_med_max"] = spread(
            [s / o for s, o in zip(simso, times[who], strict=True)])
        extra[f"{who}_same_jobs"] = jobs[who] == jobs["simso"]
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
        **extra,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
