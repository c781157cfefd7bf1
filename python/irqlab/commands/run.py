"""``irqlab run MODEL.yaml [--duration D] [--seed N] [--out DIR] [--check]``: real threads.

A system model (the file ``irqlab analyze`` and ``irqlab simulate`` take,
with ``machine:``) runs on real threads (docs/runtime.md, "Running a
model"): per task jobs, misses and response times, per device read
latency, throughput and drops, per server CPU share, the notes on what the
real machine supplies itself, written to ``DIR/run.json``. What cannot run
for real is refused with the field, the value and the reason.

A runtime scenario (``runtime:``/``sources:``, the lower-level format with
upcalls and kernel upcalls) runs with ``irqlab-rt`` (supervisor per CPU, Main and
I/O VCPUs, fd-bound classes, upcalls), prints a cyclictest-style summary
and a table per event path and task, and writes ``DIR/run.json`` and
``DIR/histogram.txt`` (cyclictest ``--histfile`` format). SIGINT, SIGTERM
and SIGHUP stop the run early and still report. Beside each supervisor's
timer lateness it prints what the CPU's platform probe (an independent
SCHED_FIFO 99 sampler) saw, and per task how many misses happened during a
stall the probe saw (the platform's, not the runtime's).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from irqlab.model import parse_duration


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run a model (or runtime scenario) on real Linux threads")
    p.add_argument("scenario", help="model or runtime scenario file, or a shipped one by name")
    p.add_argument("--duration", default=None,
                   help="override simulation.duration (runtime.duration), e.g. 2s")
    p.add_argument("--seed", type=int, default=None, help="a model's seed (arrival processes)")
    p.add_argument("--out", type=Path, default=Path("out/run"), help="output directory")
    p.add_argument("--check", action="store_true",
                   help="only validate the scenario (build the runtime, start nothing)")
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


def run(args: argparse.Namespace) -> int:
    from irqlab import runtime

    duration = None
    if args.duration is not None:
        try:
            duration = parse_duration(args.duration)
        except ValueError as e:
            raise ValueError(f"--duration: {e}") from None
    if _is_model(args.scenario):
        return run_model(args, duration)
    if args.seed is not None:
        raise ValueError(f"--seed: {args.seed}: a runtime scenario has no seed (a model does)")
    if args.check:
        try:
            path = runtime.check(args.scenario)
        except runtime.RuntimeUnavailable as e:
            raise ValueError(f"the runtime cannot run here: {e}") from None
        print(f"{path}: valid")
        return 0
    try:
        out = runtime.run(args.scenario, duration)
    except runtime.RuntimeUnavailable as e:
        raise ValueError(f"the runtime cannot run here: {e}") from None
    rep = out.report
    print(f"{out.result['scenario']}: {rep['duration_ns'] / 1e9:.2f} s, mode {rep['mode']}"
          + (" (interrupted)" if out.result["interrupted"] else ""))
    for w in rep["warnings"]:
        print(f"  warning: {w}")
    print(out.summary, end="")
    print(f"  {'event path':<14} {'path':<7} {'sent':>9} {'events':>9} {'items':>9} "
          f"{'drops':>9} {'panics':>6} {'p50 us':>9} {'p99 us':>9} {'max us':>9}")
    for e in rep["events"]:
        sent = out.result["sent"].get(e["name"], "-")
        h = e["handling"]
        print(f"  {e['name']:<14} {e['path']:<7} {sent!s:>9} {e['events']:>9} {e['items']:>9} "
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
    for t in rep["tasks"]:
        w = t["wake"]
        if t["jobs"] is None:
            if w["count"]:
                print(f"  task {t['name']}: woken {w['count']} times, wake latency from arrival "
                      f"p50 {_us(w['p50'])} us, p99 {_us(w['p99'])} us, max {_us(w['max'])} us")
            continue
        r = t["response"]
        unfinished = t["unfinished_past_deadline"]
        late = f" ({unfinished} never finished)" if unfinished else ""
        platform = t.get("misses_platform")
        if t["deadline_misses"] and platform is not None:
            late += f", {platform} during platform stalls the probe saw"
        if t.get("skipped_jobs"):
            late += f", {t['skipped_jobs']} releases skipped after stalls"
        print(f"  task {t['name']}: {t['jobs']} jobs finished, {t['deadline_misses']} deadline "
              f"misses{late}, response p50 {_us(r['p50'])} us, max {_us(r['max'])} us")
    for s in rep["servers"]:
        print(f"  server {s['name']} ({s['kind']}): {s['share'] * 100:.2f} % of CPU {s['cpu']}")
    for line in _platform_lines(rep):
        print(line)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "run.json").write_text(json.dumps(out.result, indent=1))
    (args.out / "histogram.txt").write_text(out.histogram)
    print(f"wrote {args.out / 'run.json'} and {args.out / 'histogram.txt'}")
    return 0


def _is_model(name: str) -> bool:
    """A model file, or a shipped model that is not a runtime scenario."""
    from irqlab import runtime
    from irqlab.model import scenarios

    p = Path(name)
    if p.exists():
        return runtime.is_model(p)
    return name not in runtime.scenarios() and name in scenarios()


def run_model(args: argparse.Namespace, duration: int | None) -> int:
    """``irqlab run MODEL.yaml``."""
    from irqlab import runtime

    if args.seed is not None and args.seed < 0:
        raise ValueError(f"--seed: {args.seed} must be non-negative")
    if args.check:
        notes = runtime.check_model(args.scenario)
        print(f"{args.scenario}: can run on real threads")
        for n in notes:
            print(f"  note: {n}")
        return 0
    try:
        r = runtime.run_model(args.scenario, duration, args.seed)
    except runtime.RuntimeUnavailable as e:
        raise ValueError(f"the runtime cannot run here: {e}") from None
    print(f"{r['model']}: {r['path']} path, {r['duration_ns'] / 1e9:.2f} s, mode {r['mode']}, "
          f"CPU {', '.join(str(c) for c in r['cpus'])}"
          + (" (interrupted)" if r["interrupted"] else ""))
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
    for w in r["warnings"]:
        print(f"  warning: {w}")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "run.json").write_text(json.dumps(r, indent=1))
    print(f"wrote {args.out / 'run.json'}")
    return 0
