"""``irqlab demo``: the embedded default scenario, end to end.

1. The USB priority-inversion scenario of USB-DIFFSERV Table II: a
   high-priority task reads a USB serial device every 10 ms while five
   low-priority tasks read their own devices as fast as their budgets allow
   and a medium-priority task burns CPU. It runs under Linux (PREEMPT_RT:
   bottom halves in ksoftirqd, SCHED_FIFO or SCHED_DEADLINE), Quest
   with one xHCI interrupter (one I/O VCPU for everyone) and Quest with two
   interrupters (differentiated service), prints the high task's read
   latency side by side with the paper's claims (each with its falsifier,
   and the reason for any that does not hold), and writes the metrics
   JSON, a Perfetto trace, plots and an HTML report of Linux next to Quest
   (``irqlab report``), saying where they are.
2. It then walks through the first milliseconds of a QUEST-VCPU Table 1
   system decision by decision: the budget of the dispatched VCPU, its
   `next_update`, and the I/O VCPU's inherited period, eligibility time and
   replenishment, so the algorithms of QUEST-VCPU (Alg. 1-13) can be
   followed step by step. A small event loop here plays the machine; every
   decision is the core's.
3. A virtualized machine (VINT): ``vint-analysis.yaml`` with and without
   vINT, the analysis's bounds (Eq. 3 for VCPUs and pseudo-VCPUs, Eq. 5 +
   7/8 for the virtual interrupt's flow) next to what the simulator
   measured for the same model.
4. Finally the same model runs on real Linux threads (``irqlab-rt``):
   ``irqlab compare`` on the shipped ``control-and-flood`` model (a UDP
   flood on a 5 % PIBS I/O VCPU next to a control task) and on
   ``control-and-flood-no-iovcpu`` (no I/O VCPUs), a second each, prints the
   control task's bound, simulation and real run and the servers' shares
   (``--no-rt`` skips it).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from irqlab import experiments
from irqlab.commands.reproduce import format_checks
from irqlab.core import Scheduler, percent, us
from irqlab.experiments import usb_priority_inversion
from irqlab.sim import simulate, write_outputs

UNIT = us(100)  # QUEST-VCPU Table 1: base unit 100 us


@dataclass
class Reader:
    """The CD-ROM reader: issue a read, block; the device interrupts after
    `device` ns; the bottom half needs `bh` ns on the I/O VCPU; then the
    reader computes `post` ns on its Main VCPU and reads again."""

    device: int = us(300)
    bh: int = us(150)
    post: int = us(100)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the embedded default scenario and explain it")
    p.add_argument("--out", type=Path, default=Path("out/demo"), help="output directory")
    p.add_argument("--until", type=float, default=3.0,
                   help="length of the step-by-step walk-through in ms (default 3)")
    p.add_argument("--no-rt", action="store_true",
                   help="skip the real-thread part (irqlab-rt)")
    p.set_defaults(func=run)


def fmt(ns: int | None) -> str:
    return "-" if ns is None else f"{ns / 1000:.0f}us"


def run(args: argparse.Namespace) -> int:
    horizon = round(args.until * 1_000_000)
    if horizon <= 0:
        raise ValueError(f"--until: {args.until} must be positive")
    out: Path = args.out
    print("== irqlab demo: USB priority inversion (USB-DIFFSERV Table II) ==\n")
    print("High-priority task's USB read latency with 5 low-priority readers and a CPU hog:\n")
    result = experiments.run("usb-priority-inversion", out)
    print(result.table)
    print()
    print(format_checks(result))
    files = []
    for system in ("linux-fifo", "quest-2-interrupters"):
        cfg = usb_priority_inversion.config(system, 1_000_000_000)
        cfg["trace"] = {"enabled": True, "until": 50_000_000}
        files += write_outputs(simulate(cfg), out / system, title=system)
    from irqlab.report import write_report

    files.append(write_report([out / "linux-fifo", out / "quest-2-interrupters"],
                              out / "report.html"))
    print("\nOutputs:")
    for f in [*result.files, *map(str, files)]:
        print(f"  {f}")
    print("  (open trace.json in https://ui.perfetto.dev or chrome://tracing)\n")
    print("== step by step: the core's decisions in the first milliseconds ==\n")
    walkthrough(horizon)
    print("\n== a virtualized machine: VINT bounds next to the simulation ==\n")
    hypervisor_part()
    if not args.no_rt:
        print("\n== on real threads: a UDP flood next to a control task (irqlab run) ==\n")
        real_threads(out)
    return 0


def hypervisor_part() -> None:
    """`vint-analysis.yaml` (two VCPUs, a virtual interrupt every 1 ms) with
    and without vINT: each bound of `irqlab analyze` and the simulated
    worst case of the same quantity."""
    from irqlab.analysis import hypervisor_bounds
    from irqlab.model import loads, scenario_path

    text = scenario_path("vint-analysis").read_text()
    print(f"{'':<8}{'item':<11}{'equation':<10}{'bound':>8}{'simulated max':>15}  within")
    for label, t in (("vINT", text), ("no vINT", text.replace(", vint: {}", ""))):
        cfg = loads(t).sim_config
        (cpu,) = hypervisor_bounds(cfg)["cpus"]
        m = simulate(cfg).metrics
        sim = {s["name"]: s["response"]["max_ns"] for s in m["servers"]}
        sim |= {v["name"]: v["handling"]["max_ns"] for v in m["virqs"]}
        rows = [(f"{s['name']}", "Eq. 3", s["response"]) for s in cpu["servers"]]
        rows += [(v["name"], f"Eq. {v['equation']}", v["bound"]) for v in cpu["virtual_interrupts"]]
        for name, eq, bound in rows:
            got = sim.get(name)
            ok = "-" if bound is None else ("yes" if got is not None and got <= bound else "NO")
            print(f"{label:<8}{name:<11}{eq:<10}{fmt(bound):>8}{fmt(got):>15}  {ok}")
    print("\n  Without vINT the analysis cannot promise the flow its 1 ms: inside v0 it")
    print("  may wait out v0's budget gap (Eq. 5 + 8). This run never drains v0's budget,")
    print("  so its flows stay fast -- a simulation is one scenario, a bound covers all.")
    print("  `irqlab analyze` says why each bound holds or not (docs/analysis.md).")


def real_threads(out: Path) -> None:
    """`irqlab compare` on the shipped isolation model with its flood on a
    5 % PIBS I/O VCPU and without I/O VCPUs (1 s each): the control task's
    bound, simulation and real run, and the servers' CPU shares."""
    from irqlab import runtime
    from irqlab.compare import Tolerance, compare

    for label, name in (("5 % PIBS I/O VCPU", "control-and-flood"),
                        ("no I/O VCPU", "control-and-flood-no-iovcpu")):
        try:
            c = compare(name, duration_ns=1_000_000_000, out=out / f"compare-{name}")
        except runtime.RuntimeUnavailable as e:
            print(f"  skipped: the runtime cannot run here ({e})")
            return
        print(f"-- flood handled on: {label} (irqlab compare {name} --duration 1s) --")
        keep = [r for r in c.rows if (r.kind, r.name) == ("task", "control")
                and r.metric in ("released", "misses", "response p50", "response max")
                or r.kind == "server"]
        print(c.table(keep))
        flags = c.flags
        print(f"  {len(flags)} flag(s) in {out / f'compare-{name}' / 'compare.json'}"
              + ("" if c.real["mode"] != "park-only" else " (park-only mode: no SCHED_FIFO)"))
    print("\n  " + Tolerance().describe())
    print("  One model, three answers: see docs/runtime.md and `irqlab compare --help`.")


