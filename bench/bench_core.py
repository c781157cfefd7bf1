"""Core benchmark: cost of one scheduling decision vs number of servers.

Runs the criterion bench `crates/irqlab-core/benches/scheduler.rs`, which
times irqlab's O(log n) scheduler and a Quest-style linear scan over the same
servers in the same run, and prints one JSON line per server count with the
ratio. Growth must be logarithmic: from 1,000 to 10,000 servers irqlab's cost
should grow by far less than the 10x of a scan.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIZES = [1, 24, 1_000, 10_000]


def estimate(tool: str, n: int) -> float:
    path = ROOT / "target" / "criterion" / "decision" / tool / str(n) / "new" / "estimates.json"
    return float(json.loads(path.read_text())["mean"]["point_estimate"])


def main() -> int:
    subprocess.run(
        ["cargo", "bench", "-q", "-p", "irqlab-core", "--bench", "scheduler"],
        cwd=ROOT,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    rows = []
    for n in SIZES:
        ours, scan = estimate("irqlab", n), estimate("quest-scan", n)
        rows.append(ours)
        print(json.dumps({
            "figure": "core-decision-cost",
            "servers": n,
            "irqlab_ns_per_cycle": round(ours, 1),
            "quest_scan_ns_per_cycle": round(scan, 1),
            "scan_over_irqlab": round(scan / ours, 2),
        }))
    print(json.dumps({
        "figure": "core-decision-growth",
        "irqlab_10000_over_1000": round(rows[3] / rows[2], 2),
        "linear_would_be": 10.0,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
