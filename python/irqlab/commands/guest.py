"""``irqlab guest MODEL.yaml [--duration D] [--out DIR] [--check] [--no-simulate] [--report]
[--accel tcg|kvm]``: the model in the irqlab kernel under QEMU (``irqlab.guest``;
docs/kernel.md).

Lowers a ``quest`` model with ``xhci`` and ``usb`` devices to the kernel's
``run=spec`` workload, boots the kernel under QEMU TCG (``-icount``, always
under ``timeout``) with one ``usb-serial`` per USB device and host-side
feeders, and writes ``DIR/guest/metrics.json`` in the simulator's shape
(marked ``"clock": "emulated"``) with ``config.json``, the spec and the
console; unless ``--no-simulate``, also simulates the same model for the
same duration into ``DIR/simulation/`` and prints bound | simulation |
guest per task, device and server (``DIR/compare.json``; ``irqlab report
DIR/simulation DIR/guest`` draws them side by side, ``--report`` writes
``DIR/report.html``; ``irqlab compare MODEL --guest`` is the same with
compare's exit status). ``--check`` prints the spec and starts nothing.
``--accel kvm`` runs under KVM (host time) where hardware virtualization is
present. A model the guest cannot run is refused naming the field (exit 2).

Exit status: 0 when the kernel's own checks pass (budgets, I/O errors), 1
when one failed (the metrics are written all the same), 2 for bad input.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from irqlab.model import parse_duration


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("guest", help="run a quest model in the irqlab kernel under QEMU",
                       epilog="exit status: 0 the kernel's checks pass; 1 one failed; "
                              "2 bad input or a model the guest cannot run")
    p.add_argument("model", help="model file (YAML), or a shipped model by name")
    p.add_argument("--duration", default=None,
                   help="override simulation.duration (emulated time), e.g. 200ms")
    p.add_argument("--out", type=Path, default=Path("out/guest"), help="output directory")
    p.add_argument("--check", action="store_true",
                   help="only lower the model and print the kernel's spec")
    p.add_argument("--no-simulate", action="store_true",
                   help="do not simulate the model for the side-by-side table")
    p.add_argument("--report", action="store_true",
                   help="also write DIR/report.html (simulation next to the guest)")
    p.add_argument("--accel", choices=("tcg", "kvm"), default="tcg",
                   help="QEMU accelerator: tcg with -icount (emulated time; the default) or "
                        "kvm where hardware virtualization is present (host time)")
    p.set_defaults(func=run)


def _us(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1e3:.1f}us"


def run(args: argparse.Namespace) -> int:
    rc, _ = guest_and_simulation(args.model, args.duration, args.out, check=args.check,
                                 simulate=not args.no_simulate, report=args.report,
                                 accel=args.accel)
    return rc


def guest_and_simulation(model: str, duration_text: str | None, out: Path, *,
                         check: bool = False, simulate: bool = True,
                         report: bool = False, accel: str = "tcg") -> tuple[int, list[str]]:
    """``irqlab guest`` (and ``irqlab compare --guest``): the guest run, the
    simulation and the table; returns the exit status (0 the kernel's
    checks passed, 1 one failed) and the table's flags."""
    from irqlab import guest
    from irqlab.model import load
    from irqlab.runtime import model_path

    duration = None
    if duration_text is not None:
        try:
            duration = parse_duration(duration_text)
        except ValueError as e:
            raise ValueError(f"--duration: {e}") from None
    path = model_path(model)
    loaded = load(path)
    cfg = dict(loaded.sim_config)
    if duration is not None:
        cfg["duration"] = duration
    plan = guest.lower(cfg)
    if check:
        print(f"{path.name}: can run in the guest ({' '.join(plan.cmdline)})")
        print(plan.spec, end="")
        for n in plan.notes:
            print(f"  note: {n}")
        return 0, []
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out: {out} exists and is not a directory")
    gdir = out / "guest"
    g = guest.run(plan, workdir=gdir, accel=accel)
    met = guest.metrics(g, cfg)
    (gdir / "metrics.json").write_text(json.dumps(met, indent=1))
    (gdir / "config.json").write_text(json.dumps(cfg, indent=1))
    for f in gdir.glob("d*.in"):
        f.unlink()  # the feeders' files (regenerated from the pattern)
    print(f"{path.name}: guest {met['duration_ns'] / 1e9:g} s of {met['clock']} time "
          f"({g.wall_s:.1f} s wall), kernel checks {met['guest']['status']}")
    for d, how in g.feeders.items():
        print(f"  device {d}: {how}")
    waits = sum(d["data_waits"] for d in met["devices"])
    if waits:
        print(f"  warning: {waits} request(s) found their device empty (TRB queued -> top "
              f"half > {guest.DATA_WAIT_NS // 1000} us): QEMU's main loop lagged the guest, "
              "as on a loaded host; a second run tells (on an idle host the records repeat "
              "exactly)")
    sim = None
    flags: list[str] = []
    if simulate:
        from irqlab.sim import simulate as simulate_cfg
        from irqlab.sim import write_outputs

        sim = simulate_cfg(cfg)
        write_outputs(sim, out / "simulation", title=f"{path.name}: simulation", plots=False)
        flags = _table(cfg, sim.metrics, met, out)
    else:
        _guest_only(met)
    for name, st in met["guest"]["stages"].items():
        if st["submit_to_irq"]["count"]:
            print(f"  guest {name}: TRB queued -> top half -> bottom half -> done -> task, "
                  "mean (max): " + ", ".join(f"{_us(v['mean_ns'])} ({_us(v['max_ns'])})"
                                             for v in st.values()))
    bad = guest.budget_violations(met["guest"]["budget"], served_fraction=0.0)
    for b in bad:
        print(f"  budget: {b}")
    for n in plan.notes:
        print(f"  note: {n}")
    print(f"  note: {met['clock_note']}")
    if report and sim is not None:
        from irqlab.report import write_report

        p = write_report([out / "simulation", gdir], out / "report.html",
                         names=["simulation", f"guest ({met['clock']} time)"])
        print(f"report: {p}")
    print(f"wrote {gdir / 'metrics.json'}")
    return (0 if g.passed else 1), flags


