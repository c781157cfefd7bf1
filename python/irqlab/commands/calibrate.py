"""``irqlab calibrate [--out costs.yaml] [--model M.yaml]``: measure this
machine into a ``costs:`` section (irqlab.calibrate; docs/model.md).

Prints one line per measured distribution (p50/p99/max in us) and every
note (what was not measured, and why); writes the costs file (only the
``costs:`` key, which ``irqlab check`` accepts), and with ``--model`` also
that model with the section appended (``M.calibrated.yaml`` unless
``--model-out`` names it), ready for ``simulate`` and ``analyze``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from irqlab.cli import UsageError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("calibrate", help="measure this machine into a costs: section")
    p.add_argument("--out", type=Path, default=Path("costs.yaml"), help="costs file to write")
    p.add_argument("--model", type=Path, default=None,
                   help="also write this model with the measured costs: section")
    p.add_argument("--model-out", type=Path, default=None,
                   help="where to write the calibrated model (default MODEL.calibrated.yaml)")
    p.add_argument("--samples", type=int, default=2000,
                   help="samples per micro-measurement (default 2000)")
    p.add_argument("--runs", type=int, default=5, help="runtime runs (default 5 x 200 ms)")
    p.add_argument("--packets", type=int, default=3000,
                   help="UDP packets sent on loopback while tracing (default 3000)")
    p.add_argument("--no-trace", action="store_true",
                   help="do not trace the kernel (no per-packet hard-IRQ/softirq costs)")
    p.set_defaults(func=run)


def _line(name: str, d: dict[str, Any]) -> str:
    from irqlab.calibrate import stat_ns

    us = [f"{stat_ns(d, s) / 1000:9.2f}" for s in ("p50", "p99", "max")]
    return f"  {name:<28}{d['samples']:>8}{''.join(us)}"


def run(args: argparse.Namespace) -> int:
    from irqlab import calibrate as cal

    for name in ("samples", "runs", "packets"):
        if getattr(args, name) < 1:
            raise UsageError(f"--{name}: {getattr(args, name)}: must be at least 1")
    model_text = None
    if args.model is not None:
        from irqlab.model import MAX_MODEL_BYTES, read_input

        model_text = read_input(args.model, MAX_MODEL_BYTES)
        # refuse a bad model before measuring
        if json.loads(cal._model.load(model_text)[0]).get("costs") is not None:
            raise UsageError(f"{args.model}: already has a costs: section (remove it first)")
    costs, notes = cal.calibrate(args.samples, args.runs, packets=args.packets,
                                 trace=not args.no_trace)
    o = costs["origin"]
    print(f"calibrated {o['host']} ({o['kernel']}, {o['cpus']} CPUs)")
    print(f"  {'measurement':<28}{'samples':>8}{'p50 us':>9}{'p99 us':>9}{'max us':>9}")
    for name in cal.HOST_FIELDS:
        if name in costs:
            print(_line(name, costs[name]))
    k = costs["kernel"]
    for path in ("loopback", "nic"):
        if path in k:
            for part in ("hardirq", "softirq"):
                if part in k[path]:
                    print(_line(f"kernel.{path}.{part}/pkt", k[path][part]))
    if "ksoftirqd_wakeup" in k:
        print(_line("kernel.ksoftirqd_wakeup", k["ksoftirqd_wakeup"]))
    print(f"  tracing: {k['tracing']}")
    for n in notes:
        print(f"  note: {n}")
    text = cal.dump(costs)
    args.out.write_text(text)
    print(f"wrote {args.out}")
    if model_text is not None:
        out = args.model_out or args.model.with_suffix(".calibrated.yaml")
        body = text.split("\n", 1)[1]  # without the header comment
        full = model_text.rstrip("\n") + "\n" + body
        cal._model.load(full)
        out.write_text(full)
        print(f"wrote {out}")
    return 0
