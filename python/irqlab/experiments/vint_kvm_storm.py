"""VINT §VII-C, Figure 12, on the real VMM: a video decoder's frame rate under a
virtual interrupt storm, without and with vINT -- paper | simulator (the same
system as ``vint-case-storm``) | this machine's KVM.

The real run (``irqlab-vmm storm``, ``irqlab_vmm::case::storm``): one guest
VCPU (deferrable, 10 ms period) running the guest kernel's scheduler: a
decoder task (29.97 fps, 6 ms of work per frame, priority 5) released by the
guest's LAPIC timer, and a busy loop; the storm is a host timer every 60 us
whose virtual interrupt's DSR works 40 us per event at priority 10 (the case
study's 10 us ISR and 30 us DSR). Baseline: the VCPU has x % of its period;
vINT: x - 20 %, plus a deferrable pseudo-VCPU of 2 ms / 10 ms whose counter
allows 10 injections per period (the interrupt declared at 1 ms).

Two simulator columns: the ``vint-case-storm`` model with the VCPU switch
overhead set to this machine's measured exit round trip ("sim"), and the same
model with each storm event's guest cost set to what one event cost the
VCPU here ("sim, measured cost": the Baseline run's VCPU CPU time per
completed storm event at the highest utilization, where the storm takes the
whole budget). A guest instruction costs about 0.5 us on this nested KVM
(docs/vmm.md), so the guest ISR around the 40 us of DSR work costs several
times the paper's 12 us; the second column is the prediction for the system
that actually ran.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from irqlab import plots, vmm
from irqlab.experiments import Check, Result
from irqlab.experiments import vint_case_storm as sim_storm
from irqlab.experiments._vint_case import MS, SWITCH_OVERHEAD, US

NAME = "vint-kvm-storm"
TITLE = "VINT Figure 12 on the real VMM: decoder frame rate under an interrupt storm"

VARIANTS = {"Baseline, no storm": ("baseline", False), "Baseline": ("baseline", True),
            "vINT": ("vint", True)}
COUNTER = 10  # injections per 10 ms period of the pseudo-VCPU (VINT §V-B)


def sim_fps(util: int, label: str, duration: int, overhead: int,
            event_cost: int | None = None) -> float:
    """The simulator's frame rate for one point; ``event_cost``: the guest's
    ISR + EOI + DSR per storm event (the model's 42 us when None)."""
    scheme, storm = VARIANTS[label]
    cfg: dict[str, Any] = {**sim_storm.config(util, scheme == "vint", storm, duration),
                           "switch_overhead": overhead}
    if event_cost is not None:
        virq = cfg["virqs"][0]
        virq["isr"] = max(1 * US, event_cost - virq["eoi"] - virq["dsr"])
    return sim_storm.fps(cfg)


def accounted(r: dict[str, Any]) -> bool:
    return all(d["received"] == d["injected"] + d["dropped"] + d["pending"]
               and d["injected"] == d["completed"] + d["in_guest"] for d in r["devices"])


def run(out_dir: Path, *, quick: bool = False) -> Result:
    utils = [40, 80] if quick else sim_storm.UTILS
    seconds = 2 if quick else 5
    duration = (2_000 if quick else 10_000) * MS
    why = vmm.kvm_unavailable()
    # The simulator's switch overhead fed with this machine's measured VM
    # exit round trip (the published estimate when KVM is not usable).
    overhead = vmm.switch_overhead(SWITCH_OVERHEAD)
    real: dict[str, list[dict[str, Any]]] = {}
    if why is None:
        for label, (scheme, storm) in VARIANTS.items():
            real[label] = [
                vmm.run("storm", "--scheme", scheme, "--util", str(u), "--seconds",
                        str(seconds), *([] if storm else ["--no-storm"]), timeout=seconds + 60)
                for u in utils]
    # One storm event's cost to the VCPU here: the saturated Baseline run.
    event_cost = None
    if real:
        top = real["Baseline"][-1]
        vcpu = next(s for s in top["servers"] if s["name"] == "vcpu0")
        event_cost = round(vcpu["cpu_time_ns"] / max(1, top["devices"][0]["completed"]))
    sim = {k: [sim_fps(u, k, duration, overhead) for u in utils] for k in VARIANTS}
    sim_m = ({k: [sim_fps(u, k, duration, overhead, event_cost) for u in utils]
              for k in VARIANTS} if event_cost is not None else {})
    kvm = {k: [r["fps"] for r in rs] for k, rs in real.items()}

    rows = [f"simulator switch overhead: {overhead / 1e3:.1f} us "
            f"({'measured exit round trip' if why is None else 'published estimate'})"]
    if event_cost is not None:
        rows.append(f"one storm event's cost to the VCPU here: {event_cost / 1e3:.0f} us "
                    "(the model: 10 us ISR + 2 us EOI + 30 us DSR = 42 us)")
    head = f"{'variant':<20} {'util':>4} {'sim':>6}"
    head += f" {'sim(m)':>7} {'KVM':>6} {'released':>8} {'storm inj/recv':>15} {'stall':>8}"
    rows.append(head + "   (frames per second)")
    for k in VARIANTS:
        for i, u in enumerate(utils):
            line = f"{k:<20} {u:>3}% {sim[k][i]:>6.1f}"
            if real:
                r = real[k][i]
                dev = r["devices"][0] if r["devices"] else None
                inj = f"{dev['injected']}/{dev['received']}" if dev else "-"
                stall = f"{(r['host_stall_ns'] or 0) / 1e6:.1f} ms"
                line += (f" {sim_m[k][i]:>7.1f} {r['fps']:>6.1f} {r['frames_released']:>8} "
                         f"{inj:>15} {stall:>8}")
            rows.append(line)
    if why is not None:
        rows.append(f"real VMM skipped: KVM unavailable: {why}")

    quiet, base, vint = (sim["Baseline, no storm"], sim["Baseline"], sim["vINT"])
    checks = [
        Check("sim (42 us per event, measured switch overhead): Baseline drops to about "
              "one-fifth at 80 %", "~1/5",
              f"{base[-1]:.1f} of {quiet[-1]:.1f} fps", "<= 1/3", base[-1] <= quiet[-1] / 3),
        Check("sim (42 us per event, measured switch overhead): vINT stays close to the rate "
              "without the storm at 80 %", "close",
              f"{vint[-1]:.1f} of {quiet[-1]:.1f} fps", ">= 90 %", vint[-1] >= 0.9 * quiet[-1]),
    ]
    files: list[str] = []
    if real:
        kq, kb, kv = kvm["Baseline, no storm"], kvm["Baseline"], kvm["vINT"]
        mb, mv = sim_m["Baseline"], sim_m["vINT"]
        bounded = all(r["devices"][0]["injected"] <= COUNTER * (r["wall_ns"] // (10 * MS) + 2)
                      for r in real["vINT"])
        checks += [
            Check("KVM: Baseline drops to about one-fifth at 80 %", "~1/5",
                  f"{kb[-1]:.1f} of {kq[-1]:.1f} fps", "<= 1/3", kb[-1] <= kq[-1] / 3),
            Check("KVM: vINT stays close to the rate without the storm at 80 %", "close",
                  f"{kv[-1]:.1f} of {kq[-1]:.1f} fps", ">= 90 %", kv[-1] >= 0.9 * kq[-1]),
            Check("KVM vs sim (measured cost), vINT at 80 % (fps apart)", 0,
                  round(kv[-1] - mv[-1], 1), "-3 .. 3", abs(kv[-1] - mv[-1]) <= 3),
            Check("KVM vs sim (measured cost), Baseline at 80 % (fps apart)", 0,
                  round(kb[-1] - mb[-1], 1), "-3 .. 3", abs(kb[-1] - mb[-1]) <= 3),
            Check("KVM: vINT's injections within its counter (10 per 10 ms)", True, bounded,
                  "every run", bounded),
            Check("KVM: every storm event accounted (received = injected + dropped + "
                  "pending; injected = completed + in guest)", True,
                  all(accounted(r) for rs in real.values() for r in rs), "exact",
                  all(accounted(r) for rs in real.values() for r in rs)),
        ]
        png = plots.lines(out_dir / "vint_kvm_storm.png",
                          {**{f"KVM {k}": (utils, v) for k, v in kvm.items()},
                           **{f"sim {k}": (utils, v) for k, v in sim.items()}},
                          title="Decoder frame rate under an interrupt storm, real VMM "
                                "(VINT Fig. 12)",
                          xlabel="VCPU utilization (%)", ylabel="frames per second")
        files.append(str(png))
    data = {"utils": utils, "switch_overhead_ns": overhead, "event_cost_ns": event_cost,
            "sim_fps": sim, "sim_measured_cost_fps": sim_m, "kvm_fps": kvm,
            "kvm": {k: [{x: y for x, y in r.items() if x != "devices"} | {
                "devices": r["devices"]} for r in rs] for k, rs in real.items()},
            "kvm_skipped": why}
    return Result(NAME, checks, "\n".join(rows), files, data)
