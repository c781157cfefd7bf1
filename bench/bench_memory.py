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
  (20 s) against what a Rust user pays for the same metrics:
  ``run_config``'s ``cpu`` figure, which is ``serde_json`` parsing the
  configuration text (already in memory) into a ``SimConfig``, plus
  ``irqlab_sim::simulate`` (check, build, run, and the ``Metrics``
  struct). The Python side is ``simulate(config_dict)``: reading the dict
  into a ``SimConfig``, the same ``simulate`` work, and a ``SimResult``
  whose metrics and resolved configuration stay Rust values until read;
  then, timed on their own after another call, the first read of
  ``result.metrics`` (the Python dicts and lists of ``metrics.json``) and
  of ``result.config``. Both
  sides: CPU time of the calling thread (``CLOCK_THREAD_CPUTIME_ID``; wall
  time on this loaded 2-core machine varies 2-3x between rounds), warm
  calls only, back to back (each child process, Rust and Python, makes
  ``WARM`` untimed calls first, then ``CALLS`` timed ones per round: a
  fresh process is slower for its first two or three calls on both
  sides), results freed after the clock is read on both sides, at least 7
  alternating rounds. The Python calls run in a
  child process per round (``_pycall``), with ``PYTHONPATH`` on the
  revision's ``python/``. ``IRQLAB_BENCH_BASE`` (a git revision, optional)
  also times that revision's ``run_config`` and ``_native`` module in the
  same rounds, alternating, and reports its figures next to this
  checkout's (its tree extracted with ``git archive`` into
  ``target/bench-base/src-<commit>``, kept for the next run, and built into
  ``target/bench-base``).

Prints one JSON line per figure; rounds alternate (min/median/max).
Arguments choose figures (`rss`, `tracing`, `python`; default all).
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
BASE = os.environ.get("IRQLAB_BENCH_BASE")
CALLS = 6  # timed calls per round and side
WARM = 3  # calls before them, not timed (a fresh process is slower for about 3 calls)
S = 1_000_000_000


def runner() -> Path:
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "irqlab-sim", "--example",
                    "run_config"], cwd=ROOT, check=True)
    return ROOT / "target/release/examples/run_config"


def base_build(rev: str) -> tuple[Path, Path]:
    """``run_config`` and the ``_native`` module of revision ``rev`` (its
    tree extracted once into ``target/bench-base/src-<commit>``, built into
    ``target/bench-base``); returns the runner and the revision's
    ``python/`` directory, with the module in it."""
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", rev + "^{commit}"],
                            check=True, capture_output=True, text=True).stdout.strip()
    target = ROOT / "target/bench-base"
    src = target / f"src-{commit}"
    if not (src / "Cargo.toml").exists():
        src.mkdir(parents=True, exist_ok=True)
        tree = subprocess.run(["git", "-C", str(ROOT), "archive", commit], check=True,
                              capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(src)], input=tree, check=True)
    for args in (["-p", "irqlab-sim", "--example", "run_config"], ["-p", "irqlab-py"]):
        subprocess.run(["cargo", "build", "--release", "-q", *args, "--target-dir",
                        str(target)], cwd=src, check=True)
    module = src / "python/irqlab/_native.abi3.so"
    module.write_bytes((target / "release/lib_native.so").read_bytes())
    return target / "release/examples/run_config", src / "python"


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


def rss(exe: Path, work: Path) -> None:
    for completions in (0, 10_000):
        files = {}
        for d in (20, 200, 2000):
            cfg = partitioned(1, 10_000, d * S)
            cfg["max_completions"] = completions
            files[d] = work / f"t10k_{d}_{completions}.json"
            files[d].write_text(json.dumps(cfg))
        peak: dict[int, list[float]] = {d: [] for d in files}
        for _ in range(ROUNDS):
            for d, f in files.items():
                peak[d].append(measure(exe, str(f))[1] / 1024)
        med = {d: statistics.median(v) for d, v in peak.items()}
        print(json.dumps({"figure": "peak RSS, 10,000 RM tasks on one CPU",
                          "max_completions": completions,
                          "rss_mb": {f"{d} s": spread(v) for d, v in peak.items()},
                          "ratio_2000s_over_20s": med[2000] / med[20]}), flush=True)


