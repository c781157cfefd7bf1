"""USB-DIFFSERV Table II / Figures 13b-c on the irqlab kernel under QEMU:
the high-priority reader's latency with one xHCI interrupter and with two,
measured by the guest (docs/kernel.md, "usb-priority-inversion-guest").

The systems are the simulated experiment's own (``usb-priority-inversion``:
the same configurations, built by its ``config``): five low-priority tasks
(1 ms / 20 ms) reading their own usb-serial device until their budgets run
out, a medium CPU-bound task (1 ms / 15 ms), a high-priority task
(1 ms / 10 ms) reading once per period; Omega_IO = 200 us in the bottom
half, Omega_Main = 20 us in the task. With one interrupter every device is
in one I/O class (one event ring, vector and PIBS I/O VCPU of 50 %); with
two, the high task's device has its own (10 %) and the low tasks' share the
other (40 %). ``irqlab.guest`` lowers each to the kernel's ``run=spec``
workload and runs it on qemu-xhci with six usb-serial devices (always
ready: the model's 60 MB/s Teensy delivers a request faster than the
guest's own request path takes), in emulated time (-icount shift=2).

The claims are the simulated experiment's Quest claims, with its bands and
its falsifiers, judged on the guest's numbers: the one-interrupter spike
(max / two interrupters' max >= 3; the max near 1200 us) must break when
the low tasks get a second interrupter, and the two-interrupter isolation
(max within 150-400 us) must break with one interrupter. The simulator's
figures for the same configurations and duration are printed next to the
guest's. A Main-VCPU check completes it: the two-interrupter system with a
CPU-bound task below the reader in every Main VCPU, so that each VCPU is
overloaded (always backlogged), under the same I/O; every VCPU receives its
budget in every period (C within 50 us, both sides, with the kernel's trap
time excluded from the servers: ``charge=system``), measured by the guest
against its TSC; its falsifier is the kernel run without budget enforcement
(``falsify=no-enforce``).

A guest run is deterministic (always-ready inputs, -icount sleep=off), so
each distinct system runs once (memoized on its spec); the quick run is
200 ms of emulated time per system (about 3 s of wall time each), the full
one 1 s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from irqlab import plots
from irqlab.experiments import Check, Result
from irqlab.experiments.claims import exact, falsify, key_of, memo, ordering, within
from irqlab.experiments.usb_priority_inversion import SERVABLE_READS, config, high_latency
from irqlab.sim import simulate

NAME = "usb-priority-inversion-guest"
TITLE = ("USB-DIFFSERV Table II / Figures 13b-c on the irqlab kernel (QEMU qemu-xhci): "
         "high-priority read latency with one and two interrupters, emulated time")
MEASURED = True  # boots the kernel under QEMU: tests/python/test_guest.py
# measured by the guest branch's author under host load (two guest runs a
# system): about 30 s quick, 100 s full
SECONDS = {"quick": 30, "full": 100}
NEEDS = ("QEMU", "checkout")

MS = 1_000_000
FALSIFIERS = {
    "two": "the one-interrupter system given a second interrupter for the low tasks",
    "one": "the two-interrupter system with one interrupter (one I/O VCPU)",
    "no-enforce": "the kernel without budget enforcement (falsify=no-enforce)",
}
SYSTEMS = ("quest-1-interrupter", "quest-2-interrupters", "quest-1-interrupter, servable")


#: Guest runs of one system at most, until two agree (see `_guest`).
MAX_ATTEMPTS = 4


def _guest(cfg: dict[str, Any], extra: tuple[str, ...] = ()) -> dict[str, Any]:
    """A guest run of a simulator configuration that another run repeats
    exactly: its metrics, with the attempts it took (`guest.attempts`).

    With always-ready feeders under -icount sleep=off a run is deterministic
    -- as long as QEMU's main loop keeps the devices fed; on a loaded host it
    can lag, and a request then waits for its data in host time (measured:
    up to 6 ms on one request with three QEMUs on this 2-CPU host, all in the
    TRB queued -> top half stage). So the figures are taken from two runs
    whose every request and job record agree; up to MAX_ATTEMPTS runs, then
    the one with the fewest requests that found their device empty."""
    from irqlab import guest

    plan = guest.lower(cfg)
    seen: list[tuple[list[str], guest.GuestRun]] = []
    for attempt in range(1, MAX_ATTEMPTS + 1):
        g = guest.run(plan, extra_cmdline=list(extra))
        sig = [ln for ln in g.console.splitlines() if ln.startswith(("req ", "job ", "vcpu "))]
        for prev_sig, _ in seen:
            if prev_sig == sig:
                m = guest.metrics(g, cfg)
                m["guest"]["attempts"], m["guest"]["agreed"] = attempt, True
                return m
        seen.append((sig, g))
    ms = [guest.metrics(g, cfg) for _, g in seen]
    best = min(ms, key=lambda m: sum(d["data_waits"] for d in m["devices"]))
    best["guest"]["attempts"], best["guest"]["agreed"] = MAX_ATTEMPTS, False
    return best


def measure(duration: int, falsifier: str | None, gst: Any = None, sim: Any = simulate
            ) -> dict[str, Any]:
    """The three systems on the guest and in the simulator; the guest's
    Main-VCPU accounting of the one-interrupter run."""
    f = key_of(FALSIFIERS, falsifier)
    gst = gst or _memo_guest()
    one = "quest-2-interrupters" if f == "two" else "quest-1-interrupter"
    two = "quest-1-interrupter" if f == "one" else "quest-2-interrupters"
    cfgs = {"quest-1-interrupter": config(one, duration),
            "quest-2-interrupters": config(two, duration),
            "quest-1-interrupter, servable": config(one, duration, SERVABLE_READS)}
    out: dict[str, Any] = {"guest": {}, "sim": {}, "budget": None}
    for s, cfg in cfgs.items():
        m = gst(cfg, ())
        out["guest"][s] = _latency(m)
        r = sim(cfg)
        out["sim"][s] = {**high_latency(r),
                         "histogram_ns": r.metrics["devices"][0]["latency"]["histogram_ns"]}
        if s == "quest-1-interrupter":
            out["status"] = m["guest"]["status"]
    # the Main-VCPU check: the one-interrupter system, every Main VCPU overloaded
    extra = ("charge=system", *(("falsify=no-enforce",) if f == "no-enforce" else ()))
    m = gst(overloaded(duration), extra)
    rows = m["guest"]["budget"]
    out["budget"] = {v["name"]: v for v in rows}
    from irqlab.guest import budget_violations

    out["budget_violations"] = budget_violations(rows)
    return out


def overloaded(duration: int) -> dict[str, Any]:
    """The two-interrupter system with a CPU-bound task below the reader (or
    the medium task) in every Main VCPU: each VCPU always has work, so it is
    backlogged from the release on and must get exactly its budget in every
    period -- no more (enforcement) and no less (it is served: 42 % of Main
    budgets, the high class's 2 %, the low class's I/O VCPU and the kernel's
    own time fit the CPU). With one interrupter they do not: the shared 50 %
    I/O VCPU runs at the high task's inherited 10 ms period, above the low
    VCPUs, and with the kernel's 19 % the last two low VCPUs go short (the
    CPU is overcommitted, docs/kernel.md)."""
    cfg = config("quest-2-interrupters", duration)
    mains = [i for i, s in enumerate(cfg["servers"]) if s["policy"] == "sporadic"]
    cfg["tasks"] = [*cfg["tasks"], *(
        {"name": f"hog.{cfg['servers'][i]['name']}", "server": i, "priority": 0,
         "release": {"kind": "once"},
         "program": [{"op": "loop", "body": [{"op": "compute", "ns": 10 * MS}]}]}
        for i in mains)]
    return cfg


def _memo_guest() -> Any:
    cache: dict[str, dict[str, Any]] = {}

    def call(cfg: dict[str, Any], extra: tuple[str, ...]) -> dict[str, Any]:
        from irqlab.guest import lower

        k = lower(cfg).spec + " ".join(extra)
        if k not in cache:
            cache[k] = _guest(cfg, extra)
        return cache[k]

    return call


def _latency(m: dict[str, Any]) -> dict[str, float]:
    """The high task's request latency (device 0, ttyACM0), us: the guest's
    TRB queued -> task resumed, plus the Omega_Main it then spends."""
    lat = m["devices"][0]["latency"]
    us = 1_000
    return {"mean": lat["mean_ns"] / us, "std": lat["std_dev_ns"] / us,
            "min": lat["min_ns"] / us, "p99": lat["p99_ns"] / us, "max": lat["max_ns"] / us,
            "count": lat["count"], "histogram_ns": lat["histogram_ns"],
            # requests (any device) whose data was not in the device when queued
            "data_waits": sum(d["data_waits"] for d in m["devices"]),
            "attempts": m["guest"].get("attempts", 1), "agreed": m["guest"].get("agreed"),
            # the high request's path in the guest: mean and max per stage, us
            "stages": {k: (v["mean_ns"] / us, v["max_ns"] / us) for k, v in
                       m["guest"]["stages"][m["devices"][0]["name"]].items()}}


def judge(st: dict[str, Any]) -> list[Check]:
    g = st["guest"]
    q1, q2, q1s = (g[s] for s in SYSTEMS)
    s1, s2 = st["sim"]["quest-1-interrupter"], st["sim"]["quest-2-interrupters"]
    b = st["budget"]
    worst_max = max(v["period_max_ns"] / v["budget_ns"] for v in b.values())
    worst_min = min(v["period_min_ns"] / v["budget_ns"] for v in b.values())
    periods = sum(v["periods"] for v in b.values())
    cpu_bound = sum(v["cpu_bound"] for v in b.values())
    st1 = q1["stages"]
    guest_note = ("the guest's high request, stage by stage (mean / max, us): TRB queued -> "
                  "top half {:.0f} / {:.0f}, -> its bottom half {:.0f} / {:.0f} (behind the low "
                  "completions queued in the one class), bottom half {:.0f} / {:.0f} (Omega_IO "
                  "200 us plus the kernel's own bottom-half path), -> task resumed {:.0f} / "
                  "{:.0f}; the simulator's max at the same parameters is {:.0f} us. Every "
                  "bottom half costs the I/O VCPU about 35 us more than the simulator's "
                  "(docs/kernel.md, 'usb-priority-inversion-guest')").format(
                      *st1["submit_to_irq"], *st1["irq_to_bh"], *st1["bh_to_done"],
                      *st1["done_to_resumed"], s1["max"])
    return [
        ordering("guest, one interrupter: low requests delay the high task (max / two "
                 "interrupters' max)", "spikes (Fig. 13b vs 13c)", q1["max"] / q2["max"], 3.0,
                 what="ratio", shown=f"{q1['max'] / q2['max']:.1f}x (sim "
                 f"{s1['max'] / s2['max']:.1f}x)", falsifier=FALSIFIERS["two"]),
        within("guest, one interrupter: spikes near 1200 us (max, us; low tasks read until "
               "their budget is gone)", 1200, q1["max"], 900, 1500,
               shown=f"{q1['max']:.0f} (sim {s1['max']:.0f})", falsifier=FALSIFIERS["two"],
               note=guest_note),
        within("guest, one interrupter: spikes near 1200 us (max, us; low tasks read what the "
               f"I/O VCPU can serve, {SERVABLE_READS} a period)", 1200, q1s["max"], 900, 1500,
               shown=f"{q1s['max']:.0f} (sim {st['sim'][SYSTEMS[2]]['max']:.0f})",
               falsifier=FALSIFIERS["two"], paper_params=False,
               note=f"{SERVABLE_READS} reads a period, as in the simulated experiment (one I/O "
                    "VCPU budget at the high task's inherited period); " + guest_note),
        within("guest, two interrupters: unaffected by the other tasks (max, us)",
               "as Fig. 10 (~240)", q2["max"], 150, 400,
               shown=f"{q2['max']:.0f} (sim {s2['max']:.0f})", falsifier=FALSIFIERS["one"]),
        within("guest, every Main VCPU overloaded (a CPU-bound task below its reader) under "
               "the two interrupters' I/O: most CPU time in a period / C, worst VCPU",
               "C per period (QUEST-VCPU §3)", worst_max, 0.95, 1.05,
               shown=f"{worst_max:.3f} ({cpu_bound} CPU-bound VCPUs, {periods} periods)",
               falsifier=FALSIFIERS["no-enforce"],
               note="C within the enforcement tolerance of 50 us (C = 1 ms), both sides; "
                    "the kernel's trap time excluded from the servers (charge=system)"),
        within("guest, every Main VCPU overloaded: least CPU time in a period / C, worst "
               "VCPU (each receives its budget)", "C per period", worst_min, 0.95, 1.05,
               shown=f"{worst_min:.3f}", falsifier=FALSIFIERS["no-enforce"],
               note="the guest's own accounting (TSC, from the trap return that dispatched a "
                    "thread to the next trap), with the kernel's trap time excluded from the "
                    "servers (charge=system, Scheduler::exclude), so that what the core charges "
                    "is what the guest measures; with the traps charged to the server they "
                    "interrupt (the kernel's default) a VCPU whose reader makes kernel calls "
                    "gets 68-80 % of C of its own time"),
        exact("guest: every Main VCPU within its budget (violations of the per-period and "
              "sliding-window checks)", 0, len(st["budget_violations"]), 0,
              shown="; ".join(st["budget_violations"]) or "none",
              falsifier=FALSIFIERS["no-enforce"]),
    ]


def table(st: dict[str, Any]) -> str:
    head = (f"{'system':<32} {'':>6} {'mean':>8} {'std':>8} {'min':>8} {'p99':>8} "
            f"{'max':>8}  (us; high task's read latency)")
    rows = [head]
    for s in SYSTEMS:
        for src in ("sim", "guest"):
            v = st[src][s]
            rows.append(f"{s:<32} {src:>6} {v['mean']:8.1f} {v['std']:8.1f} {v['min']:8.1f} "
                        f"{v['p99']:8.1f} {v['max']:8.1f}")
    rows.append("Main VCPUs, each overloaded (guest accounting, charge=system, two "
                "interrupters' I/O): "
                "C / T, CPU time per period min-max, most in a sliding T (ns)")
    for v in st["budget"].values():
        rows.append(f"  {v['name']:<8} {v['budget_ns']} / {v['period_ns']}: "
                    f"{v['period_min_ns']}-{v['period_max_ns']} over {v['periods']} periods"
                    f"{'' if v['cpu_bound'] else ' (not CPU-bound)'}, {v['window_max_ns']}")
    waits = {s: st["guest"][s]["data_waits"] for s in SYSTEMS}
    tries = {s: (st["guest"][s]["attempts"], st["guest"][s]["agreed"]) for s in SYSTEMS}
    rows.append("guest: emulated time (QEMU TCG, -icount shift=2); sim: irqlab-sim, same "
                "configuration and duration; requests that found their device empty (host "
                f"feed lag, any device): {waits}; guest runs until two agreed (runs, agreed): "
                f"{tries}")
    return "\n".join(rows)


def table_md(st: dict[str, Any]) -> str:
    rows = ["| system | source | mean | std | min | p99 | max (us) |",
            "|---|---|---|---|---|---|---|"]
    for s in SYSTEMS:
        for src in ("sim", "guest"):
            v = st[src][s]
            rows.append(f"| {s} | {'simulation' if src == 'sim' else 'guest (emulated)'} | "
                        f"{v['mean']:.1f} | {v['std']:.1f} | {v['min']:.1f} | {v['p99']:.1f} | "
                        f"{v['max']:.1f} |")
    return "\n".join(rows)


def run(out_dir: Path, *, quick: bool = False) -> Result:
    duration = 200 * MS if quick else 1_000 * MS
    gst, sim = _memo_guest(), memo(simulate)
    stats, checks = falsify(lambda f: measure(duration, f, gst, sim), judge)
    png = plots.bars(out_dir / "usb_priority_inversion_guest.png",
                     {f"{s} ({src})": {"mean": stats[src][s]["mean"], "p99": stats[src][s]["p99"],
                                       "max": stats[src][s]["max"]}
                      for s in SYSTEMS for src in ("sim", "guest")},
                     title="High-priority read latency: simulation vs guest (emulated time)",
                     ylabel="us")
    cdf = plots.lines(out_dir / "usb_priority_inversion_guest_cdf.png",
                      {f"{s} ({src})": _cdf(stats[src][s]["histogram_ns"])
                       for s in SYSTEMS[:2] for src in ("sim", "guest")},
                      title="High-priority read latency CDF: simulation vs guest (emulated)",
                      xlabel="latency (us)", ylabel="fraction of reads")
    data = {**stats, "duration_ns": duration, "clock": "emulated", "table_md": table_md(stats)}
    return Result(NAME, checks, table(stats), [str(png), str(cdf)], data)


def _cdf(hist: list[list[int]]) -> tuple[list[float], list[float]]:
    """A histogram_ns as CDF points: (upper edge in us, fraction at or below)."""
    total = sum(h[2] for h in hist) or 1
    xs, ys, acc = [], [], 0
    for _lo, hi, n in hist:
        acc += n
        xs.append(hi / 1_000)
        ys.append(acc / total)
    return xs, ys
