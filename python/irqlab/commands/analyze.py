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
from pathlib import Path
from typing import Any

from irqlab.analysis import bounds, hypervisor_bounds
from irqlab.model import load


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("analyze", help="analytic bounds of a system model")
    p.add_argument("model", type=Path, help="model file (YAML)")
    p.add_argument("--json", type=Path, default=None, help="write the results as JSON")
    p.set_defaults(func=run)


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
    m = load(args.model)
    cfg = m.sim_config
    if cfg["path"] == "hypervisor":
        print(f"{args.model}: analysis (VINT §VI)")
        result: dict[str, Any] = {"hypervisor": hypervisor_report(cfg)}
        if args.json:
            args.json.write_text(json.dumps(result, indent=1) + "\n")
        return 0
    result = bounds(m)
    print(f"{args.model}: analysis")
    for c in result["cpus"]:
        print(f"  cpu {c['cpu']}: QUEST-VCPU Eq. 1: demand {c['demand'] * 100:.2f}% vs bound "
              f"{c['bound'] * 100:.2f}% -> {'passes' if c['passes'] else 'FAILS'} "
              f"(slack {c['slack'] * 100:+.2f}%)")
    for e in result["io_bounds"]:
        print(f"  {e['task']} reading {e['device']}: USB-DIFFSERV Eq. 1-3 latency <= "
              f"{e['latency_bound_ns'] / 1e6:.3f} ms, throughput >= "
              f"{e['throughput_bound_bytes_per_s']:.0f} B/s")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0