def tracing(exe: Path, work: Path) -> None:
    cfg = work / "rm10.json"
    tasks = random_rm_taskset(random.Random(2026), 10, min_period_ms=10, max_period_ms=100)
    rm = rm_config(tasks, 200 * S)
    rm["trace"] = {"max_events": 2_000_000}  # the traced runs are never cut
    cfg.write_text(json.dumps(rm))
    # Two cases per format: the trace written over the previous run's file
    # (`Trace::write_file` writes it in place) and to a new file (unlinked
    # before each run): ext4 charges the two differently, so both are shown.
    cases = [(fmt, new) for fmt in ("json", "perfetto") for new in (False, True)]
    cpu: dict[object, list[float]] = {"off": [], **{c: [] for c in cases}}
    lines = {}
    for fmt in ("json", "perfetto"):  # the previous run's file exists from the start
        measure(exe, str(cfg), str(work / f"trace.{fmt}"), fmt)
    for _ in range(ROUNDS):
        cpu["off"].append(measure(exe, str(cfg))[0])
        for fmt, new in cases:
            path = work / (f"new.{fmt}" if new else f"trace.{fmt}")
            if new:
                path.unlink(missing_ok=True)
            t, _, out = measure(exe, str(cfg), str(path), fmt)
            cpu[(fmt, new)].append(t)
            lines[fmt] = out.strip()
    for fmt, new in cases:
        ratios = [a / b for a, b in zip(cpu[(fmt, new)], cpu["off"], strict=True)]
        events = int(lines[fmt].split("trace ")[1].split(" events")[0])
        size = (work / f"trace.{fmt}").stat().st_size
        mem = float(lines[fmt].split(", ")[-1].split(" B")[0])
        print(json.dumps({"figure": "tracing on / off, 10 RM tasks, 200 s",
                          "format": fmt,
                          "written_to": "a new file" if new else "the previous run's file",
                          "cpu_ratio": spread(ratios),
                          "trace_events": events, "file_bytes_per_event": size / events,
                          "memory_bytes_per_event": mem}), flush=True)


def pycall(cfg_file: str) -> None:
    """Child process of ``python_call``: ``WARM`` warm-up calls (the first
    with its metrics and configuration read, as a process that ran
    before), ``CALLS`` timed calls
    back to back, then the first reads of ``metrics`` and ``config`` of a
    third call; prints the CPU times (s) as JSON."""
    from irqlab.sim import simulate

    cfg = partitioned(64, 10, 20 * S)  # built in this process, as a caller builds it
    if json.loads(Path(cfg_file).read_text()) != cfg:
        raise RuntimeError("the Rust and Python sides would run different models")
    for i in range(WARM):  # warm: imports, the allocator's arenas
        warm = simulate(cfg)
        if i == 0:
            warm.metrics, warm.config  # noqa: B018
        del warm
    call = []
    for _ in range(CALLS):  # back to back, as the Rust runs
        t0 = time.thread_time()
        r = simulate(cfg)
        call.append(time.thread_time() - t0)
        del r
    r = simulate(cfg)
    t0 = time.thread_time()
    r.metrics  # noqa: B018 -- the first read builds the dicts
    t1 = time.thread_time()
    r.config  # noqa: B018
    t2 = time.thread_time()
    print(json.dumps({"call": call, "metrics": t1 - t0, "config": t2 - t1}))


def python_call(exe: Path, work: Path) -> None:
    f64 = work / "rm64.json"
    f64.write_text(json.dumps(partitioned(64, 10, 20 * S)))
    revs = {"head": (exe, ROOT / "python")}
    if BASE:
        revs["base"] = base_build(BASE)
    times = {r: {"rust": [], "parse": [], "call": [], "metrics": [], "config": []}
             for r in revs}
    for i in range(max(ROUNDS, 7)):
        for rev in (list(revs) if i % 2 == 0 else list(reversed(revs))):
            rexe, pydir = revs[rev]
            t = times[rev]
            lines = measure(rexe, "--repeat", str(WARM + CALLS), str(f64))[2].strip().splitlines()
            for line in lines[WARM:]:  # the first runs of a process are slower
                t["rust"].append(float(line.split("; cpu ")[1].split(" s")[0]))
                t["parse"].append(float(line.split("; parse ")[1].split(" s")[0]))
            env = {**os.environ, "PYTHONPATH": str(pydir)}
            out = subprocess.run([sys.executable, __file__, "_pycall", str(f64)], env=env,
                                 check=True, capture_output=True, text=True).stdout
            got = json.loads(out)
            t["call"] += got["call"]
            t["metrics"].append(got["metrics"])
            t["config"].append(got["config"])
    for rev, t in times.items():
        with_metrics = [c + m for c, m in zip(t["call"][::CALLS], t["metrics"], strict=True)]
        rust_med = statistics.median(t["rust"])
        print(json.dumps({"figure": "simulate() from Python / Rust (parse + simulate), "
                                    "64 CPUs x 10 tasks, CPU time of the calling thread",
                          "revision": rev if rev == "head" else BASE,
                          "rust_s": spread(t["rust"]), "rust_parse_s": spread(t["parse"]),
                          "python_call_s": spread(t["call"]),
                          "python_first_metrics_read_s": spread(t["metrics"]),
                          "python_first_config_read_s": spread(t["config"]),
                          "ratio_call_median": statistics.median(t["call"]) / rust_med,
                          "ratio_call_best": min(t["call"]) / min(t["rust"]),
                          "ratio_call_and_metrics_median":
                              statistics.median(with_metrics) / rust_med,
                          "ratio_call_and_metrics_best": min(with_metrics) / min(t["rust"])}),
              flush=True)


FIGURES = {"rss": rss, "tracing": tracing, "python": python_call}


def main() -> int:
    if sys.argv[1:2] == ["_pycall"]:
        pycall(sys.argv[2])
        return 0
    names = sys.argv[1:] or list(FIGURES)
    if any(n not in FIGURES for n in names):
        print(f"usage: bench_memory.py [{' | '.join(FIGURES)}]...", file=sys.stderr)
        return 2
    exe = runner()
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            FIGURES[name](exe, Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
