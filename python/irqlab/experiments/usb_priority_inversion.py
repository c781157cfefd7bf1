"""USB-DIFFSERV Table II / Figures 13-14: read latency of a high-priority I/O
task with low-priority I/O tasks and a medium-priority CPU task.

Seven tasks (Table II): five low-priority tasks (1 ms / 20 ms) each reading
512-byte blocks from their own CDC-ACM interface until their budget runs
out, one medium-priority CPU-bound task (1 ms / 15 ms), and one
high-priority task (1 ms / 10 ms) reading once per period. Omega_IO = 200 us
(kfree in the bottom half), Omega_Main = 20 us. Four systems:

* Linux, SCHED_DEADLINE tasks, ksoftirqd SCHED_FIFO 50 (Figure 13a);
* Linux, ksoftirqd under SCHED_DEADLINE 1 ms / 10 ms (Figure 14);
* Quest with one interrupter: one I/O VCPU (50 %) for every request, at the
  priority of the highest waiting task (Figure 13b);
* Quest with two interrupters: the high task's class (10 %) and the low
  tasks' class (40 %) each on its own I/O VCPU (Figure 13c).

The paper does not give the I/O VCPU utilizations: we take 50 % in total.
Linux runs PREEMPT_RT (the paper's 5.4.19-rt): bottom halves are threaded.

The low tasks' workload at the paper's parameters: a read costs its task
Omega_Main = 20 us, so a 1 ms budget lasts 50 reads a period, and five such
tasks ask the shared I/O VCPU for 5 x 50 x 200 us = 50 ms of bottom halves
every 20 ms -- more than any I/O VCPU on one CPU can give. The paper's own
account of the ~1200 us spike (five queued low requests of ~200 us, then
the high task's own ~200 us) holds only while the I/O VCPU has the budget
for them, i.e. while a period's low reads fit in one budget of the I/O VCPU
at the high task's inherited period (QUEST-VCPU Alg. 10): C_max = 10 ms x
50 % = 5 ms = 5 tasks x 5 reads x 200 us, so 5 reads a period each.
Both workloads are run and reported; the second is labelled as not the
paper's stated parameters.

Claims: Linux's latency grows dramatically (bottom halves end up in
ksoftirqd below the medium task), and SCHED_DEADLINE for ksoftirqd does not
fix the variability; Quest with one interrupter peaks near 1200 us (five
low requests of about 200 us handled first); with two interrupters the high
task's latency is unaffected by the other tasks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from irqlab import plots
from irqlab.experiments import Check, Result
from irqlab.experiments._usb import (
    LINUX,
    LINUX_OMEGA_IO,
    MS,
    OMEGA_IO_KFREE,
    US,
    cbs,
    cpu_bound,
    pibs,
    reader,
    sporadic,
    teensy,
    xhci,
)
from irqlab.experiments.claims import falsify, key_of, memo, ordering, within
from irqlab.sim import SimResult, simulate

NAME = "usb-priority-inversion"
TITLE = "USB-DIFFSERV Table II / Figures 13-14: high-priority read latency under contention"
SECONDS = {"quick": 4, "full": 5}  # measured: see irqlab.experiments

# reads per period per low task that fit in one budget of the shared I/O
# VCPU at the high task's inherited period: 10 ms x 50 % / (5 x 200 us)
SERVABLE_READS = 5
FALSIFIERS = {
    "alone": "the high task alone (no low readers, no medium CPU task)",
    "two": "the one-interrupter system given a second interrupter for the low tasks",
    "one": "the two-interrupter system with one interrupter (one I/O VCPU)",
}


def tasks_and_servers(kind: str, low_reads: int | None = None,
                      alone: bool = False) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Servers 0..6: high, medium, low0..low4 (Table II). `low_reads`: reads
    per 20 ms period of each low task (None: until its budget is gone)."""
    params = [("high", 1 * MS, 10 * MS), ("medium", 1 * MS, 15 * MS)] + [
        (f"low{i}", 1 * MS, 20 * MS) for i in range(5)]
    mk = cbs if kind == "linux" else sporadic
    servers = [mk(n, c, t) for n, c, t in params]
    lows = [reader(f"low{i}", 2 + i, 1 + i) if low_reads is None else
            reader(f"low{i}", 2 + i, 1 + i, period=20 * MS, reads_per_job=low_reads)
            for i in range(5)]
    tasks = [reader("high", 0, 0, period=10 * MS)]
    if not alone:
        tasks += [cpu_bound("medium", 1), *lows]
    return tasks, servers


