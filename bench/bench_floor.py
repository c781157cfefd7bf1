"""irqlab against the floor, in one run (issue 20, DESIGN §9).

Two floors, each timed next to irqlab in alternating rounds (CPU time of the
measured call; the ratio is taken per round, then min/median/max over the
rounds):

* the simulator against a minimal event-driven partitioned-RM simulator
  (``bench/sim_runner/floor.rs``: one event heap and one ready heap per CPU,
  nothing else), on plain rate-monotonic task sets of 10, 200, 1,000 and
  10,000 tasks on one CPU and of 10 tasks per CPU on 8 and 64 CPUs. Both must
  complete the same jobs (``same_jobs``). Each round runs every set in
  order in one process per side, so a set's call follows the previous
  set's (``ratio``), and again with each set run once untimed just before
  its timed call (``warm_ratio``: the steady state of a process that runs
  the same model again, as a sweep does);
* the core's scheduling cycle (wake-up, schedule, block, schedule) against
  the same cycle on a bare ``BinaryHeap`` (``bench/sim_runner/core_cycle.rs``)
  at 1, 24, 1,000 and 10,000 servers.

Prints one JSON line per figure. ``IRQLAB_BENCH_ROUNDS`` (default 5) sets
the rounds. ``IRQLAB_FLOOR_BASE`` (a git revision, optional) also times the
simulator and the core cycle at that revision in the same rounds (before /
after figures): ``base_ratio_min_med_max`` is its distance from the floor.
``IRQLAB_FLOOR_CORE_ONLY=1`` runs the core-cycle figures only.

Where valgrind is installed, each simulator set is also run once per side
under callgrind (``figure: sim-vs-floor-instructions``): the instructions
of the measured call alone (``--toggle-collect`` on ``irqlab_sim::simulate``
and on the floor's ``run``) and their ratio. Unlike the times, these counts
do not depend on the host's load or microarchitecture (the same binary and
command line give the same count; other file paths move it by about
0.05 %), so they compare runs made on different machines or days; the
times remain the figures the targets are stated in.
``IRQLAB_FLOOR_NO_INSTRUCTIONS=1`` skips them.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_sim_revisions import ROOT, build, partitioned

from irqlab.tasksets import MS, random_rm_taskset, rm_config

ROUNDS = int(os.environ.get("IRQLAB_BENCH_ROUNDS", "5"))
BASE = os.environ.get("IRQLAB_FLOOR_BASE")
CORE_ONLY = os.environ.get("IRQLAB_FLOOR_CORE_ONLY") == "1"
CORE_SIZES = [1, 24, 1_000, 10_000]
INSTRUCTIONS = os.environ.get("IRQLAB_FLOOR_NO_INSTRUCTIONS") != "1"
# the measured call of each side of the runner (bench/sim_runner/main.rs)
TOGGLE = {"floor": "sim_runner::floor::run"}
TOGGLE_SIM = "irqlab_sim::simulate"


def spread(xs: list[float], digits: int = 2) -> list[float]:
    """min, median, max."""
    return [round(min(xs), digits), round(statistics.median(xs), digits),
            round(max(xs), digits)]


def systems(work: Path) -> list[tuple[str, int, int, Path]]:
    """(name, tasks, cpus, config file) of the plain RM sets."""
    out = []
    tasks = random_rm_taskset(random.Random(2026), 10, min_period_ms=10, max_period_ms=100)
    sets = [("rm-10-tasks-200s", 10, 1, rm_config(tasks, 200_000 * MS)),
            ("rm-200-tasks-200s", 200, 1, partitioned(1, 200, 200_000 * MS)),
            ("rm-1000-tasks-20s", 1_000, 1, partitioned(1, 1_000, 20_000 * MS)),
            ("rm-10000-tasks-20s", 10_000, 1, partitioned(1, 10_000, 20_000 * MS)),
            ("rm-8-cpus-x-10-tasks-200s", 80, 8, partitioned(8, 10, 200_000 * MS)),
            ("rm-64-cpus-x-10-tasks-20s", 640, 64, partitioned(64, 10, 20_000 * MS))]
    for name, n, cpus, cfg in sets:
        f = work / f"{name}.config.json"
        f.write_text(json.dumps(cfg))
        out.append((name, n, cpus, f))
    return out


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="irqlab-floor-"))
    runner = build(ROOT, work, "head", core=True)
    sets = systems(work)
    runs = {"irqlab": [str(runner)], "floor": [str(runner), "--floor"]}
    if BASE:
        base_src = work / "base"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach",
                        str(base_src), BASE], check=True)
        try:
            runs["base"] = [str(build(base_src, work, "floor-base", core=True))]
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(base_src)], check=True)
    if not CORE_ONLY:
        sim_vs_floor(runs, sets)
        if INSTRUCTIONS:
            instructions(runs, sets, work)
    core_vs_heap(runs)
    return 0


def sim_vs_floor(runs: dict[str, list[str]], sets: list[tuple[str, int, int, Path]]) -> None:
    """The simulator against the minimal simulator (and the base revision)."""
    files = [str(f) for *_, f in sets]
    times: dict[str, dict[str, list[int]]] = {f: {r: [] for r in runs} for f in files}
    warm: dict[str, dict[str, list[int]]] = {f: {r: [] for r in runs} for f in files}
    jobs: dict[str, dict[str, int]] = {f: {} for f in files}
    events: dict[str, int] = {}
    for r in range(ROUNDS):
        for rev in (runs if r % 2 == 0 else reversed(list(runs))):
            for flags, into in (([], times), (["--warm"], warm)):
                out = subprocess.run(runs[rev] + flags + files, check=True,
                                     capture_output=True, text=True).stdout
                for line in out.splitlines():
                    name, ns, ev, done = line.rsplit(" ", 3)
                    into[name][rev].append(int(ns))
                    jobs[name][rev] = int(done)
                    if rev == "irqlab":
                        events[name] = int(ev)
    for name, n, cpus, f in sets:
        t = times[str(f)]
        ratios = [a / b for a, b in zip(t["irqlab"], t["floor"], strict=True)]
        row = {
            "figure": "sim-vs-floor", "system": name, "tasks": n, "cpus": cpus,
            "rounds": ROUNDS, "events": events[str(f)],
            "same_jobs": all(j == jobs[str(f)]["floor"] for j in jobs[str(f)].values()),
            "irqlab_ms_min_med_max": spread([x / 1e6 for x in t["irqlab"]]),
            "floor_ms_min_med_max": spread([x / 1e6 for x in t["floor"]]),
            "ratio_min_med_max": spread(ratios),
            "warm_irqlab_ms_min_med_max": spread([x / 1e6 for x in warm[str(f)]["irqlab"]]),
            "warm_floor_ms_min_med_max": spread([x / 1e6 for x in warm[str(f)]["floor"]]),
            "warm_ratio_min_med_max": spread(
                [a / b for a, b in zip(warm[str(f)]["irqlab"], warm[str(f)]["floor"],
                                       strict=True)])}
        if BASE:
            row["base"] = BASE
            row["base_ms_min_med_max"] = spread([x / 1e6 for x in t["base"]])
            row["base_ratio_min_med_max"] = spread(
                [a / b for a, b in zip(t["base"], t["floor"], strict=True)])
            row["base_warm_ratio_min_med_max"] = spread(
                [a / b for a, b in zip(warm[str(f)]["base"], warm[str(f)]["floor"],
                                       strict=True)])
        print(json.dumps(row), flush=True)


def callgrind(cmd: list[str], toggle: str, out: Path) -> int | None:
    """Instructions of the calls of ``toggle`` in one run of ``cmd`` under
    callgrind; None if none were collected (the function was inlined)."""
    res = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                          f"--toggle-collect={toggle}", *cmd],
                         check=True, capture_output=True, text=True)
    m = re.search(r"Collected : (\d+)", res.stderr)
    n = int(m.group(1)) if m else 0
    return n or None


def over(count: int | None, floor: int | None) -> float | None:
    """``count / floor`` to three places, if both were collected."""
    return round(count / floor, 3) if count and floor else None


def instructions(runs: dict[str, list[str]], sets: list[tuple[str, int, int, Path]],
                 work: Path) -> None:
    """Each set once per side under callgrind: the measured call's
    instructions, and irqlab's (and the base's) over the floor's."""
    if shutil.which("valgrind") is None:
        print(json.dumps({"figure": "sim-vs-floor-instructions",
                          "skipped": "valgrind is not installed"}), flush=True)
        return
    out = work / "callgrind.out"
    for name, n, cpus, f in sets:
        counts = {rev: callgrind(cmd + [str(f)], TOGGLE.get(rev, TOGGLE_SIM), out)
                  for rev, cmd in runs.items()}
        floor = counts["floor"]
        row: dict[str, object] = {
            "figure": "sim-vs-floor-instructions", "system": name, "tasks": n,
            "cpus": cpus, "irqlab": counts["irqlab"], "floor": floor,
            "ratio": over(counts["irqlab"], floor)}
        if BASE:
            row["base"] = BASE
            row["base_instructions"] = counts["base"]
            row["base_ratio"] = over(counts["base"], floor)
        print(json.dumps(row), flush=True)


