"""``irqlab analyze MODEL.yaml [--json FILE]``: the analytic bounds of a
model.

* QUEST-VCPU Eq. 1 per CPU: Main VCPU utilizations plus `(2 - U) U` per
  I/O VCPU against the Liu-Layland bound, with the slack;
* USB-DIFFSERV Eq. 1-3 for every task reading a USB device through an I/O
  VCPU: the latency bound and the throughput it guarantees.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from irqlab.analysis import quest_eq1, usb_latency_bound
from irqlab.model import load


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("analyze", help="analytic bounds of a system model")
    p.add_argument("model", type=Path, help="model file (YAML)")
    p.add_argument("--json", type=Path, default=None, help="write the results as JSON")
    p.set_defaults(func=run)


def reads(program: list[dict[str, Any]]) -> set[int]:
    out: set[int] = set()
    for step in program:
        if step["op"] == "io":
            out.add(step["device"])
        elif step["op"] == "loop":
            out |= reads(step["body"])
    return out


def run(args: argparse.Namespace) -> int:
    cfg = load(args.model).sim_config
    servers = cfg["servers"]
    per_cpu: dict[int, tuple[list[tuple[int, int]], list[float]]] = defaultdict(lambda: ([], []))
    for s in servers:
        main, io = per_cpu[s["cpu"]]
        if s["policy"] == "pibs":
            io.append(s["num"] / s["den"])
        elif s["policy"] in ("sporadic", "deferrable", "polling"):
            main.append((s["budget"], s["period"]))
        elif s["policy"] == "cbs":
            main.append((s["runtime"], s["period"]))
    result: dict[str, Any] = {"cpus": [], "io_bounds": []}
    print(f"{args.model}: analysis")
    for cpu, (main, io) in sorted(per_cpu.items()):
        if not main:
            continue
        demand, bound, slack, ok = quest_eq1(main, io)
        result["cpus"].append({"cpu": cpu, "demand": demand, "bound": bound, "slack": slack,
                               "passes": ok})
        print(f"  cpu {cpu}: QUEST-VCPU Eq. 1: demand {demand * 100:.2f}% vs bound "
              f"{bound * 100:.2f}% -> {'passes' if ok else 'FAILS'} (slack {slack * 100:+.2f}%)")
    for t in cfg["tasks"]:
        main_srv = servers[t["server"]]
        for d in sorted(reads(t["program"])):
            dev = cfg["devices"][d]
            if dev["kind"] != "usb":
                continue
            io_idx = cfg["classes"][dev["class"]]["iovcpu"]
            if io_idx is None or main_srv["policy"] != "sporadic":
                continue
            io = servers[io_idx]
            u = io["num"] / io["den"]
            omega_io = (dev["omega_io"] + dev.get("kfree", 0)) / 1e9
            lat = usb_latency_bound(omega_io, u, dev.get("omega_main", 0) / 1e9,
                                    main_srv["budget"] / 1e9, main_srv["period"] / 1e9)
            entry = {"task": t["name"], "device": dev["name"], "latency_bound_s": lat,
                     "throughput_bound_Bps": dev.get("bytes", 512) / lat}
            result["io_bounds"].append(entry)
            print(f"  {t['name']} reading {dev['name']}: USB-DIFFSERV Eq. 1-3 latency <= "
                  f"{lat * 1e3:.3f} ms, throughput >= {entry['throughput_bound_Bps']:.0f} B/s")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0
