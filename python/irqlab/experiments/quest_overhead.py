"""QUEST-VCPU Figure 7: scheduler overhead vs number of VCPUs.

Each VCPU has one CPU-bound thread; VCPU budgets are one base unit (100 us
or 1 ms) and periods N units, so every VCPU runs one unit per round. The
overhead model multiplies the scheduler's operation counts by per-operation
costs measured by `make bench` on this machine: a Quest-style scheduler
scans every VCPU per decision (`scan_ns_per_server`), irqlab's does not.
Claims checked (QUEST-VCPU §3, Figure 7): overhead is higher with 100 us
units than with 1 ms units, and is about 0.3 % for 24 VCPUs at 1 ms units on
the paper's machine. What the simulation contributes is the operation
counts (decisions per second, queue operations). The linear growth with the
number of VCPUs is the model's input (a scan cost per VCPU, as in Quest), so
it is plotted but not claimed: it would hold by construction. The irqlab
curves show the same counts priced at irqlab's O(log n) decision cost. The
paper's 0.3 % is a measurement of a real kernel: `quest-overhead-real`
measures it on this machine.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from irqlab import plots
from irqlab.experiments import Check, Result
from irqlab.experiments.claims import falsify, key_of, ordering, within
from irqlab.sim import simulate

NAME = "quest-overhead"
TITLE = "QUEST-VCPU Figure 7: scheduler overhead vs number of VCPUs (100 us and 1 ms units)"
SECONDS = {"quick": 5, "full": 7}  # measured: see irqlab.experiments

# Per-operation costs (ns) measured by bench/bench_core.py on this machine:
# irqlab's decision ~80 ns; a Quest-style list scan adds ~2.7 ns per VCPU
# per decision (59 us per cycle of two decisions at 10,000 VCPUs).
DECISION_NS = 80.0
SCAN_NS_PER_VCPU = 2.7
REPL_OP_NS = 5.0
COUNTS = [1, 2, 4, 8, 12, 16, 20, 24]
FALSIFIERS = {
    "same-unit": "the 100 us run at 1 ms units too",
    "no-scan": "irqlab's O(log n) decision (no per-VCPU scan)",
}


def config(n: int, unit: int, duration: int, scan: bool) -> dict[str, Any]:
    return {
        "duration": duration,
        "window": duration,
        "servers": [
            {"name": f"VCPU{i}", "policy": "sporadic", "budget": unit, "period": n * unit}
            for i in range(n)
        ],
        "tasks": [
            {
                "name": f"cpu{i}",
                "server": i,
                "release": {"kind": "once"},
                "program": [{"op": "loop", "body": [{"op": "compute", "ns": 10_000_000}]}],
            }
            for i in range(n)
        ],
        "overhead": {
            "schedule_ns": DECISION_NS,
            "repl_op_ns": REPL_OP_NS,
            "scan_ns_per_server": SCAN_NS_PER_VCPU if scan else 0.0,
        },
    }


def measure(duration: int, variant: str | None) -> dict[str, list[float]]:
    f = key_of(FALSIFIERS, variant)
    curves: dict[str, list[float]] = {}
    for unit_name, unit in [("100us", 100_000), ("1ms", 1_000_000)]:
        if f == "same-unit":
            unit = 1_000_000
        for scan, who in [(True, "Quest-style scan"), (False, "irqlab")]:
            ys = []
            for n in COUNTS:
                m = simulate(config(n, unit, duration, scan and f != "no-scan")).metrics
                ys.append(m["cpus"][0]["overhead_percent"])
            curves[f"{who}, {unit_name} units"] = ys
    return curves


def judge(curves: dict[str, list[float]]) -> list[Check]:
    scan_1ms = curves["Quest-style scan, 1ms units"]
    scan_100 = curves["Quest-style scan, 100us units"]
    ratio = scan_100[-1] / scan_1ms[-1]
    return [
        ordering("100 us units cost more than 1 ms units (ratio at 24 VCPUs)", "higher (Fig. 7)",
                 ratio, 2.0, what="100 us / 1 ms", shown=round(ratio, 2),
                 falsifier=FALSIFIERS["same-unit"]),
        within("overhead for 24 VCPUs at 1 ms units (%)", 0.3, scan_1ms[-1], 0.1, 0.9,
               shown=round(scan_1ms[-1], 4), falsifier=FALSIFIERS["no-scan"],
               note="irqlab prices the simulated decisions (about 2 per 1 ms unit) at this "
                    "machine's 80 ns + 2.7 ns per VCPU scanned: 0.016 %. Quest's 0.3 % on a "
                    "2.66 GHz Core2 includes what a model of decisions does not price (timer "
                    "interrupts, context switches, cache refills, its list walks); the "
                    "measured counterpart is quest-overhead-real."),
    ]


def run(out_dir: Path, *, quick: bool = False) -> Result:
    duration = 1_000_000_000 if quick else 5_000_000_000  # the paper's 5 s window
    curves, checks = falsify(lambda v: measure(duration, v), judge)
    png = plots.lines(
        out_dir / "quest_overhead.png",
        {k: (COUNTS, v) for k, v in curves.items()},
        title="Scheduler overhead (QUEST-VCPU Fig. 7 shape)",
        xlabel="VCPUs",
        ylabel="% CPU in the scheduler (model)",
    )
    csv = out_dir / "quest_overhead.csv"
    csv.write_text(
        "vcpus," + ",".join(curves) + "\n"
        + "\n".join(
            f"{n}," + ",".join(f"{curves[k][i]:.5f}" for k in curves) for i, n in enumerate(COUNTS)
        )
        + "\n"
    )
    table = "VCPUs  " + "  ".join(f"{k:>30}" for k in curves) + "\n" + "\n".join(
        f"{n:>5}  " + "  ".join(f"{curves[k][i]:>29.4f}%" for k in curves)
        for i, n in enumerate(COUNTS)
    )
    return Result(NAME, checks, table, [str(png), str(csv)], {"counts": COUNTS, "curves": curves})
