"""``irqlab report RUN_DIR... [--out FILE] [--window A:B]``: one
self-contained HTML page for one run, or several side by side
(``irqlab.report``; the run directories are what ``irqlab simulate``
writes).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from irqlab.model import parse_duration


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="self-contained HTML report of simulation runs")
    p.add_argument("runs", type=Path, nargs="+", help="run directories (irqlab simulate --out)")
    p.add_argument("--out", type=Path, default=None,
                   help="HTML file (default: RUN_DIR/report.html for one run, report.html "
                   "for several)")
    p.add_argument("--window", default=None,
                   help="the timeline's first view START:END, e.g. 0ms:20ms (default: the "
                   "whole run; the page pans and zooms over all of it)")
    p.add_argument("--names", default=None, help="comma-separated run labels")
    p.set_defaults(func=run)


def parse_window(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    a, sep, b = text.partition(":")
    if not sep:
        raise ValueError(f"--window: {text!r}: write START:END, e.g. 0ms:20ms")
    try:
        return parse_duration(a) if a.strip() not in ("0", "") else 0, parse_duration(b)
    except ValueError as e:
        raise ValueError(f"--window: {e}") from None


def run(args: argparse.Namespace) -> int:
    from irqlab.report import write_report  # lazy: CLI start-up

    out = args.out or (args.runs[0] / "report.html" if len(args.runs) == 1
                       else Path("report.html"))
    names = args.names.split(",") if args.names else None
    if names is not None and len(names) != len(args.runs):
        raise ValueError(f"--names: {len(names)} labels for {len(args.runs)} runs")
    path = write_report(args.runs, out, window=parse_window(args.window), names=names)
    print(f"report: {path}")
    return 0
