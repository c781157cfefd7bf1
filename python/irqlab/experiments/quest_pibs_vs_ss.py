"""QUEST-VCPU Table 2 / Figures 4-5: PIBS vs sporadic-server I/O VCPU under
an ICMP ping flood.

Main VCPUs (C/T in 100 us units): VCPU0 1/20, VCPU1 1/30, VCPU2 10/100 (the
network task, plus a CPU-bound thread), VCPU3 20/100 (the logger, plus a
CPU-bound thread); one I/O VCPU at 1 % for the network, first as PIBS, then
as a sporadic server (C/T = 100 us / 10 ms, `max_repl` 32). A ping flood
starts at half time. Claims (QUEST-VCPU §3): the sporadic-server I/O VCPU
shows more, and more variable, scheduler overhead and lower network
bandwidth than the PIBS I/O VCPU (its replenishment queue fills with
fragments and discards usable budget).

The paper does not give the packet costs. The bandwidth effect exists only
in a range of bottom-half sizes, so the experiment runs the curve over 1-10
us: each packet's bottom half leaves one fragment in the SS's queue, and 32
fragments (`max_repl`) cover the whole 100 us budget once a bottom half
reaches C / max_repl = 100 us / 32 = 3.125 us. Below that the full queue
discards budget (Alg. 12 line 3-5 pushes the remnant into the next
replenishment) and PIBS, with its single replenishment, serves more
packets; from there on both serve the same. The claims are taken at 1 us
(the smallest size), the crossover where the curve puts it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from irqlab import plots
from irqlab.experiments import Check, Result
from irqlab.experiments.claims import exact, falsify, key_of, ordering, within
from irqlab.sim import simulate

NAME = "quest-pibs-vs-ss"
TITLE = "QUEST-VCPU Table 2 / Figures 4-5: PIBS vs sporadic-server I/O VCPU under a ping flood"
SECONDS = {"quick": 7, "full": 17}  # measured: see irqlab.experiments

UNIT = 100_000
US = 1_000
TABLE2 = [("VCPU0", 1, 20), ("VCPU1", 1, 30), ("VCPU2", 10, 100), ("VCPU3", 20, 100)]
# ICMP echo in the e1000 driver + lwIP (assumptions): 2 us top half, a
# bottom half of BOTTOM_HALVES us per 64-byte packet (the curve). `ping -f`
# is a closed loop: the next request arrives one round trip (30 us) after
# the reply.
PACKET_BYTES = 64
RTT_NS = 30_000
BOTTOM_HALVES = [1, 2, 3, 4, 5, 6, 8, 10]
SS_BUDGET, MAX_REPL = 100 * US, 32
CROSSOVER_US = SS_BUDGET / MAX_REPL / US  # 3.125
FALSIFIERS = {
    "unbounded": "SS I/O VCPU with a replenishment queue that never fills (max_repl 1024)",
    "pibs": "PIBS in both runs",
}


def config(io_policy: str, duration: int, window: int, bottom_half: int = 3 * US,
           max_repl: int = MAX_REPL) -> dict[str, Any]:
    io: dict[str, Any]
    if io_policy == "pibs":
        io = {"name": "IOVCPU", "policy": "pibs", "num": 1, "den": 100}
    else:
        io = {"name": "IOVCPU", "policy": "sporadic", "budget": SS_BUDGET,
              "period": 10_000 * US, "max_repl": max_repl}
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
            "bottom_half": bottom_half, "bytes": PACKET_BYTES,
            "arrival": {"kind": "ping-flood", "rtt": RTT_NS, "start": duration // 2},
        }],
        "overhead": {"schedule_ns": 80.0, "repl_op_ns": 5.0},
    }


def measure(duration: int, variant: str | None) -> dict[str, Any]:
    """Per bottom-half size: flood bandwidth, scheduler overhead (mean and
    std over the flood's windows) and the longest replenishment queue, for
    the PIBS run and the SS run (or the falsifier's replacement)."""
    f = key_of(FALSIFIERS, variant)
    window = duration // 20
    flood = slice(11, None)  # windows fully inside the flood
    out: dict[str, Any] = {"window": window, "curve": {}}
    for bh in BOTTOM_HALVES:
        row = {}
        for label in ("pibs", "sporadic"):
            policy = "pibs" if f == "pibs" else label
            cfg = config(policy, duration, window, bh * US,
                         1024 if f == "unbounded" else MAX_REPL)
            m = simulate(cfg).metrics
            ov = np.array(m["cpus"][0]["overhead_windows_percent"])
            kbps = np.array(m["devices"][0]["throughput_windows_bytes_per_s"]) / 1e3
            row[label] = {"kBps": float(kbps[flood].mean()), "overhead": float(ov[flood].mean()),
                          "overhead_std": float(ov[flood].std()),
                          "max_queue": m["servers"][4]["max_queue"],
                          "windows": {"overhead": ov.tolist(), "kBps": kbps.tolist()}}
        out["curve"][bh] = row
    return out


def per_packet(r: dict[str, float]) -> float:
    """Scheduler ns per packet handled during the flood."""
    return r["overhead"] / 100 * 1e9 / (r["kBps"] * 1e3 / PACKET_BYTES)


def judge(d: dict[str, Any]) -> list[Check]:
    c = d["curve"]
    p1, s1 = c[1]["pibs"], c[1]["sporadic"]
    ratio = {bh: c[bh]["pibs"]["kBps"] / c[bh]["sporadic"]["kBps"] for bh in c}
    cross = max([bh for bh, r in ratio.items() if r >= 1.05], default=0)
    assumed = "the paper gives no packet costs: bottom halves of 1-10 us are assumed"
    return [
        ordering("PIBS gives a greater network bandwidth during the flood (PIBS / SS, 1 us "
                 "bottom halves)", "significantly greater (Fig. 5)", ratio[1], 1.05,
                 what="PIBS / SS", shown=f"{p1['kBps']:.1f} / {s1['kBps']:.1f} = {ratio[1]:.2f}",
                 falsifier=FALSIFIERS["unbounded"], paper_params=False, note=assumed),
        within("the advantage ends where 32 fragments cover the SS budget (largest swept "
               "bottom half with PIBS / SS >= 1.05, us)",
               f"not stated; C / max_repl = {CROSSOVER_US:g} us", cross, 3, CROSSOVER_US,
               falsifier=FALSIFIERS["unbounded"], paper_params=False, note=assumed),
        exact("the SS replenishment queue fills up (max length, 1 us bottom halves)", MAX_REPL,
              s1["max_queue"], MAX_REPL, falsifier=FALSIFIERS["unbounded"],
              paper_params=False, note=assumed),
        ordering("the SS I/O VCPU costs more scheduler time per packet handled (SS / PIBS, "
                 "1 us bottom halves)", "SS > PIBS (Fig. 4)", per_packet(s1) / per_packet(p1),
                 1.05, what="SS / PIBS",
                 shown=f"{per_packet(s1):.0f} / {per_packet(p1):.0f} ns", falsifier=FALSIFIERS[
                     "pibs"], paper_params=False,
                 note="irqlab prices a decision at 80 ns and a replenishment-queue operation at "
                      "5 ns (bench/bench_core.py on this machine): irqlab's SS queue is O(log "
                      "n), Quest's a list whose splits and merges the paper measured; with its "
                      "fuller queue the SS here makes fewer decisions per packet than PIBS. "
                      "The measured figure is quest-overhead-real's to give."),
        ordering("the SS I/O VCPU's overhead is more variable (std over the flood's windows, "
                 "SS / PIBS, 1 us bottom halves)", "more variable (Fig. 4)",
                 s1["overhead_std"] / max(p1["overhead_std"], 1e-12), 1.5, what="SS / PIBS",
                 shown=f"{s1['overhead_std']:.5f} / {p1['overhead_std']:.5f} %",
                 falsifier=FALSIFIERS["pibs"], paper_params=False,
                 note="a closed-loop flood of identical packets gives every window the same "
                      "work, so neither server's overhead varies in the model; Quest's "
                      "variation came from the real flood and its list operations."),
    ]


def run(out_dir: Path, *, quick: bool = False) -> Result:
    # 8 bottom-half sizes x 2 servers x 3 runs (the system and two falsifiers)
    duration = 20_000_000_000 if quick else 40_000_000_000
    d, checks = falsify(lambda v: measure(duration, v), judge)
    c, window = d["curve"], d["window"]
    w1 = c[1]
    xs = [(k + 0.5) * window / 1e9 for k in range(len(w1["pibs"]["windows"]["kBps"]))]
    bhs = list(c)
    files = [
        str(plots.lines(out_dir / "quest_pibs_vs_ss_overhead.png",
                        {p: (xs, w1[p]["windows"]["overhead"]) for p in w1},
                        title="Scheduler overhead, 1 us bottom halves (QUEST-VCPU Fig. 4 shape)",
                        xlabel="time (s)", ylabel="% CPU in the scheduler (model)")),
        str(plots.lines(out_dir / "quest_pibs_vs_ss_bandwidth.png",
                        {p: (xs, w1[p]["windows"]["kBps"]) for p in w1},
                        title="Network bandwidth, 1 us bottom halves (QUEST-VCPU Fig. 5 shape)",
                        xlabel="time (s)", ylabel="kB/s")),
        str(plots.lines(out_dir / "quest_pibs_vs_ss_curve.png",
                        {p: (bhs, [c[b][p]["kBps"] for b in bhs]) for p in w1},
                        title="Flood bandwidth vs bottom-half size (crossover at C/max_repl)",
                        xlabel="bottom half (us)", ylabel="kB/s")),
    ]
    table = (f"{'BH us':>6} {'PIBS kB/s':>10} {'SS kB/s':>9} {'PIBS/SS':>8} {'SS queue':>9} "
             f"{'PIBS ns/pkt':>12} {'SS ns/pkt':>10}\n" + "\n".join(
                 f"{b:>6} {c[b]['pibs']['kBps']:>10.1f} {c[b]['sporadic']['kBps']:>9.1f} "
                 f"{c[b]['pibs']['kBps'] / c[b]['sporadic']['kBps']:>8.3f} "
                 f"{c[b]['sporadic']['max_queue']:>9} {per_packet(c[b]['pibs']):>12.0f} "
                 f"{per_packet(c[b]['sporadic']):>10.0f}" for b in bhs)
             + f"\ncrossover: C / max_repl = 100 us / 32 = {CROSSOVER_US:g} us")
    for b in bhs:
        for p in c[b]:
            c[b][p].pop("windows")
    return Result(NAME, checks, table, files, d)
