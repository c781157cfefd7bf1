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
Every read costs its task Omega_Main = 20 us (the paper's measured value), so
the five low tasks, one blocking read outstanding each, keep the shared I/O
VCPU busy: docs/reproductions.md discusses what that does to Figure 13b.

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
from irqlab.sim import SimResult, simulate

NAME = "usb-priority-inversion"
TITLE = "USB-DIFFSERV Table II / Figures 13-14: high-priority read latency under contention"

SYSTEMS = ["linux-fifo", "linux-deadline", "quest-1-interrupter", "quest-2-interrupters"]


def tasks_and_servers(kind: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Servers 0..6: high, medium, low0..low4 (Table II)."""
    params = [("high", 1 * MS, 10 * MS), ("medium", 1 * MS, 15 * MS)] + [
        (f"low{i}", 1 * MS, 20 * MS) for i in range(5)]
    mk = cbs if kind == "linux" else sporadic
    servers = [mk(n, c, t) for n, c, t in params]
    tasks = [reader("high", 0, 0, period=10 * MS), cpu_bound("medium", 1)] + [
        reader(f"low{i}", 2 + i, 1 + i) for i in range(5)]
    return tasks, servers



def config(system: str, duration: int) -> dict[str, Any]:
    linux = system.startswith("linux")
    tasks, servers = tasks_and_servers("linux" if linux else "quest")
    omega_io = LINUX_OMEGA_IO if linux else OMEGA_IO_KFREE
    cfg: dict[str, Any] = {"duration": duration, "window": duration, "tasks": tasks}
    if linux:
        cfg["path"] = "linux"
        cfg["servers"] = servers
        cfg["classes"] = [{"name": "usb"}]
        cfg["xhci"] = [xhci([0])]
        cfg["devices"] = devices(omega_io, [0] * 6)
        if system == "linux-deadline":
            cfg["linux"] = {"ksoftirqd": {"policy": "cbs", "runtime": 1 * MS, "period": 10 * MS}}
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


def run(out_dir: Path, *, quick: bool = False) -> Result:
    duration = 1_000 * MS if quick else 10_000 * MS
    stats = {s: high_latency(simulate(config(s, duration))) for s in SYSTEMS}
    q1, q2 = stats["quest-1-interrupter"], stats["quest-2-interrupters"]
    lf, ld = stats["linux-fifo"], stats["linux-deadline"]
    checks = [
        Check("Linux (ksoftirqd FIFO): latency grows dramatically (max, us)", "ms-scale spikes",
              round(lf["max"]), "> 2x Quest two interrupters' max", lf["max"] > 2 * q2["max"]),
        Check("Linux (ksoftirqd DEADLINE 1/10 ms): still large variability (std, us)",
              "large", round(ld["std"], 1), "> 5x Quest two interrupters' std",
              ld["std"] > 5 * max(q2["std"], 1.0)),
        Check("Quest, one interrupter: low requests delay the high task (max / two interrupters)",
              "spikes", f"{q1['max'] / q2['max']:.1f}x", ">= 3x", q1["max"] >= 3 * q2["max"]),
        Check("Quest, one interrupter: spikes near 1200 us (max, us)", 1200, round(q1["max"]),
              "900 .. 1500", 900 <= q1["max"] <= 1500),
        Check("Quest, two interrupters: unaffected by the other tasks (max, us)",
              "as Fig. 10 (~240)", round(q2["max"]), "< 400", q2["max"] < 400),
    ]
    png = plots.bars(out_dir / "usb_priority_inversion.png",
                     {s: {"mean": v["mean"], "p99": v["p99"], "max": v["max"]}
                      for s, v in stats.items()},
                     title="High-priority task read latency (USB-DIFFSERV Fig. 13-14)",
                     ylabel="us")
    table = f"{'system':<22} {'mean':>8} {'std':>8} {'min':>8} {'p99':>8} {'max':>8}  (us)\n" + \
        "\n".join(f"{s:<22} {v['mean']:8.1f} {v['std']:8.1f} {v['min']:8.1f} {v['p99']:8.1f} "
                  f"{v['max']:8.1f}" for s, v in stats.items())
    return Result(NAME, checks, table, [str(png)], stats)