def core_vs_heap(runs: dict[str, list[str]]) -> None:
    """The core cycle against the bare heap, per round in one process (each
    process times both, alternating which goes first); with a base revision,
    its process and this one's alternate round by round."""
    revs = [r for r in runs if r != "floor"]
    for n in CORE_SIZES:
        core: dict[str, list[float]] = {r: [] for r in revs}
        heap: dict[str, list[float]] = {r: [] for r in revs}
        for r in range(ROUNDS):
            for rev in (revs if r % 2 == 0 else reversed(revs)):
                out = subprocess.run([runs[rev][0], "--core", str(n), "1"], check=True,
                                     capture_output=True, text=True).stdout
                c, h = out.split()[2:4]
                core[rev].append(float(c))
                heap[rev].append(float(h))
        row = {
            "figure": "core-cycle-vs-bare-heap", "servers": n, "rounds": ROUNDS,
            "irqlab_ns_min_med_max": spread(core["irqlab"], 1),
            "heap_ns_min_med_max": spread(heap["irqlab"], 1),
            "ratio_min_med_max": spread(
                [c / h for c, h in zip(core["irqlab"], heap["irqlab"], strict=True)])}
        if BASE:
            row["base"] = BASE
            row["base_ns_min_med_max"] = spread(core["base"], 1)
            row["base_ratio_min_med_max"] = spread(
                [c / h for c, h in zip(core["base"], heap["base"], strict=True)])
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    sys.exit(main())