def config(system: str, duration: int, low_reads: int | None = None,
           alone: bool = False) -> dict[str, Any]:
    linux = system.startswith("linux")
    tasks, servers = tasks_and_servers("linux" if linux else "quest", low_reads, alone)
    omega_io = LINUX_OMEGA_IO if linux else OMEGA_IO_KFREE
    cfg: dict[str, Any] = {"duration": duration, "window": duration, "tasks": tasks}
    if linux:
        cfg["path"] = "linux"
        cfg["linux"] = dict(LINUX)
        cfg["servers"] = servers
        cfg["classes"] = [{"name": "usb"}]
        cfg["xhci"] = [xhci([0])]
        cfg["devices"] = devices(omega_io, [0] * 6)
        if system == "linux-deadline":
            cfg["linux"]["ksoftirqd"] = {"policy": "cbs", "runtime": 1 * MS,
                                         "period": 10 * MS}
    elif system == "quest-1-interrupter":
        cfg["servers"] = [*servers, pibs("iovcpu", 50)]
        cfg["classes"] = [{"name": "usb", "iovcpu": 7}]
        cfg["xhci"] = [xhci([0])]
        cfg["devices"] = devices(omega_io, [0] * 6)
    else:
        cfg["servers"] = [*servers, pibs("iovcpu.high", 10), pibs("iovcpu.low", 40)]
        cfg["classes"] = [{"name": "usb-high", "iovcpu": 7}, {"name": "usb-low", "iovcpu": 8}]
        cfg["xhci"] = [xhci([0, 1])]
        cfg["devices"] = devices(omega_io, [0, 1, 1, 1, 1, 1])
    return cfg


def devices(omega_io: int, classes: list[int]) -> list[dict[str, Any]]:
    """ttyACM0 for the high task, ttyACM1..5 for the low tasks."""
    return [teensy(f"ttyACM{i}", c, omega_io=omega_io) for i, c in enumerate(classes)]


def high_latency(r: SimResult) -> dict[str, float]:
    lat = r.metrics["devices"][0]["latency"]
    return {"mean": lat["mean_ns"] / US, "std": (lat["std_dev_ns"] or 0.0) / US,
            "max": lat["max_ns"] / US, "min": lat["min_ns"] / US, "p99": lat["p99_ns"] / US}


Stats = dict[str, dict[str, float]]


def measure(duration: int, falsifier: str | None, sim: Any = simulate) -> Stats:
    """The four systems, and one interrupter with the servable low workload."""
    f = key_of(FALSIFIERS, falsifier)
    alone = f == "alone"
    one = "quest-2-interrupters" if f == "two" else "quest-1-interrupter"
    two = "quest-1-interrupter" if f == "one" else "quest-2-interrupters"
    runs = {"linux-fifo": config("linux-fifo", duration, alone=alone),
            "linux-deadline": config("linux-deadline", duration, alone=alone),
            "quest-1-interrupter": config(one, duration),
            "quest-2-interrupters": config(two, duration),
            "quest-1-interrupter, servable": config(one, duration, SERVABLE_READS)}
    return {s: high_latency(sim(cfg)) for s, cfg in runs.items()}