def walkthrough(horizon: int) -> None:
    s = Scheduler()
    table1 = [("VCPU0", 2, 5), ("VCPU1", 2, 8), ("VCPU2", 1, 4), ("VCPU3", 1, 10)]
    vcpus = {name: s.add_sporadic(name, c * UNIT, t * UNIT) for name, c, t in table1}
    io = s.add_pibs("IOVCPU", percent(10))
    hogs = [s.add_thread(f"{name}.cpu", v, priority=1) for name, v in vcpus.items()]
    reader = s.add_thread("VCPU1.cd", vcpus["VCPU1"], priority=2)
    bh = s.add_thread("IOVCPU.ata-bh", io)
    rd = Reader()
    vcpu1_period = 8 * UNIT

    # remaining work per thread (None: CPU-bound); device completions
    work: dict[int, int | None] = {t: None for t in hogs}
    work[reader] = 0
    work[bh] = 0
    irq_at: list[int] = []
    for t in hogs:
        s.wakeup(0, t)

    def issue_read(now: int) -> None:
        irq_at.append(now + rd.device)

    issue_read(0)  # the reader starts blocked on its first read
    print("irqlab demo: QUEST-VCPU Table 1 Main VCPUs + a 10% PIBS I/O VCPU on one CPU")
    print("  VCPU0 200us/500us, VCPU1 200us/800us (+CD reader), VCPU2 100us/400us,")
    print("  VCPU3 100us/1ms; IOVCPU U=10% inherits VCPU1's period (800us) -> C_max 80us\n")
    print(f"{'time':>7}  {'event':<22} {'runs':<16} {'budget':>7} {'until':>7}   IOVCPU state")
    now = 0
    event = "start"
    while now < horizon:
        d = s.schedule(now)
        name = "idle" if d.thread is None else s.thread_name(d.thread)
        budget = None if d.server is None else s.server_state(d.server)["budget"]
        st = s.server_state(io)
        io_txt = (
            f"T={fmt(st['inherited_period'])} e={fmt(st['eligibility'])} "
            f"r={'-' if st['replenishment'] is None else fmt(st['replenishment'][0])}"
        )
        tag = " (background)" if d.background else ""
        print(
            f"{fmt(now):>7}  {event:<22} {name + tag:<16} {fmt(budget):>7} "
            f"{fmt(d.next_update):>7}   {io_txt}"
        )
        # run until the next decision point
        until = min([horizon, *([d.next_update] if d.next_update else []), *irq_at])
        w = None if d.thread is None else work[d.thread]
        if w is not None and d.thread is not None:
            until = min(until, now + w)
            work[d.thread] = w - (until - now)
        now = until
        event = "timer"
        if d.thread is not None and work[d.thread] == 0:
            s.block(now, d.thread)
            if d.thread == bh:
                event = "bottom half done"
                s.wakeup(now, reader)
                work[reader] = rd.post
            elif d.thread == reader:
                event = "reader issues read"
                issue_read(now)
        while irq_at and irq_at[0] <= now:
            irq_at.pop(0)
            event = "ATA interrupt"
            work[bh] = (work[bh] or 0) + rd.bh
            s.wakeup(now, bh, inherit_period=vcpu1_period)
    st = s.stats()
    print(
        f"\n{st['schedule_calls']} scheduling decisions, {st['server_switches']} VCPU switches, "
        f"{st['replenishment_ops']} replenishment-queue operations."
    )
    print(
        "Read it as: each VCPU runs at most C per T (sporadic server, Alg. 3-6/11-13);"
        " the I/O VCPU's bottom half runs at VCPU1's priority (PIBS inheritance, Alg. 10)"
        " for at most C_max, then waits for its eligibility time e += used/U (Alg. 7)."
    )
