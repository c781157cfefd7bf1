"""VINT §VII-C, Figure 10: UDP round-trip latency of a network receiver in a
VCPU that also runs a video decoder and a busy loop.

One guest VCPU on core 1 (deferrable, as in the KVM of Linux/RK): the
netperf receiver and the guest softirq at the highest guest priority (the
DSR of the NIC's virtual interrupt, 30 us), MPlayer below it (29.97 fps,
6 ms per frame), a busy loop at the lowest priority. UDP requests arrive
every 1 to 1.5 ms (uniformly); a round trip is the interrupt handling time
(physical arrival -> end of the DSR, which sends the reply) plus 30 us on
the wire. Schemes (the paper's parameters): Baseline 4 ms / 10 ms,
Baseline_1ms 0.4 ms / 1 ms, vINT: VCPU 2 ms / 10 ms plus a pseudo-VCPU of
2 ms / 10 ms (the interrupt declared at a 100 us minimum inter-arrival time:
a counter of 100). Every scheme pays the same VCPU switch overhead
(`_vint_case.SWITCH_OVERHEAD`) each time the VCPU's context is loaded after
idle: Baseline once per 10 ms, Baseline_1ms once per 1 ms, vINT's
pseudo-VCPU whenever a request finds the VCPU out of budget. Claim: with
vINT 95 % of round trips finish within 200 us, Baseline about 50 %,
Baseline_1ms about 2 % (the paper blames the overhead of its shorter
period).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from irqlab import plots
from irqlab.experiments import Check, Result
from irqlab.experiments._vint_case import MS, SWITCH_OVERHEAD, US, vnic_virq
from irqlab.experiments.claims import falsify, key_of, within
from irqlab.sim import simulate

NAME = "vint-case-rtt"
TITLE = "VINT Figure 10: UDP round-trip latency, Baseline vs Baseline_1ms vs vINT"
SECONDS = {"quick": 2, "full": 5}  # measured: see irqlab.experiments

WIRE = 30 * US
SCHEMES = {
    "Baseline": (4 * MS, 10 * MS, False),
    "Baseline_1ms": (400 * US, 1 * MS, False),
    "vINT": (2 * MS, 10 * MS, True),
}


FALSIFIERS = {
    "no-vint": "vINT's scheme without its pseudo-VCPU (VCPU 2 ms / 10 ms only)",
    "vint": "the baselines given vINT's pseudo-VCPU (2 ms / 10 ms)",
}


def config(scheme: str, duration: int, variant: str | None = None) -> dict[str, Any]:
    budget, period, vint = SCHEMES[scheme]
    vint = {"no-vint": False, "vint": True}.get(variant or "", vint)
    virq = vnic_virq(100 * US, 2 * MS if vint else None, priority=1)
    return {
        "path": "hypervisor", "duration": duration, "window": duration, "seed": 10,
        "switch_overhead": SWITCH_OVERHEAD,
        "servers": [{"name": "v1", "policy": "deferrable", "budget": budget, "period": period,
                     "rank": 100}],
        "tasks": [
            {"name": "mplayer", "server": 0, "priority": 5,
             "release": {"kind": "periodic", "period": 33_367 * US},
             "program": [{"op": "compute", "ns": 6 * MS}]},
            {"name": "busyloop", "server": 0, "priority": 1, "release": {"kind": "once"},
             "program": [{"op": "loop", "body": [{"op": "compute", "ns": 10 * MS}]}]},
        ],
        "devices": [{"name": "nic", "class": 0, "kind": "generic", "min_interarrival": 1 * MS,
                     "jitter": 500 * US, "isr": 5 * US, "dsr": 0}],
        "virqs": [virq],
    }


def cdf(scheme: str, duration: int, variant: str | None = None,
        switch_overhead: int = SWITCH_OVERHEAD) -> tuple[list[float], list[float], float]:
    cfg = {**config(scheme, duration, variant), "switch_overhead": switch_overhead}
    v = simulate(cfg).metrics["virqs"][0]
    n = max(1, v["handled"])
    xs = [(b + WIRE) / US for b, _ in v["handled_within"]]
    ys = [100.0 * c / n for _, c in v["handled_within"]]
    # round trip <= 200 us  <=>  handling <= 200 - 30 = 170 us
    frac = 100.0 * dict(v["handled_within"])[200_000 - WIRE] / n
    return xs, ys, frac


def measure(duration: int, variant: str | None,
            switch_overhead: int = SWITCH_OVERHEAD) -> dict[str, Any]:
    """Per scheme the CDF and the share within 200 us; a falsifier changes
    only the schemes its claims are about."""
    f = key_of(FALSIFIERS, variant)
    res = {}
    for s in SCHEMES:
        v = None
        if f == "no-vint" and s == "vINT":
            v = "no-vint"
        elif f == "vint" and s != "vINT":
            v = "vint"
        res[s] = cdf(s, duration, v, switch_overhead)
    return res


def judge_within(f: dict[str, float], prefix: str = "") -> list[Check]:
    return [
        within(f"{prefix}vINT: round trips within 200 us (%)", 95, f["vINT"], 85, 100,
               shown=round(f["vINT"], 1), falsifier=FALSIFIERS["no-vint"]),
        within(f"{prefix}Baseline: round trips within 200 us (%)", 50, f["Baseline"], 35, 65,
               shown=round(f["Baseline"], 1), falsifier=FALSIFIERS["vint"]),
        within(f"{prefix}Baseline_1ms: round trips within 200 us (%)", 2, f["Baseline_1ms"], 0,
               10, shown=round(f["Baseline_1ms"], 1), falsifier=FALSIFIERS["vint"],
               note="a 0.4 ms / 1 ms VCPU has budget 40 % of the time, like Baseline's 4 ms / "
                    "10 ms, but its gaps are 0.6 ms instead of 6 ms, so irqlab gives it about "
                    "Baseline's share. The paper's 2 % blames 'the overhead of its shorter "
                    "period'; irqlab charges the VCPU switch (10 us) once per 1 ms period, and "
                    "no per-switch cost reaches 2 % without vINT collapsing too "
                    "(docs/reproductions.md, the switch-overhead table)."),
    ]


def run(out_dir: Path, *, quick: bool = False) -> Result:
    duration = 5_000 * MS if quick else 60_000 * MS
    res, checks = falsify(lambda v: measure(duration, v),
                          lambda r: judge_within({s: x[2] for s, x in r.items()}))
    png = plots.lines(out_dir / "vint_case_rtt.png",
                      {s: (x, y) for s, (x, y, _) in res.items()},
                      title="UDP round-trip latency CDF (VINT Fig. 10)",
                      xlabel="round trip (us)", ylabel="% of round trips within")
    f = {s: r[2] for s, r in res.items()}
    table = "\n".join(f"{s:<13} {v:5.1f} % of round trips within 200 us" for s, v in f.items())
    return Result(NAME, checks, table, [str(png)], {"within_200us": f})
