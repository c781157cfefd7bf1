"""USB-DIFFSERV §III-A, Figures 1-5: the toy system, schedule by schedule.

Three tasks: tau_H (2 time units, with one I/O request after the first),
tau_M (3 units, CPU-bound) and tau_L (1 unit); top and bottom halves take
one unit each; the device answers at once. The paper's figures are
pictures; the release times and deadlines below are a reconstruction that
satisfies every statement of its text (docs/reproductions.md):

* case A: all released at 0; deadlines tau_H 6, tau_M 8, tau_L 10;
* case B ("adjusted ready times"): tau_L released at 0 and also issues an
  I/O request after its unit; tau_H and tau_M released at 1; absolute
  deadlines tau_H 6, tau_M 9, tau_L 10.

Systems: Linux (PREEMPT_RT, SCHED_DEADLINE tasks, bottom halves in a
SCHED_FIFO 50 thread), Quest with one interrupter (one I/O VCPU inheriting
the highest waiting priority), Quest with differentiated service (one I/O
VCPU per task class). Claims: Fig. 1 Linux misses at t = 6; Fig. 2 Quest no
miss; Fig. 3 Linux misses; Fig. 4 Quest without differentiated service
misses; Fig. 5 Quest with differentiated service does not.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from irqlab.experiments import Check, Result
from irqlab.experiments.claims import exact, falsify
from irqlab.sim import simulate

NAME = "usb-toy"
TITLE = "USB-DIFFSERV Figures 1-5: toy schedules, Linux vs Quest with and without DiffServ"
SECONDS = {"quick": 2, "full": 3}  # measured: see irqlab.experiments

U = 1_000_000  # one toy time unit


def config(case: str, system: str) -> dict[str, Any]:
    b = case == "B"
    # relative deadlines = periods; tau_H's absolute deadline is 6 in both cases
    periods = {"tau_H": 5 if b else 6, "tau_M": 8, "tau_L": 10}
    rel = {"tau_H": 1 if b else 0, "tau_M": 1 if b else 0, "tau_L": 0}
    io = {"op": "io", "device": 0}
    progs = {
        "tau_H": [{"op": "compute", "ns": U}, io, {"op": "compute", "ns": U}],
        "tau_M": [{"op": "compute", "ns": 3 * U}],
        "tau_L": [{"op": "compute", "ns": U}, {"op": "io", "device": 1}] if b
        else [{"op": "compute", "ns": U}],
    }
    tasks = [{"name": n, "server": i,
              "release": {"kind": "periodic", "period": periods[n] * U, "offset": rel[n] * U,
                          "jobs": 1},
              "program": progs[n]} for i, n in enumerate(periods)]
    dev = {"kind": "disk", "latency": 0, "top_half": U, "per_sector": U, "sectors": 1,
           "sector_bytes": 512}
    if system == "linux":
        servers = [{"name": n, "policy": "cbs", "runtime": p * U, "period": p * U}
                   for n, p in periods.items()]
        classes = [{"name": "usb"}]
        cls = [0, 0]
    else:
        budgets = {"tau_H": 3, "tau_M": 4, "tau_L": 2}
        servers = [{"name": n, "policy": "sporadic", "budget": budgets[n] * U, "period": p * U}
                   for n, p in periods.items()]
        if system == "quest-1-interrupter":
            servers.append({"name": "iovcpu", "policy": "pibs", "num": 1, "den": 2})
            classes = [{"name": "usb", "iovcpu": 3}]
            cls = [0, 0]
        else:
            servers += [{"name": "iovcpu.H", "policy": "pibs", "num": 1, "den": 2},
                        {"name": "iovcpu.L", "policy": "pibs", "num": 1, "den": 2}]
            classes = [{"name": "usb.H", "iovcpu": 3}, {"name": "usb.L", "iovcpu": 4}]
            cls = [0, 1]
    return {
        "path": "linux" if system == "linux" else "quest",
        "linux": {"threaded_bh": True},
        "duration": 20 * U, "window": 20 * U,
        "servers": servers, "tasks": tasks, "classes": classes,
        "devices": [{"name": "dev.H", "class": cls[0], **dev},
                    {"name": "dev.L", "class": cls[1], **dev}],
        "trace": {"enabled": True},
    }


def timeline(trace: dict[str, Any]) -> str:
    """`[start,end) name` per run on CPU 0, in time units."""
    out = []
    for e in trace["traceEvents"]:
        if e.get("ph") == "X" and e.get("pid") == 0:
            a, d = e["ts"] / 1000, e["dur"] / 1000
            out.append(f"[{a:g},{a + d:g}) {e['name']}")
    return "  ".join(out)


# (case, system, figure, paper: tau_H misses?)
RUNS = [("A", "linux", 1, True), ("A", "quest-1-interrupter", 2, False),
        ("B", "linux", 3, True), ("B", "quest-1-interrupter", 4, True),
        ("B", "quest-2-interrupters", 5, False)]
# the falsifier: each figure's system swapped for the one the paper contrasts
# it with; the outcome must flip
SWAP = {("A", "linux"): "quest-1-interrupter", ("A", "quest-1-interrupter"): "linux",
        ("B", "linux"): "quest-2-interrupters",
        ("B", "quest-1-interrupter"): "quest-2-interrupters",
        ("B", "quest-2-interrupters"): "quest-1-interrupter"}
FALSIFIER = "the counterpart system (A: Linux <-> Quest; B: one <-> two interrupters)"


def measure(variant: str | None) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for case, system, fig, _ in RUNS:
        if variant is not None:
            system = SWAP[(case, system)]
        r = simulate(config(case, system))
        done = {t["name"]: t["completions_ns"][0] / U for t in r.metrics["tasks"]}
        misses = {t["name"]: t["deadline_misses"] for t in r.metrics["tasks"]}
        data[f"fig{fig}"] = {"completions": done, "misses": misses, "system": system,
                             "timeline": timeline(r.trace), "trace": r.trace}
    return data


def judge(data: dict[str, Any]) -> list[Check]:
    checks = []
    for case, system, fig, miss in RUNS:
        d = data[f"fig{fig}"]
        got = d["misses"]["tau_H"] > 0
        checks.append(exact(f"Figure {fig} ({system}, case {case}): tau_H "
                            f"{'misses' if miss else 'meets'} its deadline at t = 6",
                            "miss" if miss else "no miss", int(got), int(miss),
                            shown=f"tau_H done at {d['completions']['tau_H']:g}",
                            falsifier=FALSIFIER))
        if fig == 5:
            n = sum(d["misses"].values())
            checks.append(exact("Figure 5: no task misses with differentiated service",
                                "no miss", n, 0, shown=f"misses {d['misses']}",
                                falsifier=FALSIFIER))
    return checks


def run(out_dir: Path, *, quick: bool = False) -> Result:
    data, checks = falsify(measure, judge)
    lines = []
    for case, system, fig, _ in RUNS:
        d = data[f"fig{fig}"]
        lines.append(f"Fig. {fig} {system} (case {case}): {d.pop('timeline')}")
        (out_dir / f"usb_toy_fig{fig}_trace.json").write_text(json.dumps(d.pop("trace")))
    return Result(NAME, checks, "\n".join(lines),
                  [str(out_dir / f"usb_toy_fig{f}_trace.json") for f in range(1, 6)], data)
