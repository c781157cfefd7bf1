"""The ``irqlab`` command line (docs/architecture.md).

Each command lives in its own module that exposes ``add_parser(subparsers)``;
the module registers its arguments and sets ``func`` (a callable taking the
parsed namespace and returning an exit code). Contract shared by every
command: exit 0 on success, exit 2 with a one-line message on stderr (no
traceback) when the user's input is invalid -- and for every other error
too: files that are directories or devices, outputs that cannot be written,
a closed pipe, a Rust panic (``IRQLAB_DEBUG=1`` shows the traceback); what
is echoed is escaped first.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

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
    "irqlab.commands.calibrate",
    "irqlab.commands.export",
    "irqlab.commands.compare",
    "irqlab.commands.vmm",
]


class UsageError(Exception):
    """Invalid user input: printed as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (exit 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {escape(message)} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="irqlab",
        description="Model, analyze, simulate, run and measure interrupt and I/O handling "
        "in real-time systems.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(name).add_parser(sub)
    return parser


def escape(text: str) -> str:
    """`text` with control characters (ESC, CR, ...) as visible escapes, so a
    name or path cannot write to the terminal."""
    return "".join(c if c.isprintable() or c in "\t" else repr(c)[1:-1] for c in text)


def _os_error(exc: OSError) -> str:
    """One line for a file-system error: the file and the reason."""
    where = f"{exc.filename}: " if exc.filename is not None else ""
    return f"{where}{exc.strerror or exc}"


def _report(command: str, exc: BaseException) -> int:
    """Print `exc` as one line (or one line per listed error), exit code 2."""
    if isinstance(exc, OSError) and exc.strerror:
        lines = [_os_error(exc)]
    elif isinstance(exc, (UsageError, ValueError, TypeError, OSError)):
        lines = str(exc).splitlines() or [type(exc).__name__]
    else:  # a bug: still one line, never a traceback (IRQLAB_DEBUG=1 shows it)
        first = (str(exc).splitlines() or [""])[0]
        lines = [f"internal error ({type(exc).__name__}): {first}; please report it"]
    lines = [escape(line) for line in lines]
    if len(lines) == 1:
        print(f"irqlab {command}: error: {lines[0]}", file=sys.stderr)
    else:
        print(f"irqlab {command}: {len(lines)} errors:", file=sys.stderr)
        for line in lines:
            print(f"  {line}", file=sys.stderr)
    return 2


def _stdout_closed() -> int:
    """The reader of stdout went away (`irqlab ... | head -1`): stop
    quietly; route stdout to /dev/null so the exit flush cannot fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 141  # 128 + SIGPIPE, as a shell pipeline reports it


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        return _stdout_closed()
    except KeyboardInterrupt:
        return 130
    except (SystemExit, GeneratorExit):
        raise
    except BaseException as exc:  # noqa: BLE001 -- incl. pyo3's PanicException
        if os.environ.get("IRQLAB_DEBUG"):
            raise
        return _report(args.command, exc)
