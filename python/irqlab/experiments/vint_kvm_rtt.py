"""VINT §VII-C, Figure 10, on the real VMM: UDP round trips to a guest whose
VCPU also runs a busy loop, for Baseline, Baseline_1ms and vINT -- paper |
simulator (the same schemes as ``vint-case-rtt``) | this machine's KVM.

The real run (``irqlab-vmm rtt``): a busy guest VCPU in a deferrable server
with the paper's parameters, a NIC whose DSR costs 30 us and echoes, UDP
requests every 1 to 1.5 ms (open loop, as the simulator's model) from a
client on another CPU; the simulator's VCPU switch overhead is this
machine's measured exit round trip; vINT adds a
deferrable pseudo-VCPU of 2 ms / 10 ms (counter of 100). What differs from
the paper (docs/reproductions.md): no MPlayer in the guest (no guest task
scheduler yet), loopback instead of a wire, and a nested KVM whose exits and
EOI traps cost tens of microseconds, so the paper's 200 us threshold is
reported together with 500 us, at which the paper's claims are checked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from irqlab import plots, vmm
from irqlab.experiments import Check, Result
from irqlab.experiments import vint_case_rtt as sim_rtt
from irqlab.experiments._vint_case import MS, SWITCH_OVERHEAD, US
from irqlab.sim import simulate

NAME = "vint-kvm-rtt"
TITLE = "VINT Figure 10 on the real VMM: UDP round trips, Baseline vs Baseline_1ms vs vINT"

SCHEMES = {"Baseline": "baseline", "Baseline_1ms": "baseline_1ms", "vINT": "vint"}
PAPER_200US = {"Baseline": 50, "Baseline_1ms": 2, "vINT": 95}


def sim_within_200us(scheme: str, duration: int, switch_overhead: int) -> float:
    """The simulator's share of round trips within 200 us (``vint-case-rtt``'s
    model) with the given VCPU switch overhead."""
    cfg = {**sim_rtt.config(scheme, duration), "switch_overhead": switch_overhead}
    v = simulate(cfg).metrics["virqs"][0]
    return 100.0 * dict(v["handled_within"])[200 * US - sim_rtt.WIRE] / max(1, v["handled"])


def run(out_dir: Path, *, quick: bool = False) -> Result:
    seconds = 3 if quick else 20
    duration = (2_000 if quick else 20_000) * MS
    why = vmm.kvm_unavailable()
    # The simulator's switch overhead fed with this machine's measured VM
    # exit round trip (the published estimate when KVM is not usable).
    overhead = SWITCH_OVERHEAD
    if why is None:
        overhead = round(vmm.run("exits")["exit_round_trip_ns"])
    sim = {s: sim_within_200us(s, duration, overhead) for s in SCHEMES}
    real: dict[str, dict[str, Any]] = {}
    if why is None:
        for s, arg in SCHEMES.items():
            real[s] = vmm.run("rtt", "--scheme", arg, "--seconds", str(seconds),
                              timeout=seconds + 60)
    rows = [f"simulator switch overhead: {overhead / 1e3:.1f} us "
            f"({'measured exit round trip' if why is None else 'published estimate'})",
            "KVM: the VMM's round trip (request in the top half -> echo out, + 30 us wire) "
            "| the client's (loopback and client scheduling included)",
            f"{'scheme':<13} {'paper':>6} {'sim':>6} {'200us':>6} {'500us':>6} {'p50':>6} "
            f"{'p95':>6} | {'200us':>6} {'500us':>6} {'p50':>6} {'p95':>6}  stall"]
    for s in SCHEMES:
        r = real.get(s)
        fmt = "{:>6.1f} {:>6.1f} {:>6.0f} {:>6.0f} | {:>6.1f} {:>6.1f} {:>6.0f} {:>6.0f}  {}"
        kvm = (fmt.format(
            r["vmm_within_200us"], r["vmm_within_500us"], r["vmm_p50_ns"] / 1e3,
            r["vmm_p95_ns"] / 1e3, r["within_200us"], r["within_500us"], r["p50_ns"] / 1e3,
            r["p95_ns"] / 1e3, f"{(r['host_stall_ns'] or 0) / 1e6:.1f} ms")
            if r else f"{'skipped':>6}")
        rows.append(f"{s:<13} {PAPER_200US[s]:>6} {sim[s]:>6.1f} {kvm}")
    rows.append("(% within; latencies in us; stall: the longest host stall of the runtime "
                "(supervisor timer or top half late), another user's real-time load)")
    if why is not None:
        rows.append(f"real VMM skipped: KVM unavailable: {why}")
    checks = [
        Check("sim: vINT round trips within 200 us (%)", 95, round(sim["vINT"], 1), ">= 90",
              sim["vINT"] >= 90),
        Check("sim: Baseline within 200 us (%)", 50, round(sim["Baseline"], 1), "35 .. 65",
              35 <= sim["Baseline"] <= 65),
    ]
    files: list[str] = []
    if real:
        b, v = real["Baseline"], real["vINT"]
        checks += [
            # This machine's round trip without contention is 100-230 us
            # (nested KVM: exits and EOI traps cost tens of us, docs/vmm.md),
            # so the paper's 200 us claims are checked at 500 us, on the
            # VMM's round trip (the simulator's quantity).
            Check("KVM: Baseline round trips within 500 us (%)", PAPER_200US["Baseline"],
                  round(b["vmm_within_500us"], 1), "30 .. 65",
                  30 <= b["vmm_within_500us"] <= 65),
            Check("KVM: vINT round trips within 500 us (%)", PAPER_200US["vINT"],
                  round(v["vmm_within_500us"], 1), ">= 90", v["vmm_within_500us"] >= 90),
            Check("KVM (500 us) vs simulator (200 us), Baseline (points apart)", 0,
                  round(b["vmm_within_500us"] - sim["Baseline"], 1), "-15 .. 15",
                  abs(b["vmm_within_500us"] - sim["Baseline"]) <= 15),
            Check("KVM: vINT's p95 round trip against Baseline's (us)", "vINT << Baseline",
                  f"{v['vmm_p95_ns'] / 1e3:.0f} vs {b['vmm_p95_ns'] / 1e3:.0f}",
                  "vINT < Baseline / 4", v["vmm_p95_ns"] < b["vmm_p95_ns"] / 4),
            Check("KVM: every request answered or counted lost (received = injected + "
                  "dropped + pending)", True,
                  all(r["received"] == r["injected"] + r["dropped"] + r["pending"]
                      for r in real.values()), "exact",
                  all(r["received"] == r["injected"] + r["dropped"] + r["pending"]
                      for r in real.values())),
        ]
        png = plots.lines(out_dir / "vint_kvm_rtt.png",
                          {s: ([x for x, _ in r["cdf_us_pct"]], [y for _, y in r["cdf_us_pct"]])
                           for s, r in real.items()},
                          title="UDP round trips on the real VMM (VINT Fig. 10)",
                          xlabel="round trip (us)", ylabel="% of round trips within")
        files.append(str(png))
    data = {"sim_within_200us": sim, "switch_overhead_ns": overhead,
            "kvm": {s: {k: v for k, v in r.items() if k != "cdf_us_pct"} for s, r in real.items()},
            "kvm_skipped": why}
    return Result(NAME, checks, "\n".join(rows), files, data)
