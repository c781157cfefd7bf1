"""Simulator speed of this checkout next to another revision, in one run.

Builds a small runner (``bench/sim_runner``) against irqlab-sim at two
revisions -- ``IRQLAB_BENCH_BASE`` (default: the commit before the simulator
was split by concern) and the working tree -- and times the same systems in
alternating rounds: rate-monotonic task sets (10 tasks 200 s, 64 CPUs x 10
tasks, 10,000 tasks) and shipped scenarios from the golden set. Prints one
JSON line per system: CPU time of the ``simulate`` call, min/median/max
over the rounds for each revision, and the ratio of medians (head / base;
below 1 is faster). Both revisions must process the same number of events.
On the plain RM sets the floor runs too -- a minimal event-driven
partitioned-RM simulator (``bench/sim_runner/floor.rs``: an event heap and a
ready heap per CPU) that must complete the same jobs -- and
``head_over_floor`` is irqlab's distance from it (DESIGN §9, issue 20).
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from irqlab.tasksets import MS, random_rm_taskset, rm_config

ROOT = Path(__file__).resolve().parent.parent
BASE = os.environ.get("IRQLAB_BENCH_BASE", "bc77f7a")  # the last commit before the split
ROUNDS = int(os.environ.get("IRQLAB_BENCH_ROUNDS", "5"))
GOLDEN = ROOT / "crates/irqlab-sim/tests/golden"
SYSTEMS = [
    "scenario-usb-priority-inversion-000",
    "scenario-usb-mode-change-000",
    "scenario-usb-roundtrip-000",
    "scenario-vint-case-000",
    "exp-vint-kvm-storm-003",
    "exp-quest-pibs-vs-ss-000",
]


def partitioned(cpus: int, per_cpu: int, duration: int) -> dict:
    """Rate-monotonic tasks partitioned over ``cpus`` CPUs: per CPU
    ``per_cpu`` tasks of distinct periods (10 ms .. 100 s) at utilization 0.6
    in total (UUniFast-like split, seeded), each in its own server."""
    rng = random.Random(7)
    servers, tasks = [], []
    for c in range(cpus):
        periods = rng.sample(range(10, 100_000), per_cpu)
        shares = [rng.random() for _ in periods]
        total = sum(shares)
        for p, u in zip(periods, shares, strict=True):
            i = len(servers)
            servers.append({"name": f"s{i}", "cpu": c, "policy": "unbounded",
                            "rank": p * MS * 100_000 + i})
            tasks.append({"name": f"t{i}", "server": i,
                          "release": {"kind": "periodic", "period": p * MS},
                          "program": [{"op": "compute",
                                       "ns": max(1, int(p * MS * 0.6 * u / total))}]})
    return {"cpus": cpus, "duration": duration, "servers": servers, "tasks": tasks}


def build(src: Path, work: Path, tag: str, core: bool = False) -> Path:
    """Build the runner against ``src/crates/irqlab-sim``; returns the binary.
    ``core``: with the core-cycle mode (``--core``), for this checkout."""
    crate = work / f"runner-{tag}"
    (crate / "src").mkdir(parents=True, exist_ok=True)
    for f in (ROOT / "bench/sim_runner").glob("*.rs"):
        (crate / "src" / f.name).write_text(f.read_text())
    (crate / "Cargo.toml").write_text(f"""[package]
name = "sim-runner"
version = "0.0.0"
edition = "2021"

[dependencies]
irqlab-sim = {{ path = "{src / 'crates/irqlab-sim'}" }}
irqlab-core = {{ path = "{src / 'crates/irqlab-core'}" }}
serde_json = "1"
libc = "0.2"

[features]
core = []

[profile.release]
debug = 1

[workspace]
""")
    # the revision's own lock file (the same dependency versions), and a
    # target dir kept in this checkout's target/ so reruns build little
    (crate / "Cargo.lock").write_text((src / "Cargo.lock").read_text())
    target = ROOT / "target" / f"bench-runner-{tag}"
    subprocess.run(["cargo", "build", "--release", "-q", "--manifest-path",
                    str(crate / "Cargo.toml"), "--target-dir", str(target)]
                   + (["--features", "core"] if core else []), check=True)
    return target / "release/sim-runner"


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="irqlab-bench-"))
    base_src = work / "base"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach",
                    str(base_src), BASE], check=True)
    try:
        bins = {"base": build(base_src, work, "base"), "head": build(ROOT, work, "head")}
        tasks = random_rm_taskset(random.Random(2026), 10, min_period_ms=10, max_period_ms=100)
        rm = work / "rm10.config.json"
        rm.write_text(json.dumps(rm_config(tasks, 200_000 * MS)))
        cpus64 = work / "rm64x10.config.json"
        cpus64.write_text(json.dumps(partitioned(64, 10, 20_000 * MS)))
        many = work / "rm1x10000.config.json"
        many.write_text(json.dumps(partitioned(1, 10_000, 20_000 * MS)))
        files = [rm, cpus64, many] + [GOLDEN / f"{s}.config.json" for s in SYSTEMS]
        runs = {"base": [str(bins["base"])], "head": [str(bins["head"])],
                "floor": [str(bins["head"]), "--floor"]}
        times: dict[str, dict[str, list[int]]] = {str(f): {r: [] for r in runs} for f in files}
        events: dict[str, dict[str, int]] = {str(f): {} for f in files}
        jobs: dict[str, dict[str, int]] = {str(f): {} for f in files}
        for r in range(ROUNDS):
            order = list(runs) if r % 2 == 0 else list(reversed(runs))
            for rev in order:
                out = subprocess.run(runs[rev] + [str(f) for f in files],
                                     check=True, capture_output=True, text=True).stdout
                for line in out.splitlines():
                    name, ns, ev, done = line.rsplit(" ", 3)
                    times[name][rev].append(int(ns))
                    events[name][rev] = int(ev)
                    jobs[name][rev] = int(done)
        for f in files:
            t = times[str(f)]
            ev = events[str(f)]
            row = {"figure": "sim-speed-head-vs-base", "system": f.name.replace(".config.json", ""),
                   "base": BASE, "rounds": ROUNDS, "events": ev["head"],
                   "same_events": ev["head"] == ev["base"]}
            for rev in ("base", "head"):
                row[f"{rev}_ms_min_med_max"] = [round(min(t[rev]) / 1e6, 2),
                                                round(statistics.median(t[rev]) / 1e6, 2),
                                                round(max(t[rev]) / 1e6, 2)]
            row["head_over_base"] = round(statistics.median(t["head"]) /
                                          statistics.median(t["base"]), 3)
            if t["floor"]:  # a plain RM task set: the minimal simulator too
                j = jobs[str(f)]
                row["floor_ms_min_med_max"] = [round(min(t["floor"]) / 1e6, 2),
                                               round(statistics.median(t["floor"]) / 1e6, 2),
                                               round(max(t["floor"]) / 1e6, 2)]
                row["same_jobs_as_floor"] = j["floor"] == j["head"] == j["base"]
                row["head_over_floor"] = round(statistics.median(t["head"]) /
                                               statistics.median(t["floor"]), 2)
            print(json.dumps(row), flush=True)
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base_src)],
                       check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
