"""Agreement with SimSo: on random uniprocessor rate-monotonic task sets (no
servers, no interrupts) every job's completion time equals SimSo's."""

from __future__ import annotations

import random

import pytest

from irqlab.sim import simulate
from irqlab.tasksets import MS, PeriodicTask, random_rm_taskset, rm_config

simso = pytest.importorskip("simso.core", reason="SimSo is installed by `make test`")


def simso_completions(tasks: list[PeriodicTask], duration_ms: int) -> dict[str, list[int]]:
    from simso.configuration import Configuration
    from simso.core import Model

    c = Configuration()
    assert c.cycles_per_ms == 1_000_000  # 1 cycle = 1 ns
    c.duration = duration_ms * c.cycles_per_ms
    for i, t in enumerate(tasks):
        c.add_task(
            name=t.name,
            identifier=i + 1,
            period=t.period / MS,
            activation_date=t.offset / MS,
            wcet=t.wcet / MS,
            deadline=t.period / MS,
        )
    c.add_processor(name="CPU 1", identifier=1)
    c.scheduler_info.clas = "simso.schedulers.RM"
    c.check_all()
    m = Model(c)
    m.run_model()
    return {
        task.name: [int(j.end_date) for j in task.jobs if j.end_date is not None]
        for task in m.results.tasks
    }


@pytest.mark.parametrize("seed", range(12))
def test_completion_times_match_simso(seed: int) -> None:
    rng = random.Random(seed)
    tasks = random_rm_taskset(rng, rng.randint(2, 8))
    duration_ms = 1_000
    ours = simulate(rm_config(tasks, duration_ms * MS)).metrics
    theirs = simso_completions(tasks, duration_ms)
    for t in ours["tasks"]:
        want = [x for x in theirs[t["name"]] if x <= duration_ms * MS]
        assert t["completions_ns"] == want, t["name"]
        assert t["deadline_misses"] == 0
