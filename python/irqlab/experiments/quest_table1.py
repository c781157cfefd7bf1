"""QUEST-VCPU Table 1 / Figure 3: CPU share of each VCPU without and with
CD-ROM I/O.

Four Main VCPUs (sporadic servers; C/T in 100 us units: VCPU0 2/5, VCPU1
2/8, VCPU2 1/4, VCPU3 1/10), each with a CPU-bound thread (VCPU3's is the
logger, which busy-waits), and a 10 % PIBS I/O VCPU for the ATA CD-ROM. In
the second run a thread on VCPU1 reads 64 kB from the CD-ROM over and over;
the PIO bottom halves run on the I/O VCPU at VCPU1's inherited priority.
Claim (QUEST-VCPU §3): only VCPU3, the lowest-priority VCPU, loses
utilization; the higher-priority VCPUs stay isolated. Device costs are
modelling assumptions recorded in docs/reproductions.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from irqlab import plots
from irqlab.experiments import Check, Result
from irqlab.experiments.claims import falsify, key_of, within
from irqlab.sim import simulate

NAME = "quest-table1"
TITLE = "QUEST-VCPU Table 1 / Figure 3: VCPU CPU shares without and with CD-ROM I/O"
SECONDS = {"quick": 3, "full": 3}  # measured: see irqlab.experiments

UNIT = 100_000  # 100 us
US = 1_000
TABLE1 = [("VCPU0", 2, 5), ("VCPU1", 2, 8), ("VCPU2", 1, 4), ("VCPU3", 1, 10)]
# CD-ROM model (assumptions, docs/reproductions.md): 64 kB = 32 sectors of
# 2048 B per read; 1 ms device latency per read; PIO copy 120 us per sector
# in the bottom half (about 17 MB/s, ATA PIO mode 4); 10 us top half; 20 us
# on the reader's Main VCPU when a read returns.
CDROM = {
    "name": "cdrom", "class": 0, "kind": "disk", "latency": 1_000 * US, "top_half": 10 * US,
    "per_sector": 120 * US, "sectors": 32, "sector_bytes": 2048, "omega_main": 20 * US,
}


def cpu_bound(name: str, server: int, priority: int = 1) -> dict[str, Any]:
    return {
        "name": name, "server": server, "priority": priority, "release": {"kind": "once"},
        "program": [{"op": "loop", "body": [{"op": "compute", "ns": 10_000_000}]}],
    }


FALSIFIERS = {
    "irq-priority": "bottom halves at interrupt exit, charged to whichever VCPU was interrupted "
                    "(the Linux path, no I/O VCPU)",
    "no-iovcpu": "no I/O VCPU (bottom halves charged to the reader's VCPU1)",
}


def config(with_cd: bool, duration: int, variant: str | None = None) -> dict[str, Any]:
    tasks = [cpu_bound(f"{n}.cpu" if n != "VCPU3" else "VCPU3.logger", i)
             for i, (n, _, _) in enumerate(TABLE1)]
    if with_cd:
        tasks.append({
            "name": "VCPU1.cd-reader", "server": 1, "priority": 2, "release": {"kind": "once"},
            "program": [{"op": "loop", "body": [
                {"op": "io", "device": 0}, {"op": "compute", "ns": 50 * US}]}],
        })
    io: dict[str, Any] = {"name": "IOVCPU", "policy": "pibs", "num": 1, "den": 10}
    cfg = {
        "duration": duration,
        "window": 5_000_000_000,
        "servers": [
            {"name": n, "policy": "sporadic", "budget": c * UNIT, "period": t * UNIT}
            for n, c, t in TABLE1
        ] + [io],
        "tasks": tasks,
        "classes": [{"name": "ata", "iovcpu": 4}],
        "devices": [CDROM],
    }
    if variant == "no-iovcpu" and with_cd:  # (without the reader nothing does I/O)
        cfg["path"] = "quest-no-iovcpu"
    if variant == "irq-priority" and with_cd:
        cfg["path"] = "linux"
        cfg["servers"] = cfg["servers"][:4]
        cfg["classes"] = [{"name": "ata"}]
    return cfg


Shares = dict[str, dict[str, float]]


def measure(duration: int, variant: str | None) -> dict[str, Any]:
    f = key_of(FALSIFIERS, variant)
    shares: Shares = {}
    cd_bytes = 0
    for label, with_cd in [("no CD-ROM I/O", False), ("CD-ROM I/O", True)]:
        m = simulate(config(with_cd, duration, f)).metrics
        shares[label] = {s["name"]: 100.0 * s["share_fraction"] for s in m["servers"]}
        shares[label].setdefault("IOVCPU", 0.0)
        if with_cd:
            cd_bytes = m["devices"][0]["bytes"]
    return {"shares": shares, "cd_bytes": cd_bytes}


def judge(d: dict[str, Any]) -> list[Check]:
    before, after = d["shares"]["no CD-ROM I/O"], d["shares"]["CD-ROM I/O"]
    irq = FALSIFIERS["irq-priority"]
    checks = [
        within(f"{n} (higher priority than the I/O VCPU's inherited one) keeps its share "
               "(points lost)", "isolated", before[n] - after[n], -0.5, 0.5,
               shown=f"{before[n]:.2f}% -> {after[n]:.2f}%", falsifier=irq)
        for n in ("VCPU0", "VCPU2")
    ]
    checks.append(within("VCPU1 (the reader's own VCPU) keeps its share (points lost)",
                         "isolated", before["VCPU1"] - after["VCPU1"], -0.5, 0.5,
                         shown=f"{before['VCPU1']:.2f}% -> {after['VCPU1']:.2f}%", falsifier=irq))
    loss = before["VCPU3"] - after["VCPU3"]
    checks.append(within("only VCPU3 (lowest priority) loses, about the I/O VCPU's 10 % "
                         "(points lost)", "loses", loss, 8.0, 12.0,
                         shown=f"{before['VCPU3']:.2f}% -> {after['VCPU3']:.2f}% "
                               f"(I/O VCPU {after['IOVCPU']:.2f}%)",
                         falsifier=FALSIFIERS["no-iovcpu"]))
    return checks


def run(out_dir: Path, *, quick: bool = False) -> Result:
    duration = 2_000_000_000 if quick else 10_000_000_000
    d, checks = falsify(lambda v: measure(duration, v), judge)
    shares, cd_bytes = d["shares"], d["cd_bytes"]
    png = plots.bars(
        out_dir / "quest_table1.png",
        {n: {k: shares[k][n] for k in shares} for n in [*(t[0] for t in TABLE1), "IOVCPU"]},
        title="CPU share per VCPU (QUEST-VCPU Fig. 3)", ylabel="% CPU",
    )
    table = "VCPU     " + "  ".join(f"{k:>14}" for k in shares) + "\n" + "\n".join(
        f"{n:<8} " + "  ".join(f"{shares[k][n]:>13.2f}%" for k in shares)
        for n in [*(t[0] for t in TABLE1), "IOVCPU"]
    ) + f"\nCD-ROM read {cd_bytes / (duration / 1e9) / 1e3:.1f} kB/s"
    return Result(NAME, checks, table, [str(png)], d)