def judge(stats: Stats) -> list[Check]:
    q1, q2 = stats["quest-1-interrupter"], stats["quest-2-interrupters"]
    q1s = stats["quest-1-interrupter, servable"]
    lf, ld = stats["linux-fifo"], stats["linux-deadline"]
    spike_note = ("the paper's 1200 us = 5 queued low requests x 200 us + the high task's "
                  "own 200 us assumes the shared I/O VCPU has budget for all six. At the "
                  "paper's parameters (a read costs its task Omega_Main = 20 us: 50 reads a "
                  "period per low task) the low tasks ask for 50 ms of bottom halves every "
                  "20 ms; the 50 % I/O VCPU is saturated and the high request also waits for "
                  "replenishment. Evidence (reads a period per low task -> max): 3 -> 1272, "
                  "5 -> 1272, 6 -> 1905, 8 -> 2104 us; with the I/O VCPU at 90-100 % it is "
                  "1272 us. The paper gives neither the I/O VCPU's utilization nor the reads "
                  "per period.")
    return [
        ordering("Linux (ksoftirqd FIFO): latency grows dramatically (max / Quest two "
                 "interrupters' max)", "ms-scale spikes (Fig. 13a)", lf["max"] / q2["max"], 2.0,
                 what="ratio", shown=f"{lf['max']:.0f} us = {lf['max'] / q2['max']:.1f}x",
                 falsifier=FALSIFIERS["alone"]),
        ordering("Linux (ksoftirqd DEADLINE 1/10 ms): still large variability (std / Quest two "
                 "interrupters' std)", "large (Fig. 14)", ld["std"] / max(q2["std"], 1.0), 5.0,
                 what="ratio", shown=f"{ld['std']:.1f} us = {ld['std'] / max(q2['std'], 1.0):.1f}x",
                 falsifier=FALSIFIERS["alone"],
                 note="with PREEMPT_RT's threaded bottom halves every completion waits for "
                      "ksoftirqd's 1 ms / 10 ms reservation: the latency is large (see the "
                      "table's mean) but regular, as the workload is periodic and nothing else "
                      "in the model varies (softirq at IRQ exit, without PREEMPT_RT, gives a std "
                      "of 68 us). What makes Figure 14 vary is not modelled."),
        ordering("Quest, one interrupter: low requests delay the high task (max / two "
                 "interrupters' max)", "spikes (Fig. 13b vs 13c)", q1["max"] / q2["max"], 3.0,
                 what="ratio", shown=f"{q1['max'] / q2['max']:.1f}x", falsifier=FALSIFIERS["two"]),
        within("Quest, one interrupter: spikes near 1200 us (max, us; low tasks read until "
               "their budget is gone)", 1200, q1["max"], 900, 1500, shown=round(q1["max"]),
               falsifier=FALSIFIERS["two"], note=spike_note),
        within("Quest, one interrupter: spikes near 1200 us (max, us; low tasks read what the "
               f"I/O VCPU can serve, {SERVABLE_READS} a period)", 1200, q1s["max"], 900, 1500,
               shown=round(q1s["max"]), falsifier=FALSIFIERS["two"], paper_params=False,
               note=f"{SERVABLE_READS} reads a period = one I/O VCPU budget at the high "
                    "task's inherited period (10 ms x 50 % = 5 ms) / (5 tasks x 200 us), the "
                    "most it serves without waiting for replenishment; the paper says only "
                    "'until they run out of their budgets'."),
        within("Quest, two interrupters: unaffected by the other tasks (max, us)",
               "as Fig. 10 (~240)", q2["max"], 150, 400, shown=round(q2["max"]),
               falsifier=FALSIFIERS["one"]),
    ]


def run(out_dir: Path, *, quick: bool = False) -> Result:
    duration = 1_000 * MS if quick else 10_000 * MS
    sim = memo(simulate)
    stats, checks = falsify(lambda f: measure(duration, f, sim), judge)
    png = plots.bars(out_dir / "usb_priority_inversion.png",
                     {s: {"mean": v["mean"], "p99": v["p99"], "max": v["max"]}
                      for s, v in stats.items()},
                     title="High-priority task read latency (USB-DIFFSERV Fig. 13-14)",
                     ylabel="us")
    table = f"{'system':<32} {'mean':>8} {'std':>8} {'min':>8} {'p99':>8} {'max':>8}  (us)\n" + \
        "\n".join(f"{s:<32} {v['mean']:8.1f} {v['std']:8.1f} {v['min']:8.1f} {v['p99']:8.1f} "
                  f"{v['max']:8.1f}" for s, v in stats.items())
    return Result(NAME, checks, table, [str(png)], stats)
