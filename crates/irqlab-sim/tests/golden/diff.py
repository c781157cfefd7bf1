"""Review a regeneration of the golden metrics: for every golden file that
changed against git HEAD, print the JSON paths whose values differ (new keys
and removed keys included), grouped by path pattern with counts. Usage:
``python crates/irqlab-sim/tests/golden/diff.py [REV]``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent


def walk(a: object, b: object, path: str, out: Counter[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a.keys() | b.keys():
            walk(a.get(k, "<absent>"), b.get(k, "<absent>"), f"{path}.{k}", out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            walk(x, y, f"{path}[{i}]", out)
    elif a != b:
        out[re.sub(r"\[\d+\]", "[*]", path)] += 1


def main() -> int:
    rev = sys.argv[1] if len(sys.argv) > 1 else "HEAD"
    root = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True,
                          text=True, check=True, cwd=HERE).stdout.strip()
    diffs: Counter[str] = Counter()
    files = 0
    for f in sorted(HERE.glob("*.metrics.json")):
        rel = f.relative_to(root)
        old = subprocess.run(["git", "show", f"{rev}:{rel}"], capture_output=True, text=True,
                             cwd=root)
        if old.returncode != 0:
            diffs["<new file>"] += 1
            continue
        a, b = json.loads(old.stdout), json.loads(f.read_text())
        before = sum(diffs.values())
        walk(a, b, "$", diffs)
        files += sum(diffs.values()) > before
    print(f"{files} files changed")
    for p, n in diffs.most_common():
        print(f"{n:7d}  {p}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
