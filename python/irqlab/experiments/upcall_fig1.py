"""UPCALL Figure 1 measured: dispatch latency of timer events split into ID,
IE and BHD, from this kernel's tracepoints (see ``_ktrace`` for the events
and the workload), with 0 and 2 CPU-bound processes on the measured CPU.

The paper's numbers are processor cycles of a 2.4 GHz Pentium 4 running
Linux 2.6.15 (mean/median/stdev over 1000 timer interrupts); this machine's
are nanoseconds (converted from TSC cycles) and are its own. The checks are
on the paper's qualitative findings (UPCALL §2): the timer bottom half starts
a small fraction of ID + IE after the handler exits. Its falsifier is the
network events of Figure 2, whose bottom half the paper finds longer than
ID + IE. (The paper also finds BHD the most variable term; so it is for the
network events, so no variant of this measurement separates it, and it is
shown in the table, not checked.) Runs about 15 s (quick: 5 s);
root only (tracefs), skipped with the reason otherwise.
"""

from __future__ import annotations

from pathlib import Path

from irqlab.experiments import Result
from irqlab.experiments import _ktrace as kt
from irqlab.experiments._measured import band_check, ratio, skipped

NAME = "upcall-fig1"
TITLE = "UPCALL Figure 1 measured: timer-event dispatch latency ID / IE / BHD (tracepoints)"
SECONDS = {"quick": 11, "full": 19}  # measured: see irqlab.experiments
NEEDS = ("root", "tracefs", "2 CPUs")
# Measured on this machine: its claims and falsifiers are reported, not asserted
# by the test suite (timing is the machine's).
MEASURED = True

CPU_HZ = 2.4e9  # the paper's Pentium 4
# Figure 1 (cycles): mean, median, stdev.
PAPER = {
    "ID": (6311.16, 6060, 559.94),
    "IE": (10958.15, 10740, 779.26),
    "BHD": (308.04, 252, 1233.26),
    "delta_e": (17577.35, 17048, 1628.05),
}
LOADS = (0, 2)


def terms(t: kt.Triples) -> dict[str, list[float]]:
    """ID, IE, BHD, ID+IE and delta_e per event (ns)."""
    return {
        "ID": t.id,
        "IE": t.ie,
        "BHD": t.bhd,
        "ID+IE": [a + b for a, b in zip(t.id, t.ie, strict=True)],
        "delta_e": [a + b + c for a, b, c in zip(t.id, t.ie, t.bhd, strict=True)],
    }


def stats_table(title: str, paper: dict[str, tuple[float, float, float]],
                measured: dict[int, dict[str, list[float]]], rows: list[str]) -> str:
    """Paper (cycles and us at 2.4 GHz) beside this machine (us) per load."""
    out = [title,
           f"{'term':8} {'paper mean':>11} {'median':>7} {'stdev':>7} cyc {'(mean us)':>9}   "
           + "   ".join(f"{'hogs':>4} {'n':>5} {'min':>7} {'mean':>7} {'median':>7} {'max':>8} "
                        f"{'std':>7}" for _ in measured)]
    for r in rows:
        p = paper.get(r)
        head = (f"{r:8} {p[0]:11.0f} {p[1]:7.0f} {p[2]:7.0f}     {p[0] / CPU_HZ * 1e6:9.2f}"
                if p else f"{r:8} {'-':>11} {'-':>7} {'-':>7}     {'-':>9}")
        cells = []
        for hogs, m in measured.items():
            s = kt.summary(m[r])
            if s["n"] == 0:
                cells.append(f"{hogs:>4} {0:>5} (no events)")
                continue
            us = {k: s[k] / 1e3 for k in ("min", "mean", "median", "max", "std")}
            cells.append(f"{hogs:>4} {s['n']:>5} {us['min']:7.2f} {us['mean']:7.2f} "
                         f"{us['median']:7.2f} {us['max']:8.1f} {us['std']:7.2f}")
        out.append(head + "   " + "   ".join(cells))
    out.append("(this machine: microseconds; hogs = CPU-bound processes on the measured CPU)")
    return "\n".join(out)


