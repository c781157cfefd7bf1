"""USB-DIFFSERV Table I / Figures 10-12: latency of one 512-byte USB read
per 20 ms period.

A task on a Main VCPU (2 ms / 20 ms) reads once per period; its bottom
halves run on a 1 % I/O VCPU (whose period it inherits: C = 200 us).
Variants: Quest with kfree in the bottom half (Omega_IO = 200 us), Quest
without kfree (20 us), Quest without an I/O VCPU (the bottom half charged to
a 200 us / 400 us Main VCPU), and Linux (SCHED_DEADLINE 2 ms / 20 ms,
PREEMPT_RT: the bottom half in a kernel thread; its completion path costs
66.25 us, derived from Table I in `_usb.py`). Claims: without kfree Quest's latency
is lower and less variable than Linux's; the I/O VCPU adds negligible
latency; spikes come from transfers that miss their 125 us microframe.

A fifth row, Linux with measured costs (`CALIBRATED`), puts Linux's
completion path at Quest's Omega_IO (20 us, no constant from this table)
and folds in a `costs:` section from `irqlab calibrate` -- the one shipped
(`costs-vm.yaml`, the reference VM) or `$IRQLAB_COSTS` -- exactly as a model
with that section is lowered (`irqlab.calibrate.apply_costs`): the threaded
bottom half waits for its thread's measured wake-up and every switch
between threads costs the measured context switch. Linux then separates
from Quest by mechanism, and the table (docs/reproductions.md) shows it
next to the paper.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import Any

from irqlab import plots
from irqlab.experiments import Check, Result
from irqlab.experiments._usb import (
    LINUX,
    LINUX_OMEGA_IO,
    MS,
    OMEGA_IO,
    OMEGA_IO_KFREE,
    US,
    cbs,
    pibs,
    reader,
    sporadic,
    teensy,
    xhci,
)
from irqlab.experiments.claims import falsify, key_of, ordering, within
from irqlab.sim import simulate

NAME = "usb-latency"
TITLE = "USB-DIFFSERV Table I / Figures 10-12: USB read latency, Quest vs Linux"
SECONDS = {"quick": 4, "full": 3}  # measured: see irqlab.experiments

# Table I (us): average, standard deviation, max, min
PAPER = {
    "Quest (kfree) with IOVCPU": (213.83, 7.18, 237.97, 187.09),
    "Linux": (112.26, 21.68, 188.57, 35.95),
    "Quest (no kfree) with IOVCPU": (66.01, 7.64, 131.64, 39.45),
    "Quest (no kfree) without IOVCPU": (61.68, 6.90, 123.21, 36.50),
}


CALIBRATED = "Linux (measured costs)"


def measured_costs() -> dict[str, Any]:
    """The `costs:` section the calibrated row uses: `$IRQLAB_COSTS` (a
    file `irqlab calibrate --out` wrote), else the reference VM's."""
    from irqlab.calibrate import load_costs

    env = os.environ.get("IRQLAB_COSTS")
    return load_costs(env or str(resources.files("irqlab.experiments") / "costs-vm.yaml"))


FALSIFIERS = {
    "linux-costs": "Linux's completion path at Quest's cost (Omega_IO 20 us)",
    "no-measured-costs": "the calibrated Linux row without its measured costs",
    "tiny-iovcpu": "I/O VCPU at 0.05 % (C_max 10 us < Omega_IO)",
    "kfree-deferred": "kfree deferred in the kfree run too (Omega_IO 20 us)",
    "frame-in-phase": "xHC microframe clock in phase with the CPU (no random phase)",
}