def _guest_only(met: dict[str, Any]) -> None:
    for t in met["tasks"]:
        r = t["response"]
        print(f"  task {t['name']}: {t['released']} released, {t['completed']} finished, "
              f"{t['deadline_misses']} misses, response p50 {_us(r['p50_ns'])} max "
              f"{_us(r['max_ns'])}")
    for d in met["devices"]:
        lat = d["latency"]
        print(f"  device {d['name']}: {d['handled']} handled, latency p50 "
              f"{_us(lat['p50_ns'])} max {_us(lat['max_ns'])}")


def _table(cfg: dict[str, Any], sim: dict[str, Any], met: dict[str, Any],
           out: Path) -> list[str]:
    """bound | simulation | guest, with compare's rows and flags; returns
    the flags."""
    from irqlab.analysis import model_bounds
    from irqlab.compare import Tolerance, rows_of

    try:
        bounds = model_bounds(cfg)
    except (ValueError, RuntimeError) as e:  # no analysis for this model: no bounds
        bounds = {"error": str(e)}
    tol = Tolerance()
    rows = rows_of(bounds, sim, met, tol)

    def fmt(v: float | None, unit: str) -> str:
        if v is None:
            return "-"
        if unit == "ns":
            return f"{v / 1e6:.3f}ms" if v >= 1e6 else f"{v / 1e3:.1f}us"
        if unit == "fraction":
            return f"{100 * v:.2f}%"
        if unit == "B/s":
            return f"{v:,.0f}"
        return f"{v:.0f}"

    print(f"{'':8}{'name':<12}{'metric':<16}{'bound':>11}{'simulation':>12}{'guest':>12}  "
          "flags (compare's tolerance)")
    for r in rows:
        print(f"{r.kind:<8}{r.name:<12}{r.metric:<16}{fmt(r.bound, r.unit):>11}"
              f"{fmt(r.sim, r.unit):>12}{fmt(r.real, r.unit):>12}  "
              + "; ".join(f.replace("real", "guest") for f in r.flags))
    doc = {"model": cfg.get("name"), "duration_ns": met["duration_ns"], "clock": "emulated",
           "tolerance_text": tol.describe(),
           "rows": [r.__dict__ for r in rows],
           "flags": [f"{r.kind} {r.name} {r.metric}: {f.replace('real', 'guest')}"
                     for r in rows for f in r.flags]}
    (out / "compare.json").write_text(json.dumps(doc, indent=1))
    return doc["flags"]
