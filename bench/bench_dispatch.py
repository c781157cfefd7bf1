"""Runtime benchmark: event dispatch latency, UPCALL Figures 4-6 (DESIGN §9).

Builds and runs bench/dispatch (a standalone cargo project): a 512-byte UDP
echo on loopback whose server receives through blocking recvmsg, epoll,
io_uring, SIGIO (real-time signal handler) or glibc POSIX AIO (signal
handler), with 0-4 CPU-bound processes on the server's CPU, under SCHED_FIFO
(falls back to SCHED_OTHER without permission) and under SCHED_OTHER; and
cyclictest with the same hogs as the timer-latency floor. Prints one JSON
line per (policy, hogs, mechanism) and writes out/bench/dispatch.jsonl, then
plots out/bench/dispatch_{rtt,jitter,bandwidth,p99}.png.

Default: 1 s per point, both policies: about 70 s plus the build.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "bench" / "dispatch"
BINARY = PROJECT / "target" / "release" / "dispatch"


def ensure_cyclictest() -> bool:
    """cyclictest is in Debian's rt-tests; install it when we are root."""
    if shutil.which("cyclictest"):
        return True
    if os.geteuid() == 0 and shutil.which("apt-get"):
        print("# installing rt-tests (cyclictest)", file=sys.stderr, flush=True)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": env}
        if subprocess.run(["apt-get", "install", "-y", "-qq", "rt-tests"], **quiet).returncode != 0:
            subprocess.run(["apt-get", "update", "-qq"], **quiet)
            subprocess.run(["apt-get", "install", "-y", "-qq", "rt-tests"], **quiet)
    return shutil.which("cyclictest") is not None


def cell(row: dict, key: str) -> str:
    v = row.get(key)
    return f"{v:9.1f}" if isinstance(v, (int, float)) else f"{'-':>9}"


def table(path: Path, hogs: tuple[int, ...] = (0, 4)) -> str:
    """Human summary: dispatch p50/p99, mean RTT, jitter, bandwidth."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    lines = [
        f"{'sched':11} {'mechanism':10} {'hogs':>4} {'disp p50':>9} {'disp p99':>9} "
        f"{'RTT mean':>9} {'jitter':>9} {'MB/s':>7}   (us)"
    ]
    for r in rows:
        if r["hogs"] not in hogs:
            continue
        sched = r.get("sched") or r.get("sched_requested", "?")
        head = f"{sched:11} {r['mechanism']:10} {r['hogs']:>4}"
        if r["mechanism"] == "cyclictest":
            ct = [f"{k} {r.get(k + '_us')}" for k in ("min", "avg", "p99", "max")]
            lines.append(f"{head} " + " ".join(ct))
        elif r.get("error"):
            lines.append(f"{head} error: {r['error']}")
        else:
            keys = ("dispatch_p50_us", "dispatch_p99_us", "rtt_mean_us", "rtt_std_us")
            mbs = r.get("bandwidth_mb_per_s") or 0.0
            lines.append(f"{head} " + " ".join(cell(r, k) for k in keys) + f" {mbs:7.1f}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--duration", type=float, default=1.0, help="seconds per (mechanism, hogs) point"
    )
    ap.add_argument("--sched", default="fifo,other", help="server policies to sweep: fifo, other")
    ap.add_argument("--hogs", default="0,1,2,3,4")
    ap.add_argument(
        "--mechanisms", default=None, help="comma list (default: all; see dispatch --list)"
    )
    ap.add_argument(
        "--window", type=int, default=16, help="outstanding datagrams in the bandwidth phase"
    )
    ap.add_argument("--out-dir", type=Path, default=ROOT / "out" / "bench")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--no-plot", action="store_true")
    args = ap.parse_args()

    if not args.no_build:
        subprocess.run(
            ["cargo", "build", "--release", "-q", "--manifest-path", str(PROJECT / "Cargo.toml")],
            cwd=ROOT,
            check=True,
        )
    out = args.out_dir / "dispatch.jsonl"
    args.out_dir.mkdir(parents=True, exist_ok=True)
    cmd = [
        str(BINARY),
        "--duration", str(args.duration),
        "--sched", args.sched,
        "--hogs", args.hogs,
        "--window", str(args.window),
        "--out", str(out),
    ]  # fmt: skip
    if args.mechanisms:
        cmd += ["--mechanisms", args.mechanisms]
    if not ensure_cyclictest():
        print("# cyclictest not found (Debian package rt-tests): no timer floor", file=sys.stderr)
        cmd.append("--no-cyclictest")
    if os.geteuid() != 0:
        print("# not root: SCHED_FIFO will probably fall back to SCHED_OTHER", file=sys.stderr)
    sys.stdout.flush()
    rc = subprocess.run(cmd, cwd=ROOT).returncode
    if rc != 0:
        return rc
    print(table(out), file=sys.stderr)
    if not args.no_plot:
        plot = [
            sys.executable,
            str(PROJECT / "plot.py"),
            "--input",
            str(out),
            "--out-dir",
            str(args.out_dir),
        ]
        rc = subprocess.run(plot, cwd=ROOT, stdout=sys.stderr).returncode
    return rc


if __name__ == "__main__":
    sys.exit(main())
