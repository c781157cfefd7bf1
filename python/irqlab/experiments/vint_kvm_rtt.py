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
from irqlab.experiments._vint_case import MS, SWITCH_OVERHEAD
from irqlab.experiments.claims import falsify, key_of, ordering, within

NAME = "vint-kvm-rtt"
MEASURED = True  # runs the real VMM: tests/python/test_vmm.py
TITLE = "VINT Figure 10 on the real VMM: UDP round trips, Baseline vs Baseline_1ms vs vINT"
SECONDS = {"quick": 15, "full": 64}  # measured: see irqlab.experiments
OPTIONAL = ("/dev/kvm", "real threads", "cargo", "checkout")

SCHEMES = {"Baseline": "baseline", "Baseline_1ms": "baseline_1ms", "vINT": "vint"}
PAPER_200US = {"Baseline": 50, "Baseline_1ms": 2, "vINT": 95}


FALSIFIERS = {
    **sim_rtt.FALSIFIERS,
    "cross": "the real vINT run compared with the simulated Baseline",
    "real-vint": "the real vINT run in Baseline's place",
    "real-base": "the real Baseline run in vINT's place",
}


def measure(duration: int, variant: str | None, overhead: int,
            real: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The simulator's shares within 200 us and the real runs; a falsifier
    re-runs the simulator's variant and puts the real run of the other
    scheme in place of the one its claim is about (no second real run)."""
    f = key_of(FALSIFIERS, variant)
    sim_f = FALSIFIERS[f] if f in sim_rtt.FALSIFIERS else None
    sim = {s: x[2] for s, x in sim_rtt.measure(duration, sim_f, overhead).items()}
    r = dict(real)
    if r and f == "real-base":
        r["vINT"] = real["Baseline"]
    elif r and f in ("real-vint", "cross"):
        r["Baseline"] = real["vINT"]
    return {"sim": sim, "real": r}


def judge(d: dict[str, Any]) -> list[Check]:
    sim, real = d["sim"], d["real"]
    checks = sim_rtt.judge_within(sim, "sim: ")[:2]
    if real:
        b, v = real["Baseline"], real["vINT"]
        # This machine's round trip without contention is 100-230 us (nested
        # KVM: exits and EOI traps cost tens of us, docs/vmm.md), so the
        # paper's 200 us claims are checked at 500 us, on the VMM's round
        # trip (the simulator's quantity).
        checks += [
            within("KVM: Baseline round trips within 500 us (%)", PAPER_200US["Baseline"],
                   b["vmm_within_500us"], 30, 65, shown=round(b["vmm_within_500us"], 1),
                   falsifier=FALSIFIERS["real-vint"]),
            within("KVM: vINT round trips within 500 us (%)", PAPER_200US["vINT"],
                   v["vmm_within_500us"], 90, 100, shown=round(v["vmm_within_500us"], 1),
                   falsifier=FALSIFIERS["real-base"]),
            within("KVM (500 us) vs simulator (200 us), Baseline (points apart)", 0,
                   b["vmm_within_500us"] - sim["Baseline"], -15, 15,
                   shown=round(b["vmm_within_500us"] - sim["Baseline"], 1),
                   falsifier=FALSIFIERS["cross"]),
            ordering("KVM: vINT's p95 round trip against Baseline's (Baseline / vINT)",
                     "vINT << Baseline", b["vmm_p95_ns"] / max(v["vmm_p95_ns"], 1.0), 4,
                     what="Baseline / vINT",
                     shown=f"{v['vmm_p95_ns'] / 1e3:.0f} vs {b['vmm_p95_ns'] / 1e3:.0f} us",
                     falsifier=FALSIFIERS["real-base"]),
        ]
    return checks


def run(out_dir: Path, *, quick: bool = False) -> Result:
    seconds = 3 if quick else 20
    duration = (2_000 if quick else 20_000) * MS
    why = vmm.kvm_unavailable()
    # The simulator's switch overhead fed with this machine's measured VM
    # exit round trip (the published estimate when KVM is not usable).
    overhead = vmm.switch_overhead(SWITCH_OVERHEAD)
    real: dict[str, dict[str, Any]] = {}
    if why is None:
        for s, arg in SCHEMES.items():
            real[s] = vmm.run("rtt", "--scheme", arg, "--seconds", str(seconds),
                              timeout=seconds + 60)
    d, checks = falsify(lambda v: measure(duration, v, overhead, real), judge)
    sim = d["sim"]
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
    if real:
        # an accounting identity of the VMM, not a claim of the paper
        ok = all(r["received"] == r["injected"] + r["dropped"] + r["pending"]
                 for r in real.values())
        rows.append(f"every request answered or counted lost (received = injected + dropped "
                    f"+ pending): {'yes' if ok else 'NO'}")
    if why is not None:
        rows.append(f"real VMM skipped: KVM unavailable: {why}")
    files: list[str] = []
    if real:
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
