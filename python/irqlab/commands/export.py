"""``irqlab export rt-app MODEL.yaml [-o workload.json]``: the model's
workload for the ecosystem's tools (irqlab.export; docs/model.md, "Export
to rt-app"). What rt-app cannot replay is refused with the field, the value
and the reason (exit 2).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from irqlab.cli import UsageError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="export a model's workload (rt-app JSON)")
    p.add_argument("format", choices=["rt-app"], help="target format")
    p.add_argument("model", type=Path, help="model file (YAML)")
    p.add_argument("-o", "--out", type=Path, default=Path("workload.json"),
                   help="file to write (default workload.json)")
    p.add_argument("--duration", type=int, default=None,
                   help="rt-app run length in seconds (default: the model's duration)")
    p.add_argument("--fifo", action="store_true",
                   help="SCHED_FIFO (rate-monotonic) for every task, no SCHED_DEADLINE")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from irqlab.export import rtapp
    from irqlab.model import load

    if args.duration is not None and args.duration < 1:
        raise UsageError(f"--duration: {args.duration}: must be at least 1 (seconds)")
    w = rtapp(load(args.model), duration_s=args.duration, fifo=args.fifo)
    args.out.write_text(json.dumps(w, indent=2) + "\n")
    for name, t in w["tasks"].items():
        sched = (f"{t['policy']} {t['priority']}" if "priority" in t
                 else f"{t['policy']} {t['dl-runtime']}/{t['dl-period']} us")
        print(f"  {name:<24}{sched:<28}cpus {t.get('cpus', 'any')}")
    print(f"wrote {args.out} ({len(w['tasks'])} threads, {w['global']['duration']} s)")
    return 0
