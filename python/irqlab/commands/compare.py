"""``irqlab compare MODEL.yaml [--duration D] [--seed N] [--out DIR] [--report]``:
analysis bound | simulation | real run of one model, side by side.

Prints one table (per task: jobs, misses, response p50/p99/max; per device:
read latency, throughput, drops; per server: CPU share), the tolerance it
held the real run to, and every flag (a value above a safe bound, naming the
host's timer stalls; a sim-vs-real gap beyond the tolerance). Writes
``DIR/compare.json``, ``DIR/simulation/`` and ``DIR/real/`` (run
directories), one response-time CDF per task (``DIR/cdf-TASK.png``) and,
with ``--report``, ``DIR/report.html`` through ``irqlab report``.

``--guest`` compares with the model run in the irqlab kernel under QEMU
instead (``irqlab guest``, emulated time; docs/kernel.md): ``DIR/guest/``
and ``DIR/simulation/``, the same rows and tolerance.

Exit status: 0 without flags, 1 with flags (or, with ``--guest``, a failed
kernel check), 2 for bad input or a model that cannot run for real (the
reason names the field and value).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from irqlab.commands.run import duration_and_seed

if TYPE_CHECKING:
    from irqlab.compare import Comparison


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="analysis bound | simulation | real run of a model",
                       epilog="exit status: 0 no flags; 1 flags (printed); 2 bad input")
    p.add_argument("model", help="model file (YAML), or a shipped model by name")
    p.add_argument("--duration", default=None, help="override simulation.duration, e.g. 2s")
    p.add_argument("--seed", type=int, default=None, help="override simulation.seed")
    p.add_argument("--out", type=Path, default=Path("out/compare"), help="output directory")
    p.add_argument("--report", action="store_true",
                   help="also write DIR/report.html (simulation next to the real run)")
    p.add_argument("--guest", action="store_true",
                   help="compare with the model run in the irqlab kernel under QEMU "
                        "(irqlab guest; emulated time) instead of real threads")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from irqlab import runtime
    from irqlab.compare import compare

    if args.guest:
        from irqlab.commands.guest import guest_and_simulation

        if args.seed is not None:
            raise ValueError("--seed: the guest has no random arrivals (--guest takes none)")
        rc, flags = guest_and_simulation(args.model, args.duration, args.out,
                                         report=args.report)
        print(f"{len(flags)} flag(s)" + (":" if flags else ""))
        for f in flags:
            print(f"  - {f}")
        return 1 if flags or rc else 0
    duration = duration_and_seed(args)
    try:
        c = compare(args.model, duration_ns=duration, seed=args.seed, out=args.out)
    except runtime.RuntimeUnavailable as e:
        raise ValueError(f"the runtime cannot run here: {e}") from None
    print_comparison(c)
    if args.report:
        from irqlab.report import write_report

        assert c.sim_dir is not None
        p = write_report([c.sim_dir, args.out / "real"], args.out / "report.html",
                         names=["simulation", "real run"])
        print(f"report: {p}")
    print(f"wrote {args.out / 'compare.json'}")
    return 1 if c.flags else 0


def print_comparison(c: Comparison) -> None:
    """The header, the table, the tolerance, the notes and the flags."""
    real = c.real
    cpus = ", ".join(str(x) for x in real["cpus"])
    print(f"{c.model}: {c.path} path, {c.duration_ns / 1e9:.2f} s, seed {c.seed}; real run in "
          f"{real['mode']} mode on CPU {cpus}"
          + (" (interrupted)" if real["interrupted"] else ""))
    print(c.table())
    print(c.tolerance.describe())
    for n in c.notes:
        print(f"  note: {n}")
    for w in real.get("warnings", []):
        print(f"  warning: {w}")
    flags = c.flags
    print(f"{len(flags)} flag(s)" + (":" if flags else ""))
    for f in flags:
        print(f"  - {f}")