def config(variant: str, duration: int, falsifier: str | None = None) -> dict[str, Any]:
    task = reader("reader", 0, 0, period=20 * MS)
    xh = xhci([0])
    if falsifier == "frame-in-phase":
        xh["random_frame_phase"] = False
    base: dict[str, Any] = {"duration": duration, "window": duration, "tasks": [task],
                            "xhci": [xh]}
    if variant in ("Linux", CALIBRATED):
        calibrated = variant == CALIBRATED
        omega = OMEGA_IO if falsifier == "linux-costs" or calibrated else LINUX_OMEGA_IO
        cfg = {**base, "path": "linux", "linux": dict(LINUX),
               "servers": [cbs("reader", 2 * MS, 20 * MS)], "classes": [{"name": "usb"}],
               "devices": [teensy("ttyACM0", 0, omega_io=omega)]}
        if calibrated and falsifier != "no-measured-costs":
            from irqlab.calibrate import apply_costs

            cfg = apply_costs(cfg, measured_costs())
        return cfg
    kfree = "(kfree)" in variant and falsifier != "kfree-deferred"
    omega_io = OMEGA_IO_KFREE if kfree else OMEGA_IO
    if "without" in variant:
        return {**base, "path": "quest-no-iovcpu",
                "servers": [sporadic("reader", 200 * US, 400 * US)],
                "classes": [{"name": "usb"}], "devices": [teensy("ttyACM0", 0, omega_io=omega_io)]}
    io = pibs("iovcpu", 1)
    if falsifier == "tiny-iovcpu":
        io = {"name": "iovcpu", "policy": "pibs", "num": 1, "den": 2000}
    return {**base, "servers": [sporadic("reader", 2 * MS, 20 * MS), io],
            "classes": [{"name": "usb", "iovcpu": 1}],
            "devices": [teensy("ttyACM0", 0, omega_io=omega_io)]}


Stats = dict[str, tuple[float, float, float, float]]


def measure(duration: int, falsifier: str | None) -> Stats:
    """The four systems of Table I; `falsifier` is a description in FALSIFIERS."""
    falsifier = key_of(FALSIFIERS, falsifier)
    stats: Stats = {}
    for v in [*PAPER, CALIBRATED]:
        lat = simulate(config(v, duration, falsifier)).metrics["devices"][0]["latency"]
        stats[v] = (lat["mean_ns"] / US, (lat["std_dev_ns"] or 0.0) / US, lat["max_ns"] / US,
                    lat["min_ns"] / US)
    return stats


def judge(stats: Stats) -> list[Check]:
    nk, nk_no = stats["Quest (no kfree) with IOVCPU"], stats["Quest (no kfree) without IOVCPU"]
    kf, lx = stats["Quest (kfree) with IOVCPU"], stats["Linux"]
    lc = stats[CALIBRATED]
    p_nk, p_lx = PAPER["Quest (no kfree) with IOVCPU"], PAPER["Linux"]
    kfree_paper = PAPER["Quest (kfree) with IOVCPU"][0] - p_nk[0]
    return [
        ordering("Quest without kfree: lower average latency than Linux (Linux / Quest)",
                 f"{p_lx[0]} / {p_nk[0]} = {p_lx[0] / p_nk[0]:.2f}", lx[0] / nk[0], 1.3,
                 what="Linux / Quest", shown=f"{lx[0]:.1f} / {nk[0]:.1f} = {lx[0] / nk[0]:.2f}",
                 falsifier=FALSIFIERS["linux-costs"],
                 note="Linux's cost per request is derived from this table (66.25 us = 20 us + "
                      "the Linux - Quest (No kfree) difference of averages), so this claim "
                      "checks that the model composes that cost, not a prediction."),
        ordering("Quest without kfree: less variable than Linux (std Linux / Quest)",
                 f"{p_lx[1]} / {p_nk[1]} = {p_lx[1] / p_nk[1]:.2f}", lx[1] / max(nk[1], 1e-9),
                 1.5, what="Linux / Quest",
                 shown=f"{lx[1]:.1f} / {nk[1]:.1f} = {lx[1] / max(nk[1], 1e-9):.2f}",
                 falsifier=FALSIFIERS["linux-costs"],
                 note="irqlab's only source of read-to-read variation is the device (microframe "
                      "phase, 20 us response jitter), the same under both systems; what makes "
                      "Linux's std 21.7 us (irq-thread wake-up and softirq latency on "
                      "PREEMPT_RT) is not modelled. `irqlab calibrate` (costs: section) is "
                      "the hook for a measured distribution."),
        ordering("with measured costs, Linux is slower than Quest by mechanism, not by a "
                 "constant (Linux / Quest averages, both at Omega_IO 20 us)",
                 f"{p_lx[0]} / {p_nk[0]} = {p_lx[0] / p_nk[0]:.2f}", lc[0] / nk[0], 1.1,
                 what="Linux / Quest", shown=f"{lc[0]:.1f} / {nk[0]:.1f} = {lc[0] / nk[0]:.2f}",
                 falsifier=FALSIFIERS["no-measured-costs"],
                 note="Linux's completion path at Quest's cost; the difference is this "
                      "machine's measured thread wake-up (the threaded bottom half's dispatch) "
                      "and context switches (costs-vm.yaml, or $IRQLAB_COSTS), charged at their "
                      "mean. The simulation charges each cost at one statistic, so Linux's "
                      "extra variability (claim 2) is still not modelled."),
        within("the I/O VCPU adds negligible latency (average with - without, us)",
               round(p_nk[0] - PAPER["Quest (no kfree) without IOVCPU"][0], 1),
               nk[0] - nk_no[0], -10.0, 10.0, shown=round(nk[0] - nk_no[0], 1),
               falsifier=FALSIFIERS["tiny-iovcpu"]),
        within("kfree in the bottom half adds its cost (average kfree - no kfree, us)",
               round(kfree_paper, 1), kf[0] - nk[0], 0.8 * kfree_paper, 1.2 * kfree_paper,
               shown=round(kf[0] - nk[0], 1), falsifier=FALSIFIERS["kfree-deferred"],
               note="Omega_IO = 200 us is the paper's worst case (§V-C) and equals the 1 % I/O "
                    "VCPU's C_max (20 ms x 1 %) exactly: every request exhausts the budget and "
                    "the read waits for the replenishment (199 us gives 244 us, 200 us 280 us "
                    "on average). Table I's own averages put kfree's mean cost at 147.8 us "
                    "(Omega_IO 168 us, which gives 213 us -- circular, so not a check)."),
        within("spikes: a read that misses its microframe takes up to one more "
               "(max - min, us)", f"{p_nk[2] - p_nk[3]:.1f} ({p_nk[2]} - {p_nk[3]})",
               nk[2] - nk[3], 21.0, 145.0, shown=round(nk[2] - nk[3], 1),
               falsifier=FALSIFIERS["frame-in-phase"],
               note="band: more than the Teensy's 20 us response jitter alone (plus 1 us), at "
                    "most one 125 us microframe plus that jitter. irqlab's spread is half the "
                    "paper's: a missed microframe costs the rest of the frame, not a whole one."),
    ]


