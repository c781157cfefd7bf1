"""``irqlab simulate MODEL.yaml --out DIR [--seed N] [--duration D]``.

Writes ``DIR/metrics.json`` (fields: docs/metrics.md), with ``--trace``
``DIR/trace.json`` (trace-event JSON) or, with ``--trace-format perfetto``,
``DIR/trace.pftrace`` (Perfetto's protobuf format; both streamed from the
simulator, not built in memory), and PNG plots (``--no-plots`` skips them; their cost is bounded
for large models); prints a short summary, drops next to handled events. Progress
(simulated time, speed, events/s, ETA) on a terminal or with ``--progress``; Ctrl-C
stops cleanly: the outputs cover the time reached (``partial``), exit 130.
The same model and seed give byte-identical ``metrics.json``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from irqlab.model import load, parse_duration
from irqlab.sim import SimulationInterrupted, simulate, write_outputs


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("simulate", help="simulate a system model")
    p.add_argument("model", type=Path, help="model file (YAML)")
    p.add_argument("--out", type=Path, required=True, help="output directory")
    p.add_argument("--seed", type=int, default=None, help="override simulation.seed")
    p.add_argument("--duration", default=None, help="override simulation.duration, e.g. 2s")
    p.add_argument("--trace", action="store_true", help="record a Perfetto trace")
    p.add_argument("--trace-format", choices=("json", "perfetto"), default="json",
                   help="trace file format: json (trace.json) or perfetto (protobuf, "
                        "trace.pftrace; smaller, for large traces)")
    p.add_argument("--trace-max-events", type=int, default=None, metavar="N",
                   help="trace events recorded at most (default: the model's "
                        "simulation.trace_max_events, else 1000000); past it the "
                        "trace is cut and a warning says so")
    p.add_argument("--no-plots", action="store_true", help="write no PNG plots")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="simulated time, speed, events/s and ETA on stderr (default: on a "
                        "terminal)")
    p.add_argument("--report", action="store_true",
                   help="also write DIR/report.html (irqlab report; implies --trace)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.out.exists() and not args.out.is_dir():
        raise ValueError(f"--out: {args.out} exists and is not a directory")
    m = load(args.model)
    seed = duration = max_events = None
    if args.seed is not None:
        if args.seed < 0:
            raise ValueError(f"--seed: {args.seed} must be a non-negative integer")
        if args.seed >= 1 << 64:
            raise ValueError(f"--seed: {args.seed} must be below 2**64")
        seed = args.seed
    if args.duration is not None:
        try:
            duration = parse_duration(args.duration)
        except ValueError as e:
            raise ValueError(f"--duration: {e}") from None
    if args.trace_max_events is not None:
        if args.trace_max_events < 1:
            raise ValueError(f"--trace-max-events: {args.trace_max_events} must be positive")
        max_events = args.trace_max_events
    progress = sys.stderr.isatty() if args.progress is None else args.progress
    interrupted = False
    try:
        trace_file = None
        if args.trace or args.report:
            args.out.mkdir(parents=True, exist_ok=True)
            name = "trace.pftrace" if args.trace_format == "perfetto" else "trace.json"
            trace_file = args.out / name
        # the model as loaded, run from its resolved system in Rust: the
        # YAML is parsed once, and nothing crosses to Python but the results
        result = simulate(m, seed=seed, duration_ns=duration, progress=progress,
                          trace_file=trace_file, trace_format=args.trace_format,
                          trace_max_events=max_events)
    except SimulationInterrupted as e:
        result, interrupted = e.result, True
    if result.metrics.get("trace_truncated"):
        limit = (result.config or {}).get("trace", {}).get("max_events")
        print(f"warning: the trace reached its limit of {limit} events and was cut; "
              "raise --trace-max-events or simulation.trace_max_events", file=sys.stderr)
    cut = [t for t in result.metrics["tasks"] if t["completed"] > len(t["completions_ns"])]
    if cut:
        limit = (result.config or {}).get("max_completions")
        print(f"warning: completions_ns keeps the first {limit} completion times per task; "
              f"{len(cut)} task(s) finished more (completed counts them all); raise "
              "simulation.max_completions, or keep every job with simulation.records",
              file=sys.stderr)
    files = write_outputs(result, args.out, title=args.model.stem, plots=not args.no_plots)
    if args.report:
        from irqlab.report import write_report

        files.append(write_report([args.out], args.out / "report.html", names=[args.model.stem]))
    summary(result.metrics)
    for w in m.warnings:
        print(f"  warning: {w}")
    print("outputs:")
    for f in files:
        print(f"  {f}")
    if interrupted:
        reached = result.metrics["duration_ns"] / 1e9
        print(f"interrupted: metrics.json covers the first {reached:g} s (marked partial)",
              file=sys.stderr)
        return 130
    return 0


def us(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1e3:.1f}us"


#: At most this many tasks in the summary: those with the most misses,
#: then in model order; a line counts the rest (metrics.json has them all).
SUMMARY_ITEMS = 20


def summary(met: dict[str, Any]) -> None:
    """Print the run's summary from its metrics."""
    part = " (partial: stopped early)" if met.get("partial") else ""
    print(f"simulated {met['duration_ns'] / 1e9:g} s{part} ({met['events']} events, "
          f"seed {met['seed']})")
    tasks = met["tasks"]
    if len(tasks) > SUMMARY_ITEMS:
        # the tasks that missed first (most misses first), then model order
        worst = sorted(range(len(tasks)), key=lambda i: (-tasks[i]["deadline_misses"], i))
        tasks = [tasks[i] for i in sorted(worst[:SUMMARY_ITEMS])]
    for t in tasks:
        r = t["response"]
        mean = us(r["mean_ns"])
        unfinished = t["unfinished_past_deadline"]
        late = f" ({unfinished} never finished)" if unfinished else ""
        print(f"  task {t['name']}: {t['released']} released, {t['completed']} finished, "
              f"{t['deadline_misses']} misses{late}, mean response {mean}")
    if len(tasks) < len(met["tasks"]):
        every = met["tasks"]
        missing = sum(1 for t in every if t["deadline_misses"]) - sum(
            1 for t in tasks if t["deadline_misses"])
        print(f"  ... {len(every) - len(tasks)} more tasks ({missing} of them with misses; "
              f"{sum(t['deadline_misses'] for t in every)} misses in all): see metrics.json")
    for s in met["servers"]:
        r = s["response"]
        if met["path"] != "hypervisor" or r is None or not r["count"]:
            continue
        misses = f", {s['budget_misses']} periods short of budget" if s["budget_misses"] else ""
        print(f"  VCPU {s['name']}: {s['share_fraction'] * 100:.1f} % of cpu {s['cpu']}, "
              f"response (VINT Eq. 3) max {us(r['max_ns'])} over {r['count']} releases{misses}")
    for d in met["devices"]:
        if met["path"] == "hypervisor":
            print(f"  physical interrupt {d['name']}: {d['interrupts']} interrupts")
            continue
        lat = d["latency"]
        mean = f", mean latency {us(lat['mean_ns'])}" if lat["mean_ns"] is not None else ""
        print(f"  device {d['name']}: {d['handled']} handled, {d['dropped']} dropped, "
              f"{d['throughput_bytes_per_s']:.0f} B/s{mean}")
    for v in met["virqs"]:
        h = v["handling"]
        worst = f", handling mean {us(h['mean_ns'])} max {us(h['max_ns'])}" \
            if h["max_ns"] is not None else ""
        print(f"  virtual interrupt {v['name']}: {v['arrivals']} arrivals, {v['handled']} handled, "
              f"{v['serviceable']} serviceable, {v['delayed_injections']} delayed{worst}")
