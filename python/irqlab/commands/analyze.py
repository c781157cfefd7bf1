"""``irqlab analyze MODEL.yaml [--json FILE]``: the analytic bounds of a
model, and a verdict a script can use.

* ``quest`` / ``quest-no-iovcpu`` / ``linux`` machines, per CPU: the
  interrupt load (top halves; on linux bottom halves too), QUEST-VCPU Eq. 1
  (a sufficient test, for reference), each server's response (the
  fixed-priority busy-period RTA, top halves included; CBS servers by an EDF
  test); per task its response over its server's supply (the FP RTA over
  the periodic-resource sbf, top halves charged to it), its deadline and
  slack; per task reading a USB device through an I/O VCPU, USB-DIFFSERV
  Eq. 1-3 (latency bound, guaranteed throughput);
* a hypervisor machine (``vms``): VINT Eq. 3-8 per CPU -- Eq. 3 of every
  VCPU and pseudo-VCPU, Eq. 4 of every guest task, Eq. 5 of every physical
  ISR, and the flow bound of every virtual interrupt (Eq. 5 + 7 with vINT,
  Eq. 5 + 8 without) against its minimum inter-arrival time.

Anything without a bound says why. Exit status: 0 when everything is
bounded within its deadline (or period, or minimum inter-arrival time), 1
when something is not (the reasons are printed under "verdict"), 2 for bad
input. docs/analysis.md lists every bound, its equation and conditions.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from irqlab._native.analysis import ONCE
from irqlab.analysis import analyze
from irqlab.model import load


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "analyze", help="analytic bounds of a system model",
        description="Worst-case bounds of every server, task, interrupt and I/O flow of a "
                    "model, each with its equation, and a verdict.",
        epilog="exit status: 0 everything bounded within its deadline; 1 something is not "
               "(the reasons are printed); 2 bad input")
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


def hypervisor_report(bounds: dict[str, Any]) -> None:
    """Print VINT Eq. 3-8 per CPU (``hypervisor_bounds``)."""
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


def model_report(b: dict[str, Any]) -> None:
    """Print the bounds of a quest / quest-no-iovcpu / linux machine
    (``model_bounds``)."""
    by_cpu: dict[int, list[dict[str, Any]]] = {}
    for t in b["tasks"]:
        by_cpu.setdefault(t["cpu"], []).append(t)
    for c in b["cpus"]:
        load = c["interrupt_load"]
        print(f"  cpu {c['cpu']}: interrupt load "
              + (f"{load * 100:.2f}%" if load is not None else "unbounded"))
        for x in c["interrupts"]:
            arr = x["arrivals"]
            if arr and arr[1] >= ONCE:
                every = f"{arr[0]} in total"
            elif arr:
                every = f"{arr[0]} every {fmt(arr[1])}" + (
                    f" (jitter {fmt(arr[2])})" if arr[2] else "")
            else:
                every = f"no arrival bound: {x['note']}"
            print(f"    {x['device']:<18} top half {fmt(x['top_half'])}, bottom half "
                  f"{fmt(x['bottom_half'])}: {every}")
        if c["note"]:
            print(f"    no bounds: {c['note']}")
        if c["eq1"]:
            e = c["eq1"]
            print(f"    QUEST-VCPU Eq. 1 (sufficient): demand {e['demand'] * 100:.2f}% vs bound "
                  f"{e['bound'] * 100:.2f}% -> {'passes' if e['passes'] else 'fails'} "
                  f"(slack {(e['bound'] - e['demand']) * 100:+.2f}%)")
        for s in c["servers"]:
            size = (f" {fmt(s['budget'])} / {fmt(s['period'])}" if s["period"] else "")
            got = f": {fmt(s['response'])}" if s["response"] is not None else ""
            tail = (f" -> {verdict(False, s['note'])}" if not s["schedulable"]
                    else f" ({s['note']})" if s["note"] else "")
            print(f"    server {s['name']:<14} {s['policy']}{size}{got} [{s['equation']}]{tail}")
        for t in by_cpu.get(c["cpu"], []):
            if t["deadline"] is None:
                print(f"    task {t['name']:<16} in {t['server']}: {t['note']}")
                continue
            slack = (f", slack {fmt(t['deadline'] - t['response'])}"
                     if t["response"] is not None else "")
            print(f"    task {t['name']:<16} {fmt(t['wcet'])} / {fmt(t['period'])} in "
                  f"{t['server']}: {fmt(t['response'])} vs deadline {fmt(t['deadline'])}{slack} "
                  f"[{t['equation'] or '-'}] -> {verdict(t['schedulable'], t['note'])}")
    for r in b["io"]:
        if r["latency"] is None:
            print(f"  read {r['task']} <- {r['device']}: no bound: {r['note']}")
            continue
        t = r["terms"]
        print(f"  read {r['task']} <- {r['device']}: latency <= {fmt(r['latency'])} (device "
              f"{fmt(t['device'])} + moderation {fmt(t['moderation'])} + top half "
              f"{fmt(t['top_half'])} + eligibility {fmt(t['eligibility'])} + bottom half "
              f"{fmt(t['bottom_half'])})")


def usb_report(out: list[dict[str, Any]]) -> None:
    """Print USB-DIFFSERV Eq. 1-3 for every task reading a USB device
    through an I/O VCPU (sporadic Main VCPU, PIBS I/O VCPU)."""
    for e in out:
        print(f"  {e['task']} reading {e['device']}: USB-DIFFSERV Eq. 1-3 latency <= "
              f"{e['latency_bound_ns'] / 1e6:.3f} ms, throughput >= "
              f"{e['throughput_bound_bytes_per_s']:.0f} B/s")


def report_verdict(failures: list[str]) -> int:
    if not failures:
        print("verdict: every server, task and flow is bounded within its deadline")
        return 0
    print(f"verdict: FAILS ({len(failures)} item(s) without a bound within the deadline)")
    for f in failures:
        print(f"  - {f}")
    return 1


def run(args: argparse.Namespace) -> int:
    result = analyze(load(args.model))
    if result["path"] == "hypervisor":
        print(f"{args.model}: analysis (VINT §VI)")
        hypervisor_report(result["hypervisor"])
    else:
        print(f"{args.model}: analysis ({result['path']} path)")
        model_report(result["model"])
        usb_report(result["io_bounds"])
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return report_verdict(result["verdict"]["failures"])
