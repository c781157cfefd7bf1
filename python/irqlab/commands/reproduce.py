"""``irqlab reproduce``: one paper figure/table per command (docs/reproductions.md).

Contract: ``--list`` prints one experiment per line, its name first and alone
up to the first space (``awk '{print $1}'`` gives the names), then its quick
and full times, what it needs of the machine and its title; ``--names``
prints the names alone, one per line (the former ``--list``), and ``--list
--json FILE`` writes the same as a list of ``experiments.info`` records.
``reproduce NAME``
prints a table of paper vs irqlab, writes figures to ``--out`` and, with
``--json FILE``, ``{"experiment", "summary", "checks": [{claim, paper,
irqlab, tolerance, holds, kind, value, lower, upper, falsifier: {variant,
irqlab, holds}, paper_params, note}], ...}``. Exit code 0 even when a check
does not hold.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from irqlab import experiments


def add_parser(sub: argparse._SubParsersAction) -> None:
    words = "\n".join(f"  {k:<13} {v}" for k, v in experiments.REQUIREMENTS.items())
    p = sub.add_parser("reproduce", help="reproduce one paper figure or table",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog=f"what --list says an experiment needs (it is skipped, with the "
                              f"reason, without it) or uses if present:\n{words}")
    p.add_argument("name", nargs="?", help="experiment name (see --list)")
    p.add_argument("--list", action="store_true",
                   help="list the experiments, one per line: name, quick and full time "
                        "(measured on a 2-core VM), what each needs of the machine, title")
    p.add_argument("--names", action="store_true", help="the experiment names alone, one per line")
    p.add_argument("--out", type=Path, default=None, help="output directory (default out/NAME)")
    p.add_argument("--json", type=Path, default=None,
                   help="write the checks as JSON here (with --list: the listing)")
    p.add_argument("--quick", action="store_true", help="reduced run (fewer samples)")
    p.set_defaults(func=run)


def format_checks(result: experiments.Result) -> str:
    """The claims as a table, each followed by its falsifier's line and, for a
    claim off the paper's parameters or one that does not hold, its note."""
    rows = [("claim", "paper", "irqlab", "band", "holds")]
    extra: list[list[str]] = [[]]
    for c in result.checks:
        holds = "yes" if c.holds else "NO"
        rows.append((c.claim, str(c.paper), str(c.irqlab), str(c.tolerance), holds))
        more = []
        f = c.falsifier
        if f is not None:
            verdict = {None: "not run", True: "STILL HOLDS", False: "breaks the claim"}[f.holds]
            more.append(f"falsifier: {f.variant} -> {f.irqlab} ({verdict})")
        if not c.paper_params:
            more.append("not at the paper's own parameters")
        if c.note and (not c.holds or not c.paper_params):
            more.append(f"why: {c.note}")
        extra.append(more)
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = []
    for r, more in zip(rows, extra, strict=True):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())
        lines += [f"    {m}" for m in more]
    return "\n".join(lines)


def duration(seconds: float) -> str:
    """``7 s``, ``85 s``, ``4 min``: the listing's rounded times."""
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    return f"{round(seconds / 60)} min"


def requirements(needs: list[str], optional: list[str]) -> str:
    """``needs root, tracefs; uses /dev/kvm if present``; ``simulator only``."""
    if not needs and not optional:
        return "simulator only"
    parts = [f"needs {', '.join(needs) or 'nothing'}"]
    if optional:
        parts.append(f"uses {', '.join(optional)} if present")
    return "; ".join(parts)


def listing(infos: list[dict]) -> list[str]:
    """One line per experiment (``--list``), columns aligned, the name first."""
    cols = [(i["name"], duration(i["seconds"]["quick"]), duration(i["seconds"]["full"]),
             requirements(i["needs"], i["optional"]), i["title"]) for i in infos]
    w = [max(len(c[k]) for c in cols) for k in range(4)]
    return [f"{n:<{w[0]}}  quick {q:>{w[1]}}  full {f:>{w[2]}}  {r:<{w[3]}}  {t}"
            for n, q, f, r, t in cols]


def run(args: argparse.Namespace) -> int:
    if args.names:
        for name in experiments.registry():
            print(name)
        return 0
    if args.list:
        infos = [experiments.info(name) for name in experiments.registry()]
        for line in listing(infos):
            print(line)
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(infos, indent=2) + "\n")
        return 0
    if not args.name:
        raise ValueError("give an experiment name, or --list (--names)")
    out = args.out or Path("out") / args.name
    result = experiments.run(args.name, out, quick=args.quick)
    if result.table:
        print(result.table)
        print()
    print(format_checks(result))
    n = experiments.summary(result.checks)
    print(f"\n{n['holding']}/{n['claims']} checks hold, {n['falsified']}/{n['claims']} broken by "
          f"their falsifier, {n['paper_params']}/{n['claims']} at the paper's parameters; "
          f"outputs in {out}/")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result.to_json(), indent=2, default=str) + "\n")
    return 0
