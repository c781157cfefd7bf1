"""VINT Figures 4-6 in analysis and in simulation (issue 8, part 5).

For every point of the three figures: generated systems of 4 PCPUs (VINT
Table II; the seeds and streams of the vint-fig4/5/6 experiments), each PCPU
analysed (budget search, Eq. 3-8) and simulated for 500 ms with the budget
found, under DSbase, SSbase, DSvINT and SSvINT, from the synchronous release
and from two random phasings. One JSON line per point: the percentage of
interrupt sets serviceable by the analysis (the paper's test, and bounds
valid for every phasing) and in simulation, sets the analysis calls
serviceable but the simulation shows late and simulated times above a safe
bound (both must be 0), and flows above the paper's Eq. 5 + 7 (deferrable
pseudo-VCPUs). The work is the Rust example
crates/irqlab-analysis/examples/vint_serviceability.rs; IRQLAB_VINT_SETS sets the
systems per point (default 100)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    sets = os.environ.get("IRQLAB_VINT_SETS", "100")
    cmd = [os.environ.get("CARGO", "cargo"), "run", "-q", "--release", "-p", "irqlab-analysis",
           "--example", "vint_serviceability", "--", "--sets", sets]
    return subprocess.run(cmd, cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main())
