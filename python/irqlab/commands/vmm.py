"""``irqlab vmm MODEL.yaml [--seconds S] [--json FILE] [--out DIR]``: a hypervisor model on
the real VMM (``crates/irqlab-vmm`` on /dev/kvm), the same file ``analyze``
and ``simulate`` read.

The model's physical interrupts become UDP senders, its virtual interrupts
guest devices (managed ones with their vINT pseudo-VCPUs), its VCPU a
budgeted server of irqlab-rt, its periodic guest tasks tasks of the guest
kernel's scheduler (released by the guest's LAPIC timer); what the VMM cannot
run (several guests or VCPUs, more than four periodic tasks) is refused with
the field and the reason.
Prints, per virtual interrupt, the events and their handling time (host
event -> end of the guest DSR, VINT Def. 2) and the servers' CPU shares.
``--out DIR`` writes ``metrics.json`` in the simulator's shape (what the VMM
measures; ``irqlab.compare.vmm_metrics``), ``config.json`` (the model's
simulator configuration) and the VMM's full report ``vmm.json``: a run
directory ``irqlab report`` renders.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from irqlab import vmm


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("vmm", help="run a hypervisor model on the real VMM (KVM)")
    p.add_argument("model", type=Path, help="model file (YAML, machine.path: hypervisor)")
    p.add_argument("--seconds", type=int, default=None,
                   help="run time (default: the model's simulation.duration)")
    p.add_argument("--json", type=Path, default=None, help="write the full report here")
    p.add_argument("--out", type=Path, default=None,
                   help="run directory: metrics.json (the simulator's shape), config.json, "
                   "vmm.json (the full report)")
    p.set_defaults(func=run)


def _us(v: float | int | None) -> str:
    return "-" if v is None else f"{v / 1000:.0f}"


def run(args: argparse.Namespace) -> int:
    if not args.model.is_file():
        raise FileNotFoundError(f"{args.model}: no such file")
    why = vmm.kvm_unavailable()
    if why is not None:
        raise ValueError(f"the real VMM cannot run here: KVM unavailable: {why}")
    extra = ["--seconds", str(args.seconds)] if args.seconds is not None else []
    timeout = (args.seconds or 600) + 120
    try:
        r = vmm.run("model", str(args.model), *extra, timeout=timeout)
    except vmm.VmmFailed as e:
        raise ValueError(e.message) from None
    for w in r["warnings"]:
        print(f"warning: {w}")
    print(f"{r['model']} on the real VMM for {r['seconds']:.0f} s")
    print(f"{'virtual interrupt':<18} {'sent':>7} {'injected':>8} {'done':>7} {'dropped':>7} "
          f"{'held':>5}   handling time (us): p50 / p99 / max")
    for d, src in zip(r["devices"], r["sources"], strict=True):
        h = d["to_dsr_end"]
        print(f"{d['name']:<18} {src['sent']:>7} {d['injected']:>8} {d['completed']:>7} "
              f"{d['dropped']:>7} {d['pending']:>5}   {_us(h['p50'])} / {_us(h['p99'])} / "
              f"{_us(h['max'])}")
    for t in r["tasks"]:
        resp = t["response"]
        print(f"guest task {t['name']:<12} released {t['releases']:>6} completed "
              f"{t['completed']:>6}   response (us): p50 / max {_us(resp['p50'])} / "
              f"{_us(resp['max'])}")
    for s in r["servers"] or []:
        print(f"server {s['name']:<16} {s['kind']:<11} share {100 * s['share']:5.1f} %")
    stall = r.get("host_stall_ns") or 0
    if stall >= 2_000_000:
        print(f"note: the host stalled the runtime for {stall / 1e6:.1f} ms (other real-time "
              "load on this machine); tails include it")
    if r["error"]:
        print(f"guest error: {r['error']}")
    if args.json:
        args.json.write_text(json.dumps(r, indent=2))
    if args.out:
        from irqlab.compare import vmm_metrics
        from irqlab.model import load

        cfg = load(args.model).sim_config
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "vmm.json").write_text(json.dumps(r, indent=1))
        (args.out / "config.json").write_text(json.dumps(cfg, indent=1))
        (args.out / "metrics.json").write_text(json.dumps(vmm_metrics(r, cfg), indent=1))
        print(f"outputs: {args.out}/metrics.json, config.json, vmm.json")
    return 1 if r["error"] else 0
