"""`make bench`: run every benchmark script in bench/ (bench_*.py); each
prints one JSON line per figure, comparing irqlab with another tool measured
in the same run (ratios, not absolute times: the machines are shared)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    failed = 0
    for script in sorted(HERE.glob("bench_*.py")):
        print(f"# {script.name}", file=sys.stderr, flush=True)
        failed += subprocess.run([sys.executable, str(script)]).returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
