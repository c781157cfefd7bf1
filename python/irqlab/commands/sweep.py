"""``irqlab sweep GRID.yaml --out DIR``: a parameter sweep (docs/sweep.md).

Runs every point of the grid (model fields x seeds) with ``simulate``,
``analyze`` or both, on local processes (default: all cores) or a Dask
cluster (``--dask tcp://host:port``, ``--dask-local N``); writes
``DIR/results.parquet`` and ``DIR/results.csv`` with one row per point.
Points already in ``DIR/points.jsonl`` are skipped (resume); Ctrl-C keeps
the finished points and exits with 130.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sweep", help="parameter sweep over a grid of models and seeds")
    p.add_argument("grid", type=Path, help="grid file (YAML; docs/sweep.md)")
    p.add_argument("--out", type=Path, required=True, help="output directory")
    p.add_argument("--workers", type=int, default=None,
                   help="local worker processes (default: all cores)")
    p.add_argument("--dask", metavar="ADDRESS", default=None,
                   help="run on the Dask scheduler at ADDRESS (tcp://host:port)")
    p.add_argument("--dask-local", metavar="N", type=int, default=None,
                   help="run on a Dask LocalCluster of N worker processes")
    p.add_argument("--chunk", type=int, default=None, help="points per task (default: auto)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress line with ETA (default: when stderr is a terminal)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from irqlab.sweep import DaskBackend, LocalBackend, load_grid, run_sweep  # lazy: CLI start-up

    for name in ("workers", "dask_local", "chunk"):
        v = getattr(args, name)
        if v is not None and v <= 0:
            raise ValueError(f"--{name.replace('_', '-')}: {v} must be positive")
    if args.dask and args.dask_local:
        raise ValueError("--dask and --dask-local: choose one")
    grid = load_grid(args.grid)
    backend: Any
    if args.dask or args.dask_local:
        backend = DaskBackend(args.dask, args.dask_local)
    else:
        backend = LocalBackend(args.workers)
    progress = sys.stderr.isatty() if args.progress is None else args.progress
    print(f"{args.grid}: {grid.size} points ({grid.mode}; "
          + " x ".join([f"{len(v)} {k}" for k, v in grid.vary.items()] +
                       [f"{len(grid.seeds)} seeds"]) + ")")
    r = run_sweep(grid, args.out, backend=backend, progress=progress, chunk=args.chunk)
    print(f"{r.points} of {grid.size} points done: {r.computed} computed now, {r.reused} "
          f"reused" + (f", {r.errors} invalid (see the error column)" if r.errors else ""))
    for f in r.files:
        print(f"  {f}")
    if r.interrupted:
        print("interrupted: the finished points are kept; run again to resume", file=sys.stderr)
        return 130
    return 0
