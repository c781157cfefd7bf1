"""``irqlab check MODEL.yaml``: validate a model and print a summary.

Exit 0 when valid (warnings are printed), 2 with every error on stderr
when not.
"""

from __future__ import annotations

import argparse
import contextlib
from collections import defaultdict
from fractions import Fraction
from pathlib import Path

from irqlab.analysis import model_bounds
from irqlab.model import load


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="validate a system model and summarize it")
    p.add_argument("model", type=Path, help="model file (YAML)")
    p.set_defaults(func=run)


def utilization(server: dict) -> Fraction | None:
    """C/T of a budgeted server, U of a PIBS one (from the resolved config)."""
    if server["policy"] == "pibs":
        return Fraction(server["num"], server["den"])
    c = server.get("budget") or server.get("runtime")
    return Fraction(c, server["period"]) if c and server.get("period") else None


def hypervisor_summary(model: dict, cfg: dict) -> None:
    """VCPUs and pseudo-VCPUs per CPU (with the resolved `auto` budgets and
    ranks), guest tasks, physical and virtual interrupts of a `vms` model."""
    per_cpu: dict[int, list[str]] = defaultdict(list)
    for s in cfg["servers"]:
        u = utilization(s)
        per_cpu[s["cpu"]].append(f"{s['name']} ({s['policy']} {float(u) * 100:.2f}%)")
    for v in cfg["virqs"]:
        p = v.get("pseudo")
        if p:
            cpu = cfg["servers"][v["vcpu"]]["cpu"]
            policy = "deferrable" if p["deferrable"] else "sporadic"
            per_cpu[cpu].append(f"{v['name']}.pseudo (pseudo-VCPU, {policy} "
                                f"{p['budget'] / p['period'] * 100:.2f}%, rank {p['rank']})")
    for cpu, vs in sorted(per_cpu.items()):
        print(f"  cpu {cpu}: " + ", ".join(vs))
    vms = model["vms"]
    dsr = {t: v["name"] for g in vms["guests"] for v in g["virtual_interrupts"] for t in v["dsr"]}
    tasks = [f"{t['name']}" + (f" (DSR of {dsr[t['name']]})" if t["name"] in dsr else "")
             for g in vms["guests"] for c in g["vcpus"] for t in c["tasks"]]
    print(f"  guest tasks: {', '.join(tasks) or '-'}")
    phys = ", ".join(f"{p['name']} (cpu {p['cpu']})" for p in vms["physical_interrupts"])
    print(f"  physical interrupts: {phys or '-'}")
    virqs = ", ".join(f"{v['name']} ({v['physical']} -> {v['vcpu']}"
                      + (", vINT)" if v.get("vint") is not None else ")")
                      for g in vms["guests"] for v in g["virtual_interrupts"])
    print(f"  virtual interrupts: {virqs or '-'}")


def check_costs(path: Path, text: str) -> int:
    """A costs file (``irqlab calibrate --out``): validate and summarize."""
    import json

    from irqlab._native import model as _model

    c = json.loads(_model.load_costs(text)[0])
    o = c["origin"]
    kernel = c.get("kernel") or {}
    measured = [k for k, v in c.items() if isinstance(v, dict) and "samples" in v]
    print(f"{path}: valid costs of {o['host']} ({o['kernel']}, {o['date']})")
    print(f"  measured: {', '.join(measured) or '-'}")
    nets = [p for p in ("loopback", "nic") if p in kernel]
    print(f"  kernel: {', '.join(nets) or '-'} ({kernel.get('tracing', 'not traced')})")
    return 0


def run(args: argparse.Namespace) -> int:
    from irqlab._native import model as _model
    from irqlab.model import MAX_MODEL_BYTES, read_input

    text = None
    with contextlib.suppress(OSError, ValueError):  # load() reports these
        text = read_input(args.model, MAX_MODEL_BYTES)
    if text is not None and _model.is_costs_file(text):
        return check_costs(args.model, text)
    m = load(args.model)
    model, cfg = m.model, m.sim_config
    print(f"{args.model}: valid ({model['machine']['path']} path, {cfg['cpus']} CPU(s))")
    if model["machine"]["path"] == "hypervisor":
        hypervisor_summary(model, cfg)
        for w in m.warnings:
            print(f"  warning: {w}")
        return 0
    per_cpu: dict[int, list[str]] = defaultdict(list)
    n = len(model["vcpus"])
    for v, server in zip(model["vcpus"], cfg["servers"][:n], strict=True):
        u = utilization(server)
        share = f" {float(u) * 100:.2f}%" if u is not None else ""
        io = f" for {v['io_class']}" if v.get("io_class") else ""
        per_cpu[v["cpu"]].append(f"{v['name']} ({v['kind']}, {v['policy']}{share}{io})")
    # The servers of user upcalls (devices[].upcall), which the model
    # lowers after its VCPUs.
    for server in cfg["servers"][n:]:
        u = utilization(server)
        share = f" {float(u) * 100:.2f}%" if u is not None else ""
        per_cpu[server["cpu"]].append(f"{server['name']} (upcall, sporadic{share})")
    for cpu, vs in sorted(per_cpu.items()):
        print(f"  cpu {cpu}: " + ", ".join(vs))
    print(f"  tasks: {', '.join(t['name'] for t in model['tasks']) or '-'}")
    devices = ", ".join(f"{d['name']} ({d['kind']})" for d in model["devices"])
    print(f"  devices: {devices or '-'}")
    print(f"  I/O classes: {', '.join(c['name'] for c in cfg['classes']) or '-'}")
    for w in m.warnings + interrupt_load_warnings(cfg):
        print(f"  warning: {w}")
    return 0


def interrupt_load_warnings(cfg: dict) -> list[str]:
    """A warning per CPU whose interrupt work alone (top halves at their
    declared arrival bound; on linux bottom halves too) exceeds the CPU."""
    out = []
    for c in model_bounds(cfg)["cpus"]:
        load = c["interrupt_load"]
        if load is not None and load > 1.0:
            devices = ", ".join(x["device"] for x in c["interrupts"])
            out.append(f"cpu {c['cpu']}: the interrupt load alone is {load * 100:.0f}% of the CPU "
                       f"({devices}): every task on it starves")
    return out
