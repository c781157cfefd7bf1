"""Plain periodic task sets as simulator configurations.

A fixed-priority task set with no servers and no interrupts is a special
case of an irqlab system: each task runs in its own unbounded server ranked
by its period (rate-monotonic) or by an explicit priority. Used to compare
irqlab's schedules with other simulators (SimSo) job by job.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

MS = 1_000_000


@dataclass(frozen=True)
class PeriodicTask:
    """A periodic task: ``wcet``, ``period`` and ``offset`` in integer ns."""

    name: str
    wcet: int  # ns
    period: int  # ns
    offset: int = 0

    @property
    def utilization(self) -> float:
        """``wcet / period`` as a fraction (0-1)."""
        return self.wcet / self.period


def rm_config(tasks: list[PeriodicTask], duration: int) -> dict[str, Any]:
    """Rate-monotonic uniprocessor configuration (ties by task order) of
    ``duration`` ns, in the shape of ``irqlab.sim.simulate``'s config."""
    return {
        "duration": duration,
        "servers": [
            {"name": t.name, "policy": "unbounded", "rank": t.period} for t in tasks
        ],
        "tasks": [
            {
                "name": t.name,
                "server": i,
                "release": {"kind": "periodic", "period": t.period, "offset": t.offset},
                "program": [{"op": "compute", "ns": t.wcet}],
            }
            for i, t in enumerate(tasks)
        ],
    }


def random_rm_taskset(
    rng: random.Random, n: int, *, min_period_ms: int = 5, max_period_ms: int = 100
) -> list[PeriodicTask]:
    """`n` tasks with distinct integer-ms periods and integer-ms WCETs whose
    total utilization is within the Liu-Layland bound (no deadline misses
    under RM, so any correct simulator gives the same schedule)."""
    bound = n * (2 ** (1 / n) - 1)
    while True:
        periods = rng.sample(range(min_period_ms, max_period_ms + 1), n)
        tasks = [
            PeriodicTask(f"T{i}", rng.randint(1, max(1, p // n)) * MS, p * MS)
            for i, p in enumerate(periods)
        ]
        if sum(t.utilization for t in tasks) <= bound:
            return tasks