def run(out_dir: Path, *, quick: bool = False) -> Result:
    duration = 2_000 * MS if quick else 20_000 * MS  # 100 or 1000 reads
    stats, checks = falsify(lambda f: measure(duration, f), judge)
    paper = {**PAPER, CALIBRATED: PAPER["Linux"]}
    png = plots.bars(out_dir / "usb_latency.png",
                     {k: {"irqlab mean": v[0], "irqlab max": v[2], "paper mean": paper[k][0],
                          "paper max": paper[k][2]} for k, v in stats.items()},
                     title="USB read latency (USB-DIFFSERV Table I)", ylabel="us")
    head = f"{'':<34}{'avg':>8}{'std':>8}{'max':>8}{'min':>8}   paper avg/std/max/min\n"
    table = head + "\n".join(
        f"{k:<34}{v[0]:8.1f}{v[1]:8.1f}{v[2]:8.1f}{v[3]:8.1f}   "
        + "/".join(f"{x:.1f}" for x in paper[k]) for k, v in stats.items())
    return Result(NAME, checks, table, [str(png)],
                  {"irqlab": stats, "paper": PAPER, "table_md": table_md(stats)})


def table_md(stats: Stats) -> str:
    """Table I next to the paper's (markdown, for docs/reproductions.md)."""
    c = measured_costs()["origin"]
    rows = ["| system | paper avg / std / max / min (us) | irqlab avg / std / max / min (us) |",
            "|---|---|---|"]
    for k, v in stats.items():
        p = PAPER.get(k, PAPER["Linux"])  # the measured-costs row: Linux's
        rows.append(f"| {k} | " + " / ".join(f"{x:.1f}" for x in p) + " | "
                    + " / ".join(f"{x:.1f}" for x in v) + " |")
    return ("\n".join(rows) + f"\n\n{CALIBRATED}: Linux's row of the paper; costs measured on "
            f"{c['host']} ({c['kernel']}, {c['cpus']} CPUs, {c['date']}) by {c['tool']}.")
