"""``irqlab reproduce``: one paper figure/table per command (DESIGN.md §10).

Contract: ``--list`` prints one experiment name per line. ``reproduce NAME``
prints a table of paper vs irqlab, writes figures to ``--out`` and, with
``--json FILE``, ``{"experiment", "checks": [{claim, paper, irqlab,
tolerance, holds}], ...}``. Exit code 0 even when a check does not hold.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from irqlab import experiments


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("reproduce", help="reproduce one paper figure or table")
    p.add_argument("name", nargs="?", help="experiment name (see --list)")
    p.add_argument("--list", action="store_true", help="list experiment names")
    p.add_argument("--out", type=Path, default=None, help="output directory (default out/NAME)")
    p.add_argument("--json", type=Path, default=None, help="write the checks as JSON here")
    p.add_argument("--quick", action="store_true", help="reduced run (fewer samples)")
    p.set_defaults(func=run)


def format_checks(result: experiments.Result) -> str:
    rows = [("claim", "paper", "irqlab", "tolerance", "holds")]
    for c in result.checks:
        holds = "yes" if c.holds else "NO"
        rows.append((c.claim, str(c.paper), str(c.irqlab), str(c.tolerance), holds))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = []
    for r in rows:
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    if args.list:
        for name in experiments.registry():
            print(name)
        return 0
    if not args.name:
        raise ValueError("give an experiment name, or --list")
    out = args.out or Path("out") / args.name
    result = experiments.run(args.name, out, quick=args.quick)
    if result.table:
        print(result.table)
        print()
    print(format_checks(result))
    held = sum(c.holds for c in result.checks)
    print(f"\n{held}/{len(result.checks)} checks hold; outputs in {out}/")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result.to_json(), indent=2, default=str) + "\n")
    return 0
