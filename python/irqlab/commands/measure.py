"""``irqlab measure``: latency statistics and reports (docs/measure.md).

Sub-commands:

* ``stats FILE...``    statistics of every dataset in the files (one row each);
  ``--hist BIN_NS`` adds a histogram, ``--json`` writes the numbers;
* ``compare FILE...``  the LATENCY-IP Table-4-style report over all datasets:
  Markdown on stdout, and ``latency_report.{md,csv,json,png}`` in ``--out``;
  ``--paper`` adds the paper's Table 4 next to scenarios named like its rows;
* ``samplesize``       LATENCY-IP Eq. 3 (385 for ``--confidence 0.95
  --error 0.05``).

Input formats are those of :mod:`irqlab.measure.readers` (auto-detected, or
``--format``). Invalid input raises ValueError: exit 2 with a one-line message
naming the file, field, value and rule.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from irqlab.measure import readers, report, stats


def _add_inputs(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", type=Path, metavar="FILE", help="latency sample files")
    p.add_argument("--format", default="auto", choices=readers.FORMATS,
                   help="input format (default: from the extension and content)")
    p.add_argument("--clock-hz", type=float, default=None,
                   help="IP clock for cycle counts (default: from the file, else 100 MHz)")
    p.add_argument("--allow-overflow", action="store_true",
                   help="cyclictest: drop overflowed samples instead of failing")
    p.add_argument("--per-thread", action="store_true",
                   help="cyclictest: one dataset per thread column")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("measure", help="latency statistics and Table-4-style reports")
    msub = p.add_subparsers(dest="measure_command", metavar="SUBCOMMAND")
    msub.required = True

    s = msub.add_parser("stats", help="statistics of latency sample files")
    _add_inputs(s)
    s.add_argument("--hist", type=float, default=None, metavar="BIN_NS",
                   help="also print a histogram with this bin width (ns)")
    s.add_argument("--json", type=Path, default=None, help="write the statistics as JSON here")
    s.set_defaults(func=run_stats)

    c = msub.add_parser("compare", help="Table-4-style report over several scenarios")
    _add_inputs(c)
    c.add_argument("--out", type=Path, default=Path("out/measure"),
                   help="output directory (default out/measure)")
    c.add_argument("--paper", action="store_true",
                   help="show LATENCY-IP Table 4 next to scenarios named like its rows")
    c.set_defaults(func=run_compare)

    n = msub.add_parser("samplesize", help="minimum number of samples (LATENCY-IP Eq. 3)")
    n.add_argument("--confidence", type=float, default=0.95, help="confidence level (0.95)")
    n.add_argument("--error", type=float, default=0.05, help="error range (0.05)")
    n.add_argument("--proportion", type=float, default=0.5, help="proportion p (0.5)")
    n.set_defaults(func=run_samplesize)


def _load_all(args: argparse.Namespace) -> list[readers.Dataset]:
    if args.clock_hz is not None and not args.clock_hz > 0:
        raise ValueError(f"--clock-hz: {args.clock_hz} must be a positive frequency")
    out: list[readers.Dataset] = []
    for f in args.files:
        out.extend(readers.load(f, args.format, clock_hz=args.clock_hz,
                                allow_overflow=args.allow_overflow, per_thread=args.per_thread))
    return out


def run_stats(args: argparse.Namespace) -> int:
    datasets = _load_all(args)
    rep = report.build(datasets)
    print(report.to_markdown(rep), end="")
    doc = report.to_json(rep)
    if args.hist is not None:
        hists = []
        for d in datasets:
            h = stats.histogram(d.samples_ns, bin_ns=args.hist)
            print(f"\nhistogram of {d.name} (ns, bin {args.hist:g}):")
            peak = max(h.counts) or 1
            for lo, hi, cnt in h.rows():
                if cnt:
                    print(f"  [{lo:10.1f}, {hi:10.1f})  {cnt:7d}  {'#' * max(1, 50 * cnt // peak)}")
            hists.append({"scenario": d.name, "edges": h.edges, "counts": h.counts})
        doc["histograms"] = hists
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(doc, indent=2) + "\n")
    return 0


def run_compare(args: argparse.Namespace) -> int:
    rep = report.build(_load_all(args), paper=args.paper)
    paths = report.write(rep, args.out)
    print(report.to_markdown(rep), end="")
    print(f"\nwrote {', '.join(str(p) for p in paths.values())}")
    return 0


def run_samplesize(args: argparse.Namespace) -> int:
    n = stats.sample_size(args.confidence, args.error, args.proportion)
    z = stats.z_value(args.confidence)
    print(f"{n}  (z = {z:.4f}, p = {args.proportion:g}, e = {args.error:g}; LATENCY-IP Eq. 3)")
    return 0
