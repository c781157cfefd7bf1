"""USB-DIFFSERV Figure 16 with Eq. 7-8: round-trip throughput through an
echoing Teensy at I/O VCPU utilizations of 1 % and 2 %.

A writer and a reader task, each on its own Main VCPU (2 ms / 10 ms) and
its own interrupter and I/O VCPU, move 512-byte blocks: the writer writes
back to back, the Teensy echoes, the reader reads. Omega_IO = 20 us (kfree
deferred), Omega_Main = 0. Eq. 7-8: 512000 and 256000 bytes/s; the write and
read rates must match.
"""

from __future__ import annotations

from pathlib import Path

from irqlab import plots
from irqlab.experiments import Check, Result
from irqlab.experiments._usb import MS, OMEGA_IO, pibs, reader, sporadic, teensy, xhci
from irqlab.experiments.claims import falsify, key_of, within
from irqlab.sim import simulate

NAME = "usb-roundtrip"
TITLE = "USB-DIFFSERV Figure 16, Eq. 7-8: round-trip throughput vs I/O VCPU utilization"
SECONDS = {"quick": 3, "full": 6}  # measured: see irqlab.experiments

PAPER = {2: 512_000, 1: 256_000}


FALSIFIERS = {
    "no-iovcpu": "no I/O VCPUs (bottom halves charged to the Main VCPUs)",
    "slow-reader": "the reader's I/O VCPU at half the writer's utilization",
}


def config(u_percent: int, duration: int, variant: str | None = None) -> dict:
    if variant == "no-iovcpu":
        return {**config(u_percent, duration), "path": "quest-no-iovcpu",
                "servers": [sporadic("writer", 2 * MS, 10 * MS),
                            sporadic("reader", 2 * MS, 10 * MS)],
                "classes": [{"name": "usb0"}, {"name": "usb1"}]}
    io_r = (pibs("io.r", u_percent) if variant != "slow-reader" else
            {"name": "io.r", "policy": "pibs", "num": u_percent, "den": 200})
    return {
        "duration": duration, "window": duration // 10,
        "servers": [sporadic("writer", 2 * MS, 10 * MS), sporadic("reader", 2 * MS, 10 * MS),
                    pibs("io.w", u_percent), io_r],
        "tasks": [reader("writer", 0, 0), reader("reader", 1, 1)],
        "classes": [{"name": "usb0", "iovcpu": 2}, {"name": "usb1", "iovcpu": 3}],
        "xhci": [xhci([0, 1])],
        "devices": [teensy("ttyACM0.out", 0, omega_main=0),
                    teensy("ttyACM0.in", 1, omega_main=0, echo_of=0)],
    }


def measure(duration: int, variant: str | None) -> dict[int, dict[str, float]]:
    res = {}
    for u in (1, 2):
        d = simulate(config(u, duration, key_of(FALSIFIERS, variant))).metrics["devices"]
        res[u] = {"write": d[0]["throughput_bytes_per_s"], "read": d[1]["throughput_bytes_per_s"],
                  "read_min": min(d[1]["throughput_windows_bytes_per_s"]),
                  "read_max": max(d[1]["throughput_windows_bytes_per_s"])}
    return res


def judge(res: dict[int, dict[str, float]]) -> list[Check]:
    checks = []
    for u, eq in ((2, 7), (1, 8)):
        checks.append(within(f"read throughput at U_IO = {u}% (bytes/s, Eq. {eq})", PAPER[u],
                             res[u]["read"], 0.9 * PAPER[u], 1.1 * PAPER[u],
                             shown=round(res[u]["read"]), falsifier=FALSIFIERS["no-iovcpu"]))
        ratio = res[u]["read"] / max(res[u]["write"], 1.0)
        checks.append(within(f"write and read rates match at U_IO = {u}% (read / write)", 1.0,
                             ratio, 0.99, 1.01,
                             shown=f"{res[u]['read']:.0f} / {res[u]['write']:.0f} = {ratio:.3f}",
                             falsifier=FALSIFIERS["slow-reader"]))
    return checks


def run(out_dir: Path, *, quick: bool = False) -> Result:
    duration = 2_000 * MS if quick else 10_000 * MS
    res, checks = falsify(lambda v: measure(duration, v), judge)
    png = plots.bars(out_dir / "usb_roundtrip.png",
                     {f"{u}%": {"paper": PAPER[u], "write": res[u]["write"],
                                "read": res[u]["read"]} for u in (1, 2)},
                     title="USB round-trip throughput (USB-DIFFSERV Fig. 16)", ylabel="bytes/s")
    table = "\n".join(
        f"U_IO {u}%: write {r['write']:.0f} B/s, read {r['read']:.0f} B/s "
        f"(min {r['read_min']:.0f}, max {r['read_max']:.0f} over windows), paper {PAPER[u]}"
        for u, r in res.items())
    return Result(NAME, checks, table, [str(png)], {"results": res, "omega_io_ns": OMEGA_IO})
