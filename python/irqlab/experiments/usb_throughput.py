"""USB-DIFFSERV Figure 15 with Eq. 4-6: read throughput for I/O VCPU
utilizations of 1 %, 2 % and 4 %.

A task on a Main VCPU (2 ms / 20 ms) reads 512-byte blocks from a Teensy
back to back; Omega_Main = 20 us, Omega_IO = 200 us (kfree in the bottom
half). The paper's "typical delay" Omega_IO / U_IO + Omega_Main gives
101992, 51097 and 25574 bytes/s; irqlab must land within 10 %.
"""

from __future__ import annotations

from pathlib import Path

from irqlab import plots
from irqlab.experiments import Check, Result
from irqlab.experiments._usb import (
    MS,
    OMEGA_IO_KFREE,
    OMEGA_MAIN,
    pibs,
    reader,
    sporadic,
    teensy,
    xhci,
)
from irqlab.experiments.claims import falsify, within
from irqlab.sim import simulate

NAME = "usb-throughput"
TITLE = "USB-DIFFSERV Figure 15, Eq. 4-6: read throughput vs I/O VCPU utilization"
SECONDS = {"quick": 2, "full": 2}  # measured: see irqlab.experiments

PAPER = {4: 101_992, 2: 51_097, 1: 25_574}  # bytes/s, Eq. 4-6


def expected(u_percent: int) -> float:
    """Eq. 3 with the typical delay Omega_IO / U_IO + Omega_Main."""
    return 512 / (OMEGA_IO_KFREE / 1e9 / (u_percent / 100) + OMEGA_MAIN / 1e9)


FALSIFIER = "no I/O VCPU (the bottom half charged to the reader's Main VCPU)"


def config(u_percent: int, duration: int, no_iovcpu: bool = False) -> dict:
    if no_iovcpu:
        return {"path": "quest-no-iovcpu", "duration": duration, "window": duration,
                "servers": [sporadic("main", 2 * MS, 20 * MS)], "tasks": [reader("reader", 0, 0)],
                "classes": [{"name": "usb0"}], "xhci": [xhci([0])],
                "devices": [teensy("ttyACM0", 0, omega_io=OMEGA_IO_KFREE)]}
    return {
        "duration": duration, "window": duration,
        "servers": [sporadic("main", 2 * MS, 20 * MS), pibs("io", u_percent)],
        "tasks": [reader("reader", 0, 0)],
        "classes": [{"name": "usb0", "iovcpu": 1}],
        "xhci": [xhci([0])],
        "devices": [teensy("ttyACM0", 0, omega_io=OMEGA_IO_KFREE)],
    }


def measure(duration: int, variant: str | None) -> dict[int, float]:
    return {u: simulate(config(u, duration, variant is not None)).metrics["devices"][0][
        "throughput_bytes_per_s"] for u in (1, 2, 4)}


def judge(got: dict[int, float]) -> list[Check]:
    checks = [
        within(f"throughput at U_IO = {u}% (bytes/s, Eq. {7 - {4: 3, 2: 2, 1: 1}[u]})",
               PAPER[u], got[u], 0.9 * PAPER[u], 1.1 * PAPER[u], shown=round(got[u]),
               falsifier=FALSIFIER)
        for u in (4, 2, 1)
    ]
    r21, r42 = got[2] / got[1], got[4] / got[2]
    checks.append(within("throughput ratios follow the utilization ratios (2%/1%, 4%/2%: "
                         "the smaller of the two)", "2, 2", min(r21, r42), 1.9, 2.1,
                         shown=f"{r21:.3f}, {r42:.3f}", falsifier=FALSIFIER))
    return checks


def run(out_dir: Path, *, quick: bool = False) -> Result:
    duration = 2_000 * MS if quick else 10_000 * MS
    got, checks = falsify(lambda v: measure(duration, v), judge)
    png = plots.bars(out_dir / "usb_throughput.png",
                     {f"{u}%": {"paper (Eq. 4-6)": PAPER[u], "irqlab": got[u]} for u in (1, 2, 4)},
                     title="USB read throughput (USB-DIFFSERV Fig. 15)", ylabel="bytes/s")
    table = "\n".join(f"U_IO {u}%: irqlab {got[u]:9.0f} B/s, paper {PAPER[u]} B/s, "
                      f"model {expected(u):9.0f} B/s" for u in (1, 2, 4))
    return Result(NAME, checks, table, [str(png)], {"throughput": got})
