"""Analysis speed: the full VINT Figure 4 sweep (16 points x 10,000 systems
of 4 PCPUs, four schemes each, budget search included) on all cores, and
the analyses per second that implies. Goal (issue 5): under 60 s on the
2-core machine."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from tempfile import TemporaryDirectory

from irqlab import experiments


def main() -> int:
    with TemporaryDirectory() as d:
        t0 = time.perf_counter()
        r = experiments.run("vint-fig4", Path(d))
        dt = time.perf_counter() - t0
    points = len(r.data["curve"])
    systems = points * r.data["curve"][0]["sets"]
    print(json.dumps({
        "figure": "vint-fig4-sweep",
        "points": points,
        "systems": systems,
        "seconds": round(dt, 2),
        "goal_seconds": 60,
        "pcpu_analyses_per_s": round(systems * 4 * 4 / dt),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
