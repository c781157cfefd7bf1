"""USB-DIFFSERV Table III / Figures 17-19: differentiated service for high
bandwidth streams with a mode change, and a latency-sensitive control task.

tau_H, tau_M and tau_L read 9000-byte blocks back to back from three
CDC-ACM interfaces of one Teensy (camera streams); tau_C reads 512 bytes
once per period from a second Teensy (control traffic). Main VCPUs (Table
III): 2.5/10, 1/10, 2.5/10 and 0.5/10 ms. I/O classes USB0..USB3 have
3 %, 2 %, 1 % and 1 %; tau_H uses USB0, tau_M USB1, tau_L USB2, tau_C USB3.
At half time a mode change rebinds tau_H to USB2 and tau_L to USB0
(`usb_set_iovcpu`). Omega_IO = 20 us per request (kfree deferred).

Claims: tau_H from about 13.5 MB/s to about 6 MB/s after the change, tau_L
the opposite; tau_M, tau_C and tau_C's read latency unaffected.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from irqlab import plots
from irqlab.experiments import Check, Result
from irqlab.experiments._usb import MS, US, pibs, reader, sporadic, teensy, xhci
from irqlab.sim import simulate

NAME = "usb-mode-change"
TITLE = "USB-DIFFSERV Table III / Figures 17-19: mode change between camera streams"

BLOCK = 9000


def config(duration: int, window: int) -> dict[str, Any]:
    servers = [sporadic("tau_H", 2500 * US, 10 * MS), sporadic("tau_M", 1000 * US, 10 * MS),
               sporadic("tau_L", 2500 * US, 10 * MS), sporadic("tau_C", 500 * US, 10 * MS),
               pibs("USB0", 3), pibs("USB1", 2), pibs("USB2", 1), pibs("USB3", 1)]
    tasks = [reader("tau_H", 0, 0), reader("tau_M", 1, 1), reader("tau_L", 2, 2),
             reader("tau_C", 3, 3, period=10 * MS),
             # the mode change: usb_set_iovcpu on tau_H's and tau_L's fds
             {"name": "mode-change", "server": 3, "priority": 9,
              "release": {"kind": "once", "at": duration // 2},
              "program": [{"op": "bind", "device": 0, "class": 2},
                          {"op": "bind", "device": 2, "class": 0},
                          {"op": "compute", "ns": 1 * US}]}]
    return {
        "duration": duration, "window": window, "servers": servers, "tasks": tasks,
        "classes": [{"name": f"USB{i}", "iovcpu": 4 + i} for i in range(4)],
        "xhci": [xhci([0, 1, 2, 3])],
        "devices": [teensy("cam_H", 0, bytes_=BLOCK), teensy("cam_M", 1, bytes_=BLOCK),
                    teensy("cam_L", 2, bytes_=BLOCK), teensy("control", 3)],
    }


def run(out_dir: Path, *, quick: bool = False) -> Result:
    duration = 4_000 * MS if quick else 20_000 * MS
    window = duration // 20
    m = simulate(config(duration, window)).metrics
    dev = {d["name"]: np.array(d["throughput_windows_bytes_per_s"]) / 1e6 for d in m["devices"]}
    half = len(dev["cam_H"]) // 2
    before = {k: float(v[1:half].mean()) for k, v in dev.items()}
    after = {k: float(v[half + 1:].mean()) for k, v in dev.items()}
    lat = m["devices"][3]["latency"]
    xs = [(k + 0.5) * window / 1e9 for k in range(len(dev["cam_H"]))]
    files = [str(plots.lines(out_dir / "usb_mode_change.png",
                             {k: (xs, list(v)) for k, v in dev.items()},
                             title="Throughput with a mode change (USB-DIFFSERV Fig. 17-18)",
                             xlabel="time (s)", ylabel="MB/s"))]

    def near(x: float, target: float) -> bool:
        return abs(x - target) <= 0.25 * target

    checks = [
        Check("tau_H before the mode change (MB/s)", 13.5, round(before["cam_H"], 2),
              "within 25 %", near(before["cam_H"], 13.5)),
        Check("tau_H after the mode change (MB/s)", 6.0, round(after["cam_H"], 2),
              "within 25 %", near(after["cam_H"], 6.0)),
        Check("tau_L before the mode change (MB/s)", 6.0, round(before["cam_L"], 2),
              "within 25 %", near(before["cam_L"], 6.0)),
        Check("tau_L after the mode change (MB/s)", 13.5, round(after["cam_L"], 2),
              "within 25 %", near(after["cam_L"], 13.5)),
        Check("tau_M unaffected by the mode change (MB/s before -> after)", "unchanged",
              f"{before['cam_M']:.2f} -> {after['cam_M']:.2f}", "within 2 %",
              abs(after["cam_M"] - before["cam_M"]) <= 0.02 * before["cam_M"]),
        Check("tau_C control throughput unaffected (MB/s before -> after)", "unchanged",
              f"{before['control']:.4f} -> {after['control']:.4f}", "within 2 %",
              abs(after["control"] - before["control"]) <= 0.02 * before["control"]),
        Check("tau_C read latency unaffected by the camera traffic (max - min, us)", "flat",
              round((lat["max_ns"] - lat["min_ns"]) / US, 1), "<= 125 us (one microframe) + jitter",
              (lat["max_ns"] - lat["min_ns"]) / US <= 145),
    ]
    table = "\n".join(f"{k:<8} before {before[k]:7.3f} MB/s   after {after[k]:7.3f} MB/s"
                      for k in dev)
    table += (f"\ntau_C read latency: mean {lat['mean_ns'] / US:.1f} us, "
              f"min {lat['min_ns'] / US:.1f}, max {lat['max_ns'] / US:.1f}")
    return Result(NAME, checks, table, files, {"before": before, "after": after})