def bhd_fraction(m: dict[str, list[float]]) -> float:
    """mean BHD / mean (ID + IE)."""
    return ratio(kt.stat(m["BHD"], "mean"), kt.stat(m["ID+IE"], "mean"))


# Trace windows per workload and load until MIN_EVENTS usable events are seen.
# An idle CPU's timer gives 3-30 usable events per 1-s window on the AMD EPYC
# CI machine (2026-11-25: 8 in three windows once, which failed the quick
# test's "more than 10"), so up to 10 windows; the other workloads stop after
# the first.
ATTEMPTS = 10
MIN_EVENTS = 50


def measure_all(quick: bool) -> tuple[dict[int, dict[str, list[float]]],
                                      dict[int, dict[str, list[float]]], dict]:
    """Timer events at every load of ``LOADS`` and network events at the same
    loads (the other figure's workload)."""
    cpu, other = kt.cpus()
    seconds, count = (1.0, 200) if quick else (5.0, 1000)
    timer, net, info = {}, {}, {"cpu": cpu, "other_cpu": other, "unused_events": {}, "clock": {}}
    info["attempts"] = {}
    for hogs in LOADS:
        for kind, into in (("timer", timer), ("net", net)):
            key = f"{kind}, {hogs} hogs"
            got, attempts = kt.Triples(), 0
            # A trace window can hold too few usable events (on an idle CPU
            # most ticks are re-armed before the trace began: their expiry is
            # unknown): trace again, up to ATTEMPTS windows, and keep them all.
            while attempts < ATTEMPTS and (attempts == 0 or len(got) < MIN_EVENTS):
                attempts += 1
                t, clock = kt.measure(kind, cpu, other, hogs, seconds=seconds, count=count)
                got.extend(t)
            into[hogs] = terms(got)
            info["unused_events"][key] = got.skipped
            info["clock"][key] = clock.residual_ns
            info["attempts"][key] = attempts
    return timer, net, info


def run(out_dir: Path, *, quick: bool = False) -> Result:
    why = kt.unavailable(kt.TIMER_EVENTS + kt.NET_EVENTS)
    if why:
        return skipped(NAME, why)
    timer, net, info = measure_all(quick)
    return result(out_dir, timer, net, info)


def result(out_dir: Path, timer: dict, net: dict, info: dict) -> Result:
    idle_t, idle_n = timer[0], net[0]
    p_frac = PAPER["BHD"][0] / (PAPER["ID"][0] + PAPER["IE"][0])
    checks = [
        band_check("timer: the bottom half starts a small fraction of ID+IE after the "
                   "handler exits (mean BHD / mean (ID+IE), idle)",
                   round(p_frac, 3), bhd_fraction(idle_t), 0.0, 0.1,
                   "network events (Fig. 2: BHD > ID+IE)", bhd_fraction(idle_n),
                   note="'much smaller' read as at least ten times smaller (the paper: 56 times)"),
    ]
    table = stats_table("UPCALL Figure 1, timer events: paper (cycles) | this machine (us)",
                        PAPER, timer, ["ID", "IE", "BHD", "delta_e"])
    csv = out_dir / "upcall_fig1.csv"
    write_csv(csv, {"timer": timer, "net": net})
    data = {**info, "summary": {kind: {h: {k: kt.summary(v) for k, v in m.items()}
                                       for h, m in d.items()}
                                for kind, d in (("timer", timer), ("net", net))}}
    return Result(NAME, list(checks), table, [str(csv)], data)


def write_csv(path: Path, data: dict[str, dict[int, dict[str, list[float]]]]) -> None:
    """One row per event: kind, hogs, ID, IE, BHD (ns)."""
    lines = ["kind,hogs,id_ns,ie_ns,bhd_ns"]
    for kind, d in data.items():
        for hogs, m in d.items():
            for i, e, b in zip(m["ID"], m["IE"], m["BHD"], strict=True):
                lines.append(f"{kind},{hogs},{i:.0f},{e:.0f},{b:.0f}")
    path.write_text("\n".join(lines) + "\n")
