"""``irqlab analyze MODEL.yaml [--json FILE]``: the analytic bounds of a
model.

* QUEST-VCPU Eq. 1 per CPU: Main VCPU utilizations plus `(2 - U) U` per
  I/O VCPU against the Liu-Layland bound, with the slack;
* USB-DIFFSERV Eq. 1-3 for every task reading a USB device through an I/O
  VCPU: the latency bound and the throughput it guarantees;
* for a hypervisor machine (``vms``), VINT Eq. 3-8 per CPU instead: Eq. 3 of
  every VCPU and pseudo-VCPU, Eq. 4 of every guest task, Eq. 5 of every
  physical ISR, and the flow bound of every virtual interrupt (Eq. 5 + 7
  with vINT, Eq. 5 + 8 without) against its minimum inter-arrival time
  (serviceability, Definition 3). Anything without a bound says why.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from irqlab.analysis import hypervisor_bounds, quest_eq1, usb_latency_bound
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


def fmt(ns: int | None) -> str:
    """A duration for the report (`-` for no bound)."""
    if ns is None:
        return "-"
    if ns >= 1_000_000:
        return f"{ns / 1e6:.3f}ms"
    return f"{ns / 1e3:.1f}us"


def verdict(ok: bool, note: str | None) -> str:
    return "ok" if ok else "FAILS" + (f" ({note})" if note else "")


def hypervisor_report(cfg: dict[str, Any]) -> dict[str, Any]:
    """Print VINT Eq. 3-8 per CPU; returns the bounds (JSON-ready)."""
    bounds = hypervisor_bounds(cfg)
    for c in bounds["cpus"]:
        o = c["switch_overhead"]
        print(f"  cpu {c['cpu']} ({c['replenish']} replenishment"
              + (f", switch overhead {fmt(o)} per VCPU switch" if o else "") + "):")
        if c["note"]:
            print(f"    no bounds: {c['note']}")
        print("    VINT Eq. 3 (time to receive the budget, within the period):")
        for s in c["servers"]:
            guest = (f", {fmt(s['guest_budget'])} left to the guest"
                     if o and s["guest_budget"] is not None else "")
            print(f"      {s['name']:<18} {fmt(s['budget'])} / {fmt(s['period'])}{guest}: "
                  f"{fmt(s['response'])} -> {verdict(s['schedulable'], None)}")
        if c["tasks"]:
            print("    VINT Eq. 4 (guest task response time, within the deadline):")
        for t in c["tasks"]:
            if t["period"] is None:
                print(f"      {t['name']:<18} in {t['vcpu']}: {t['note']}")
                continue
            print(f"      {t['name']:<18} {fmt(t['wcet'])} / {fmt(t['period'])} in {t['vcpu']}: "
                  f"{fmt(t['response'])} -> {verdict(t['schedulable'], t['note'])}")
        if c["physical_interrupts"]:
            print("    VINT Eq. 5 (physical ISR response time):")
        for x in c["physical_interrupts"]:
            sent = " (sent when the ISR on another CPU ends)" if x["ipi"] else ""
            print(f"      {x['name']:<18} {fmt(x['isr'])} every {fmt(x['min_interarrival'])}"
                  f"{sent}: {fmt(x['response'])}")
        if c["virtual_interrupts"]:
            print("    Handling time (Definition 2) within the minimum inter-arrival time "
                  "(serviceable, Definition 3):")
        for v in c["virtual_interrupts"]:
            scheme = "vINT" if v["managed"] else "no vINT"
            paper = (f" (the paper's Eq. {v['equation'].replace('2x7', '7')}: "
                     f"{fmt(v['paper_bound'])})"
                     if v["paper_bound"] is not None else "")
            cross = ""
            if v["physical_cpu"] != c["cpu"]:
                ipi = f" + IPI {fmt(v['ipi_response'])}" if v["ipi_response"] is not None else ""
                cross = (f" [physical ISR on cpu {v['physical_cpu']}: "
                         f"{fmt(v['physical_response'])}{ipi}]")
            print(f"      {v['name']:<18} {scheme}, Eq. {v['equation']}: {fmt(v['bound'])}{paper}"
                  f"{cross} vs {fmt(v['limit'])} -> "
                  f"{'serviceable' if v['serviceable'] else 'NOT serviceable'}"
                  + (f" ({v['note']})" if v["note"] else ""))
    return bounds


def run(args: argparse.Namespace) -> int:
    cfg = load(args.model).sim_config
    if cfg["path"] == "hypervisor":
        print(f"{args.model}: analysis (VINT §VI)")
        result: dict[str, Any] = {"hypervisor": hypervisor_report(cfg)}
        if args.json:
            args.json.write_text(json.dumps(result, indent=1) + "\n")
        return 0
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
    result = {"cpus": [], "io_bounds": []}
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
