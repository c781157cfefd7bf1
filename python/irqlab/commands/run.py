"""``irqlab run MODEL.yaml [--duration D] [--seed N] [--out DIR] [--check]``: real threads.

A system model (the file ``irqlab analyze`` and ``irqlab simulate`` take)
runs on real threads (docs/runtime.md, "irqlab run MODEL.yaml"): per task
jobs, misses and response times, per device what was sent, handled and
dropped and the read latency, per server CPU share, the notes on what the
real machine supplies itself. On the quest paths irqlab-rt's own report
follows: a cyclictest-style summary, a table per event path (I/O VCPUs and
upcalls), the kernel upcalls' counters, and beside each supervisor's timer
lateness what the CPU's platform probe (an independent SCHED_FIFO 99
sampler) saw. Written to ``DIR/run.json`` (and ``DIR/histogram.txt``,
cyclictest ``--histfile`` format, on the quest paths). What cannot run for
real is refused with the field, the value and the reason. SIGINT, SIGTERM
and SIGHUP stop the run early and still report.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from irqlab.model import parse_duration


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run a system model on real Linux threads")
    p.add_argument("model", help="model file, or a shipped one by name")
    p.add_argument("--duration", default=None, help="override simulation.duration, e.g. 2s")
    p.add_argument("--seed", type=int, default=None, help="override simulation.seed")
    p.add_argument("--out", type=Path, default=Path("out/run"), help="output directory")
    p.add_argument("--check", action="store_true",
                   help="only load and lower the model (start nothing)")
    p.set_defaults(func=run)


def _us(v: float | int | None) -> str:
    return "-" if v is None else f"{v / 1000:.1f}"


def _platform_lines(rep: dict) -> list[str]:
    """Per CPU: the supervisor's timer lateness beside the platform probe's."""
    lines = []
    for s in rep["supervisors"]:
        t = s["timer_latency"]
        line = (f"  cpu {s['cpu']}: supervisor timer late p99 {_us(t['p99'])} us, "
                f"max {_us(t['max'])} us")
        p = s.get("probe")
        if p is not None:
            lt = p["lateness"]
            line += (f"; platform probe ({'FIFO 99' if p['fifo'] else 'not FIFO'}, every "
                     f"{_us(p['interval_ns'])} us) late p99 {_us(lt['p99'])} us, max "
                     f"{_us(lt['max'])} us, {p['stalls']} stalls >= "
                     f"{_us(p['stall_threshold_ns'])} us ({_us(p['stall_time_ns'])} us in all)")
        lines.append(line)
    return lines


def duration_and_seed(args: argparse.Namespace) -> int | None:
    """``--duration`` in ns (None: the model's) after checking it and
    ``--seed`` (used by ``run`` and ``compare``)."""
    duration = None
    if args.duration is not None:
        try:
            duration = parse_duration(args.duration)
        except ValueError as e:
            raise ValueError(f"--duration: {e}") from None
    if args.seed is not None and args.seed < 0:
        raise ValueError(f"--seed: {args.seed} must be non-negative")
    return duration


def run(args: argparse.Namespace) -> int:
    """``irqlab run MODEL.yaml``."""
    from irqlab import runtime

    duration = duration_and_seed(args)
    try:
        if args.check:
            notes = runtime.check_model(args.model)
            print(f"{args.model}: valid, can run on real threads")
            for n in notes:
                print(f"  note: {n}")
            return 0
        out = runtime.run(args.model, duration, args.seed)
    except runtime.RuntimeUnavailable as e:
        raise ValueError(f"the runtime cannot run here: {e}") from None
    r = out.result
    print(f"{r['model']}: {r['path']} path, {r['duration_ns'] / 1e9:.2f} s, mode {r['mode']}, "
          f"CPU {', '.join(str(c) for c in r['cpus'])}"
          + (" (interrupted)" if r["interrupted"] else ""))
    for w in r["warnings"]:
        print(f"  warning: {w}")
    for t in r["tasks"]:
        resp = t["response"]
        print(f"  task {t['name']:<12} {t['released']:>6} released {t['completed']:>6} finished "
              f"{t['deadline_misses']:>5} misses  response p50 {_us(resp['p50_ns'])} us, "
              f"p99 {_us(resp['p99_ns'])} us, max {_us(resp['max_ns'])} us")
    for d in r["devices"]:
        lat = d["latency"]
        print(f"  device {d['name']:<10} sent {d['sent']:>7} handled {d['handled']:>7} dropped "
              f"{d['dropped']:>7}  read latency p50 {_us(lat['p50_ns'])} us, "
              f"max {_us(lat['max_ns'])} us, {d['throughput_bytes_per_s']:,.0f} B/s")
    for s in r["servers"]:
        print(f"  server {s['name']:<10} ({s['kind']}) {100 * s['share_fraction']:.2f} % of "
              f"CPU {s['cpu']}")
    print(f"  largest release delay {_us(r['max_release_delay_ns'])} us (host timer stalls)")
    for n in r["notes"]:
        print(f"  note: {n}")
    if out.report is not None:
        _runtime_report(out.report, out.summary)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "run.json").write_text(json.dumps(r, indent=1))
    wrote = [args.out / "run.json"]
    if out.histogram:
        (args.out / "histogram.txt").write_text(out.histogram)
        wrote.append(args.out / "histogram.txt")
    print(f"wrote {' and '.join(str(w) for w in wrote)}")
    return 0


def _runtime_report(rep: dict, summary: str) -> None:
    """irqlab-rt's own report: the summary, the event paths, the kernel
    upcalls and the platform probe."""
    print("irqlab-rt:")
    print(summary, end="")
    print(f"  {'event path':<14} {'path':<7} {'events':>9} {'items':>9} "
          f"{'drops':>9} {'panics':>6} {'p50 us':>9} {'p99 us':>9} {'max us':>9}")
    for e in rep["events"]:
        h = e["handling"]
        print(f"  {e['name']:<14} {e['path']:<7} {e['events']:>9} {e['items']:>9} "
              f"{e['kernel_drops']:>9} {e['panics']:>6} {_us(h['p50']):>9} {_us(h['p99']):>9} "
              f"{_us(h['max']):>9}")
        for c in e["closed"]:
            print(f"    closed: {c}")
    for k in rep.get("kernel_upcalls", []):
        s, h = k["stats"], k["handling"]
        if s is None:
            print(f"  kernel upcall {k['name']}: not loaded ({k['fallback']})")
            continue
        share = s["busy_ns"] / max(rep["duration_ns"], 1) * 100
        print(f"  kernel upcall {k['name']} ({k['hook']}, {k['handler']}): seen {s['seen']}, "
              f"handled in the kernel {s['handled']}, deferred to the class {s['deferred']}, "
              f"filtered {s['filtered']}, orphaned {s['orphaned']}; handler {share:.2f} % of "
              f"the CPU, p50 {_us(h['p50'])} us, max {_us(h['max'])} us; budget exhausted in "
              f"{s['exhausted_periods']} periods")
    for line in _platform_lines(rep):
        print(line)
