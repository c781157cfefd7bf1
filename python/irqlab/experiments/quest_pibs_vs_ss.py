"""QUEST-VCPU Table 2 / Figures 4-5: PIBS vs sporadic-server I/O VCPU under
an ICMP ping flood.

Main VCPUs (C/T in 100 us units): VCPU0 1/20, VCPU1 1/30, VCPU2 10/100 (the
network task, plus a CPU-bound thread), VCPU3 20/100 (the logger, plus a
CPU-bound thread); one I/O VCPU at 1 % for the network, first as PIBS, then
as a sporadic server (C/T = 100 us / 10 ms, `max_repl` 32). A ping flood
starts at half time. Claims (QUEST-VCPU §3): the sporadic-server I/O VCPU
shows more, and more variable, scheduler overhead and lower network
bandwidth than the PIBS I/O VCPU (its replenishment queue fills with
fragments and discards usable budget). Packet costs are modelling
assumptions (docs/reproductions.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from irqlab import plots
from irqlab.experiments import Check, Result
from irqlab.sim import simulate

NAME = "quest-pibs-vs-ss"
TITLE = "QUEST-VCPU Table 2 / Figures 4-5: PIBS vs sporadic-server I/O VCPU under a ping flood"

UNIT = 100_000
US = 1_000
TABLE2 = [("VCPU0", 1, 20), ("VCPU1", 1, 30), ("VCPU2", 10, 100), ("VCPU3", 20, 100)]
# ICMP echo in the e1000 driver + lwIP (assumptions): 2 us top half, 10 us
# bottom half per 64-byte packet. `ping -f` is a closed loop: the next
# request arrives one round trip (30 us) after the reply, at least every
# 10 ms.
PACKET_BYTES = 64
RTT_NS = 30_000


def config(io_policy: str, duration: int, window: int) -> dict[str, Any]:
    io: dict[str, Any]
    if io_policy == "pibs":
        io = {"name": "IOVCPU", "policy": "pibs", "num": 1, "den": 100}
    else:
        io = {"name": "IOVCPU", "policy": "sporadic", "budget": 100 * US,
              "period": 10_000 * US, "max_repl": 32}
    tasks = [
        {"name": f"{n}.cpu", "server": i, "release": {"kind": "once"},
         "program": [{"op": "loop", "body": [{"op": "compute", "ns": 10_000_000}]}]}
        for i, (n, _, _) in enumerate(TABLE2)
    ]
    # the network task on VCPU2 consumes every packet (5 us each)
    tasks.append({"name": "VCPU2.net", "server": 2, "priority": 2, "release": {"kind": "once"},
                  "program": [{"op": "loop", "body": [
                      {"op": "io", "device": 0}, {"op": "compute", "ns": 5 * US}]}]})
    return {
        "duration": duration,
        "window": window,
        "servers": [{"name": n, "policy": "sporadic", "budget": c * UNIT, "period": t * UNIT}
                    for n, c, t in TABLE2] + [io],
        "tasks": tasks,
        "classes": [{"name": "net", "iovcpu": 4, "consumer": 4}],
        "devices": [{
            "name": "e1000", "class": 0, "kind": "nic", "top_half": 2 * US,
            "bottom_half": 3 * US, "bytes": PACKET_BYTES,
            "arrival": {"kind": "ping-flood", "rtt": RTT_NS, "start": duration // 2},
        }],
        "overhead": {"schedule_ns": 80.0, "repl_op_ns": 5.0},
    }


def run(out_dir: Path, *, quick: bool = False) -> Result:
    duration = 20_000_000_000 if quick else 100_000_000_000
    window = duration // 20
    res: dict[str, dict[str, Any]] = {}
    for policy in ("pibs", "sporadic"):
        m = simulate(config(policy, duration, window)).metrics
        res[policy] = {
            "overhead": m["cpus"][0]["overhead_windows_percent"],
            "kBps": [x / 1e3 for x in m["devices"][0]["throughput_windows_bytes_per_s"]],
            "dropped": m["devices"][0]["dropped"],
            "max_queue": m["servers"][4]["max_queue"],
        }
    xs = [(k + 0.5) * window / 1e9 for k in range(len(res["pibs"]["kBps"]))]
    files = [
        str(plots.lines(out_dir / "quest_pibs_vs_ss_overhead.png",
                        {p: (xs, res[p]["overhead"]) for p in res},
                        title="Scheduler overhead (QUEST-VCPU Fig. 4 shape)",
                        xlabel="time (s)", ylabel="% CPU in the scheduler (model)")),
        str(plots.lines(out_dir / "quest_pibs_vs_ss_bandwidth.png",
                        {p: (xs, res[p]["kBps"]) for p in res},
                        title="Network bandwidth (QUEST-VCPU Fig. 5 shape)",
                        xlabel="time (s)", ylabel="kB/s")),
    ]
    half = len(xs) // 2
    flood = slice(half + 1, None)  # windows fully inside the flood
    ov = {p: float(np.mean(res[p]["overhead"][flood])) for p in res}
    bw = {p: float(np.mean(res[p]["kBps"][flood])) for p in res}
    # scheduler cost per packet handled: the policy's own cost, independent
    # of how many packets each I/O VCPU managed to serve
    per_pkt = {p: ov[p] / 100 * 1e9 / (bw[p] * 1e3 / PACKET_BYTES) for p in res}
    checks = [
        Check("PIBS gives a greater network bandwidth during the flood (kB/s)",
              "PIBS significantly greater", f"PIBS {bw['pibs']:.1f} vs SS {bw['sporadic']:.1f}",
              "PIBS >= 1.05 x SS", bw["pibs"] >= 1.05 * bw["sporadic"]),
        Check("the SS I/O VCPU costs more scheduler time per packet handled (ns)",
              "SS > PIBS", f"SS {per_pkt['sporadic']:.1f} vs PIBS {per_pkt['pibs']:.1f}",
              "SS > PIBS", per_pkt["sporadic"] > per_pkt["pibs"]),
        Check("scheduler overhead during the flood (% CPU, model)", "SS > PIBS",
              f"SS {ov['sporadic']:.4f} vs PIBS {ov['pibs']:.4f}", "SS > PIBS",
              ov["sporadic"] > ov["pibs"]),
        Check("the SS replenishment queue fills up (max length)", 32,
              res["sporadic"]["max_queue"], "== max_repl", res["sporadic"]["max_queue"] == 32),
    ]
    table = "\n".join(
        f"{p:>9}: flood bandwidth {bw[p]:8.1f} kB/s, scheduler overhead {ov[p]:.4f}% "
        f"({per_pkt[p]:.0f} ns per packet), max replenishment queue {res[p]['max_queue']}"
        for p in res
    )
    return Result(NAME, checks, table, files, res)
