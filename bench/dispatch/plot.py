"""Plot bench/dispatch results (UPCALL Figures 4-6 and the dispatch-latency
p99) from out/bench/dispatch.jsonl.

x: number of CPU-bound processes on the server's CPU; one line per
mechanism; one panel per server scheduling policy in the file.

    dispatch_rtt.png        mean round-trip time (Figure 5)
    dispatch_jitter.png     standard deviation of the round-trip time (Figure 6)
    dispatch_bandwidth.png  echoed MB/s with a window of outstanding datagrams (Figure 4)
    dispatch_p99.png        dispatch latency p99, cyclictest's p99 as the timer floor
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FIGURES = {
    "rtt": ("rtt_mean_us", "mean round-trip time (us)", "UDP round-trip latency (UPCALL Fig. 5)"),
    "jitter": (
        "rtt_std_us",
        "round-trip time std dev (us)",
        "UDP round-trip jitter (UPCALL Fig. 6)",
    ),
    "bandwidth": ("bandwidth_mb_per_s", "echoed MB/s", "UDP echo bandwidth (UPCALL Fig. 4)"),
    "p99": ("dispatch_p99_us", "dispatch latency p99 (us)", "event dispatch latency p99"),
}


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def panels(rows: list[dict]) -> dict[str, dict[str, list[tuple[int, dict]]]]:
    """policy -> mechanism -> [(hogs, row)] in file order."""
    out: dict[str, dict[str, list[tuple[int, dict]]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r.get("error"):
            continue
        out[r.get("sched_requested", "?")][r["mechanism"]].append((r["hogs"], r))
    return out


def panel_title(policy: str, mechs: dict[str, list[tuple[int, dict]]]) -> str:
    got = {
        r.get("sched") for pts in mechs.values() for _, r in pts if r["mechanism"] != "cyclictest"
    }
    got.discard(None)
    prio = {
        r.get("prio") for pts in mechs.values() for _, r in pts if r.get("sched") == "SCHED_FIFO"
    }
    desc = ", ".join(sorted(got)) or policy
    if "SCHED_FIFO" in got and prio:
        desc += f" {min(prio)}"
    return f"server {desc} (asked: {policy})"


def plot(rows: list[dict], out_dir: Path) -> list[Path]:
    data = panels(rows)
    policies = sorted(data, key=lambda p: (p != "fifo", p))
    written = []
    for name, (key, ylabel, title) in FIGURES.items():
        fig, axes = plt.subplots(
            1, len(policies), figsize=(6.2 * len(policies), 4.4), squeeze=False
        )
        for ax, policy in zip(axes[0], policies, strict=True):
            mechs = data[policy]
            values = []
            for mech, pts in mechs.items():
                if mech == "cyclictest":
                    continue
                pts = sorted((h, r[key]) for h, r in pts if r.get(key) is not None)
                if not pts:
                    continue
                label = mech
                if name == "p99" and any(r.get("dispatch_from") == "send" for _, r in mechs[mech]):
                    label += " (from send ts)"
                ax.plot([h for h, _ in pts], [v for _, v in pts], marker="o", label=label)
                values += [v for _, v in pts]
            if name == "p99" and "cyclictest" in mechs:
                ct = sorted(
                    (h, r["p99_us"]) for h, r in mechs["cyclictest"] if r.get("p99_us") is not None
                )
                if ct:
                    ax.plot(
                        [h for h, _ in ct],
                        [v for _, v in ct],
                        "k--",
                        marker="s",
                        label="cyclictest p99 (timer floor)",
                    )
                    values += [v for _, v in ct]
            positive = [v for v in values if v > 0]
            if name != "bandwidth" and positive and max(positive) / min(positive) > 20:
                ax.set_yscale("log")
            ax.set_xlabel("CPU-bound processes on the server's CPU")
            ax.set_ylabel(ylabel)
            ax.set_xticks(sorted({h for pts in mechs.values() for h, _ in pts}))
            ax.set_title(panel_title(policy, mechs), fontsize=10)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
        first = next((r for r in rows if r["mechanism"] != "cyclictest"), {})
        fig.suptitle(
            f"{title}: {first.get('size', 512)}-byte UDP echo on loopback, "
            f"{first.get('duration_s', '?')} s per point, kernel {first.get('kernel', '?')}",
            fontsize=11,
        )
        fig.tight_layout()
        path = out_dir / f"dispatch_{name}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--input", type=Path, default=ROOT / "out" / "bench" / "dispatch.jsonl")
    ap.add_argument("--out-dir", type=Path, default=None, help="default: the input's directory")
    args = ap.parse_args()
    out_dir = args.out_dir or args.input.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    for path in plot(load(args.input), out_dir):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
