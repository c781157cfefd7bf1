"""USB-DIFFSERV Table I / Figures 10-12: latency of one 512-byte USB read
per 20 ms period.

A task on a Main VCPU (2 ms / 20 ms) reads once per period; its bottom
halves run on a 1 % I/O VCPU (whose period it inherits: C = 200 us).
Variants: Quest with kfree in the bottom half (Omega_IO = 200 us), Quest
without kfree (20 us), Quest without an I/O VCPU (the bottom half charged to
a 200 us / 400 us Main VCPU), and Linux (SCHED_DEADLINE 2 ms / 20 ms,
bottom half in softirq at IRQ exit). Claims: without kfree Quest's latency
is lower and less variable than Linux's; the I/O VCPU adds negligible
latency; spikes come from transfers that miss their 125 us microframe.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from irqlab import plots
from irqlab.experiments import Check, Result
from irqlab.experiments._usb import (
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
from irqlab.sim import simulate

NAME = "usb-latency"
TITLE = "USB-DIFFSERV Table I / Figures 10-12: USB read latency, Quest vs Linux"

# Table I (us): average, standard deviation, max, min
PAPER = {
    "Quest (kfree) with IOVCPU": (213.83, 7.18, 237.97, 187.09),
    "Linux": (112.26, 21.68, 188.57, 35.95),
    "Quest (no kfree) with IOVCPU": (66.01, 7.64, 131.64, 39.45),
    "Quest (no kfree) without IOVCPU": (61.68, 6.90, 123.21, 36.50),
}


def config(variant: str, duration: int) -> dict[str, Any]:
    task = reader("reader", 0, 0, period=20 * MS)
    base: dict[str, Any] = {"duration": duration, "window": duration, "tasks": [task],
                            "xhci": [xhci([0])]}
    if variant == "Linux":
        return {**base, "path": "linux", "servers": [cbs("reader", 2 * MS, 20 * MS)],
                "classes": [{"name": "usb"}],
                "devices": [teensy("ttyACM0", 0, omega_io=LINUX_OMEGA_IO)]}
    omega_io = OMEGA_IO_KFREE if "(kfree)" in variant else OMEGA_IO
    if "without" in variant:
        return {**base, "path": "quest-no-iovcpu",
                "servers": [sporadic("reader", 200 * US, 400 * US)],
                "classes": [{"name": "usb"}], "devices": [teensy("ttyACM0", 0, omega_io=omega_io)]}
    return {**base, "servers": [sporadic("reader", 2 * MS, 20 * MS), pibs("iovcpu", 1)],
            "classes": [{"name": "usb", "iovcpu": 1}],
            "devices": [teensy("ttyACM0", 0, omega_io=omega_io)]}


def run(out_dir: Path, *, quick: bool = False) -> Result:
    duration = 2_000 * MS if quick else 20_000 * MS  # 100 or 1000 reads
    stats: dict[str, tuple[float, float, float, float]] = {}
    for v in PAPER:
        lat = simulate(config(v, duration)).metrics["devices"][0]["latency"]
        stats[v] = (lat["mean_ns"] / US, (lat["std_dev_ns"] or 0.0) / US, lat["max_ns"] / US,
                    lat["min_ns"] / US)
    nk, nk_no = stats["Quest (no kfree) with IOVCPU"], stats["Quest (no kfree) without IOVCPU"]
    kf, lx = stats["Quest (kfree) with IOVCPU"], stats["Linux"]
    checks = [
        Check("Quest without kfree: lower average latency than Linux (us)", "66.0 < 112.3",
              f"{nk[0]:.1f} vs {lx[0]:.1f}", "Quest < Linux", nk[0] < lx[0]),
        Check("Quest without kfree: less variable than Linux (std, us)", "7.6 < 21.7",
              f"{nk[1]:.1f} vs {lx[1]:.1f}", "Quest < Linux", nk[1] < lx[1]),
        Check("the I/O VCPU adds negligible latency (average with - without, us)", 4.3,
              round(nk[0] - nk_no[0], 1), "|difference| <= 10 us", abs(nk[0] - nk_no[0]) <= 10),
        Check("kfree in the bottom half adds its cost (average kfree - no kfree, us)",
              round(213.83 - 66.01, 1), round(kf[0] - nk[0], 1), "within 20 %",
              abs((kf[0] - nk[0]) - (213.83 - 66.01)) <= 0.2 * (213.83 - 66.01)),
        Check("spikes: a read that misses its microframe takes up to one more (max - min, us)",
              "~90 (131.6 - 39.5)", round(nk[2] - nk[3], 1), "<= 125 + device jitter",
              nk[2] - nk[3] <= 125 + 20),
    ]
    png = plots.bars(out_dir / "usb_latency.png",
                     {k: {"irqlab mean": v[0], "irqlab max": v[2], "paper mean": PAPER[k][0],
                          "paper max": PAPER[k][2]} for k, v in stats.items()},
                     title="USB read latency (USB-DIFFSERV Table I)", ylabel="us")
    head = f"{'':<34}{'avg':>8}{'std':>8}{'max':>8}{'min':>8}   paper avg/std/max/min\n"
    table = head + "\n".join(
        f"{k:<34}{v[0]:8.1f}{v[1]:8.1f}{v[2]:8.1f}{v[3]:8.1f}   "
        + "/".join(f"{x:.1f}" for x in PAPER[k]) for k, v in stats.items())
    return Result(NAME, checks, table, [str(png)], {"irqlab": stats, "paper": PAPER})
