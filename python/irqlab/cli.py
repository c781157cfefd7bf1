"""The ``irqlab`` command line (DESIGN.md §10).

Each command lives in its own module that exposes ``add_parser(subparsers)``;
the module registers its arguments and sets ``func`` (a callable taking the
parsed namespace and returning an exit code). Contract shared by every
command: exit 0 on success, exit 2 with a one-line message on stderr (no
traceback) when the user's input is invalid.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# Modules that register commands, in the order `irqlab --help` lists them.
COMMAND_MODULES: list[str] = [
    "irqlab.commands.demo",
    "irqlab.commands.check",
    "irqlab.commands.simulate",
    "irqlab.commands.analyze",
    "irqlab.commands.sweep",
    "irqlab.commands.report",
    "irqlab.commands.reproduce",
    "irqlab.commands.measure",
    "irqlab.commands.run",
    "irqlab.commands.vmm",
]


class UsageError(Exception):
    """Invalid user input: printed as one line, exit code 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="irqlab",
        description="Model, analyze, simulate, run and measure interrupt and I/O handling "
        "in real-time systems.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(name).add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (UsageError, ValueError, FileNotFoundError) as exc:
        lines = str(exc).splitlines() or [type(exc).__name__]
        if len(lines) == 1:
            print(f"irqlab {args.command}: error: {lines[0]}", file=sys.stderr)
        else:
            print(f"irqlab {args.command}: {len(lines)} errors:", file=sys.stderr)
            for line in lines:
                print(f"  {line}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
