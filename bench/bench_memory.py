"""Memory in simulated time and the cost of tracing (DESIGN §9, issue 20).

Runs ``cargo run --example run_config`` (irqlab-sim) as a child process per
measurement and reads its peak RSS and CPU time from ``wait4``:

* **Peak RSS at 20, 200 and 2,000 s simulated** of the same model -- 10,000
  rate-monotonic tasks on one CPU (``bench_sim_revisions.partitioned``) --
  with the per-task completion lists off (``max_completions: 0``; they are
  bounded per task, and grow until the bound) and on (the default 10,000).
  The target: 2,000 s within 10 % of 20 s.
* **Tracing on vs off** on the 10-task RM set of ``bench_sim_revisions``
  (periods 10-100 ms) over 200 s: CPU time of the whole
  child (simulation and writing the file) with the trace streamed as JSON
  and as Perfetto protobuf, over the untraced run; file bytes and record
  memory per traced event.
* **Results to Python**: ``irqlab.sim.simulate`` on 64 CPUs x 10 RM tasks
  (20 s), metrics dict included, against the Rust call alone
  (``run_config``'s own timing of ``simulate``): the CPU time of the
  calling thread in both (wall time on this loaded 2-core machine varies
  2-3x between rounds), over at least 7 alternating rounds.

Prints one JSON line per figure; rounds alternate (min/median/max).
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_sim_revisions import partitioned  # noqa: E402

from irqlab.tasksets import random_rm_taskset, rm_config  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = int(os.environ.get("IRQLAB_BENCH_ROUNDS", "3"))
S = 1_000_000_000


def runner() -> Path:
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "irqlab-sim", "--example",
                    "run_config"], cwd=ROOT, check=True)
    return ROOT / "target/release/examples/run_config"


def measure(exe: Path, *args: str) -> tuple[float, int, str]:
    """CPU seconds, peak RSS (KB) and stdout of one child run."""
    p = subprocess.Popen([str(exe), *args], stdout=subprocess.PIPE, text=True)
    out = p.stdout.read() if p.stdout else ""
    _, status, ru = os.wait4(p.pid, 0)
    if status != 0:
        raise RuntimeError(f"run_config {args} failed ({status})")
    return ru.ru_utime + ru.ru_stime, ru.ru_maxrss, out


def spread(xs: list[float]) -> dict[str, float]:
    return {"min": min(xs), "median": statistics.median(xs), "max": max(xs)}


def main() -> int:
    exe = runner()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for completions in (0, 10_000):
            files = {}
            for d in (20, 200, 2000):
                cfg = partitioned(1, 10_000, d * S)
                cfg["max_completions"] = completions
                files[d] = work / f"t10k_{d}_{completions}.json"
                files[d].write_text(json.dumps(cfg))
            rss: dict[int, list[float]] = {d: [] for d in files}
            for _ in range(ROUNDS):
                for d, f in files.items():
                    rss[d].append(measure(exe, str(f))[1] / 1024)
            med = {d: statistics.median(v) for d, v in rss.items()}
            print(json.dumps({"figure": "peak RSS, 10,000 RM tasks on one CPU",
                              "max_completions": completions,
                              "rss_mb": {f"{d} s": spread(v) for d, v in rss.items()},
                              "ratio_2000s_over_20s": med[2000] / med[20]}), flush=True)
        cfg = work / "rm10.json"
        tasks = random_rm_taskset(random.Random(2026), 10, min_period_ms=10, max_period_ms=100)
        rm = rm_config(tasks, 200 * S)
        rm["trace"] = {"max_events": 2_000_000}  # the traced runs are never cut
        cfg.write_text(json.dumps(rm))
        cpu: dict[str, list[float]] = {"off": [], "json": [], "perfetto": []}
        lines = {}
        for _ in range(ROUNDS):
            cpu["off"].append(measure(exe, str(cfg))[0])
            for fmt in ("json", "perfetto"):
                t, _, out = measure(exe, str(cfg), str(work / f"trace.{fmt}"), fmt)
                cpu[fmt].append(t)
                lines[fmt] = out.strip()
        for fmt in ("json", "perfetto"):
            ratios = [a / b for a, b in zip(cpu[fmt], cpu["off"], strict=True)]
            events = int(lines[fmt].split("trace ")[1].split(" events")[0])
            size = (work / f"trace.{fmt}").stat().st_size
            mem = float(lines[fmt].split(", ")[-1].split(" B")[0])
            print(json.dumps({"figure": "tracing on / off, 10 RM tasks, 200 s",
                              "format": fmt, "cpu_ratio": spread(ratios),
                              "trace_events": events, "file_bytes_per_event": size / events,
                              "memory_bytes_per_event": mem}), flush=True)
        cfg64 = partitioned(64, 10, 20 * S)
        f64 = work / "rm64.json"
        f64.write_text(json.dumps(cfg64))
        from irqlab.sim import simulate

        py, rust = [], []
        for _ in range(max(ROUNDS, 7)):
            out = measure(exe, str(f64))[2]
            rust.append(float(out.split("; cpu ")[1].split(" s")[0]))
            t0 = time.thread_time()
            simulate(cfg64)
            py.append(time.thread_time() - t0)
        print(json.dumps({"figure": "simulate() from Python / Rust call, 64 CPUs x 10 tasks, "
                                    "CPU time of the calling thread",
                          "python_s": spread(py), "rust_s": spread(rust),
                          "ratio_best": min(py) / min(rust),
                          "ratio_median": statistics.median(py) / statistics.median(rust)}),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
