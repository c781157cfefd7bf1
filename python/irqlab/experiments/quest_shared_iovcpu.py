"""QUEST-VCPU Table 3 / Figure 6: USB bandwidth with a shared vs separate
I/O VCPUs during a ping flood.

Main VCPUs (C/T in 100 us units): VCPU0 30/100 (USB reader + CPU-bound),
VCPU1 10/110 (CPU-bound), VCPU2 10/90 (network task + CPU-bound), VCPU3
100/200 (logger + CPU-bound). First one 1 % PIBS I/O VCPU serves both USB
and the network, then each gets its own 1 % I/O VCPU. The USB reader reads
64 kB over and over; a ping flood starts at half time. Claim (QUEST-VCPU
§3): sharing an I/O VCPU lets the flood degrade USB bandwidth; separate I/O
VCPUs isolate the devices. (The paper sizes both set-ups so that USB
bandwidth is equal before the flood: a control of the set-up, which no
variant of the mechanism changes, so not a claim.) Device costs are modelling assumptions
(docs/reproductions.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from irqlab import plots
from irqlab.experiments import Check, Result
from irqlab.experiments.claims import falsify, key_of, ordering, within
from irqlab.sim import simulate

NAME = "quest-shared-iovcpu"
TITLE = "QUEST-VCPU Table 3 / Figure 6: shared vs separate I/O VCPUs for USB and network"
SECONDS = {"quick": 3, "full": 3}  # measured: see irqlab.experiments

UNIT = 100_000
US = 1_000
TABLE3 = [("VCPU0", 30, 100), ("VCPU1", 10, 110), ("VCPU2", 10, 90), ("VCPU3", 100, 200)]
# UHCI mass storage (assumptions): the 64 kB read is 16 bulk transfers of
# 4 kB; each takes 1 ms on the bus and 20 us of transfer-descriptor
# processing in the bottom half; 5 us top half; the reader issues the next
# transfer at once (its own cost is negligible). Network as in quest-pibs-vs-ss: 2 us top half, 3 us
# bottom half per 64-byte ICMP echo, ping -f closed loop with a 30 us RTT.
USB = {"name": "usb-storage", "kind": "disk", "latency": 1_000 * US, "top_half": 5 * US,
       "per_sector": 20 * US, "sectors": 1, "sector_bytes": 4096, "omega_main": 0}


FALSIFIERS = {
    "shared": "one shared I/O VCPU in the separate set-up too",
    "separate": "separate I/O VCPUs in the shared set-up too",
}
SETUPS = {"shared I/O VCPU": True, "separate I/O VCPUs": False}


def config(shared: bool, duration: int, window: int) -> dict[str, Any]:
    servers: list[dict[str, Any]] = [
        {"name": n, "policy": "sporadic", "budget": c * UNIT, "period": t * UNIT}
        for n, c, t in TABLE3
    ]
    servers.append({"name": "IOVCPU" if shared else "IOVCPU.usb", "policy": "pibs",
                    "num": 1, "den": 100})
    if not shared:
        servers.append({"name": "IOVCPU.net", "policy": "pibs", "num": 1, "den": 100})
    loop = {"op": "loop", "body": [{"op": "compute", "ns": 10_000_000}]}
    tasks: list[dict[str, Any]] = [
        {"name": f"{n}.cpu", "server": i, "release": {"kind": "once"}, "program": [loop]}
        for i, (n, _, _) in enumerate(TABLE3)
    ]
    tasks.append({"name": "VCPU0.usb-reader", "server": 0, "priority": 2,
                  "release": {"kind": "once"},
                  "program": [{"op": "loop", "body": [{"op": "io", "device": 0}]}]})
    tasks.append({"name": "VCPU2.net", "server": 2, "priority": 2, "release": {"kind": "once"},
                  "program": [{"op": "loop", "body": [
                      {"op": "io", "device": 1}, {"op": "compute", "ns": 5 * US}]}]})
    classes = [{"name": "usb", "iovcpu": 4}, {"name": "net", "iovcpu": 4 if shared else 5,
                                               "consumer": 5}]
    return {
        "duration": duration,
        "window": window,
        "servers": servers,
        "tasks": tasks,
        "classes": classes,
        "devices": [
            {**USB, "class": 0},
            {"name": "e1000", "class": 1, "kind": "nic", "top_half": 2 * US,
             "bottom_half": 3 * US, "bytes": 64,
             "arrival": {"kind": "ping-flood", "rtt": 30_000, "start": duration // 2}},
        ],
    }


def measure(duration: int, variant: str | None) -> dict[str, dict[str, float]]:
    f = key_of(FALSIFIERS, variant)
    window = duration // 10
    res: dict[str, dict[str, float]] = {}
    for label, shared in SETUPS.items():
        shared = {"shared": True, "separate": False}.get(f or "", shared)
        m = simulate(config(shared, duration, window)).metrics
        usb = np.array(m["devices"][0]["throughput_windows_bytes_per_s"]) / 1e3
        net = np.array(m["devices"][1]["throughput_windows_bytes_per_s"]) / 1e3
        half = len(usb) // 2
        res[label] = {
            "USB before flood": float(usb[:half].mean()),
            "USB during flood": float(usb[half + 1:].mean()),
            "network during flood": float(net[half + 1:].mean()),
        }
    return res


def judge(res: dict[str, dict[str, float]]) -> list[Check]:
    sh, sep = res["shared I/O VCPU"], res["separate I/O VCPUs"]
    sep_drop = 1 - sep["USB during flood"] / sep["USB before flood"]
    sh_drop = 1 - sh["USB during flood"] / sh["USB before flood"]
    return [
        within("separate I/O VCPUs: USB bandwidth (nearly) unaffected by the flood (fraction "
               "lost)", "unaffected (Fig. 6)", sep_drop, -0.05, 0.05,
               shown=f"{sep['USB before flood']:.1f} -> {sep['USB during flood']:.1f} kB/s",
               falsifier=FALSIFIERS["shared"]),
        ordering("shared I/O VCPU: the flood degrades USB bandwidth, more than with separate "
                 "ones (fraction lost, shared - separate)", "degraded (Fig. 6)",
                 sh_drop - sep_drop, 0.05, what="shared - separate",
                 shown=f"{sh['USB before flood']:.1f} -> {sh['USB during flood']:.1f} kB/s "
                       f"({sh_drop:.0%} vs {sep_drop:.0%})", falsifier=FALSIFIERS["separate"]),
        ordering("network bandwidth during the flood is lower when sharing (separate / shared)",
                 "degraded (Fig. 6)",
                 sep["network during flood"] / max(sh["network during flood"], 1e-9), 1.5,
                 what="separate / shared",
                 shown=f"{sep['network during flood']:.1f} / {sh['network during flood']:.1f} "
                       "kB/s", falsifier=FALSIFIERS["separate"]),
    ]


def run(out_dir: Path, *, quick: bool = False) -> Result:
    duration = 20_000_000_000 if quick else 60_000_000_000
    res, checks = falsify(lambda v: measure(duration, v), judge)
    png = plots.bars(out_dir / "quest_shared_iovcpu.png", res,
                     title="USB and network bandwidth (QUEST-VCPU Fig. 6 shape)", ylabel="kB/s")
    table = "\n".join(
        f"{k:<20} " + ", ".join(f"{n} {v:.1f} kB/s" for n, v in r.items()) for k, r in res.items()
    )
    return Result(NAME, checks, table, [str(png)], res)
