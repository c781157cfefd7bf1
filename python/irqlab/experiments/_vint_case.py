"""What the VINT case-study experiments share: the virtual NIC interrupt
and the hypervisor's VCPU switch overhead.

VINT §VI: one physical NIC interrupt forwarded to a guest as a virtual
interrupt (guest ISR + EOI + DSR); under vINT it gets its own deferrable
pseudo-VCPU of `pseudo_budget` per 10 ms (VINT §V-A).

`SWITCH_OVERHEAD`: what loading a VCPU's context after idle (or after
another VCPU) costs on KVM -- VM entry, the host's context switch, the
refill of the guest's cache and TLB state -- charged to the VCPU's budget,
the same physical cost in every scheme. 10 us is the upper end of published
measurements (a world switch of about 2,000 cycles and an indirect cost up
to an order of magnitude above it, a host scheduler round trip of a few us,
VM context switches of 1.4 to 9 us), not a measurement of the paper's
machine nor a fit to its figures; docs/reproductions.md gives the sources
and what other values do.
"""

from __future__ import annotations

from typing import Any

US = 1_000
MS = 1_000_000
SWITCH_OVERHEAD = 10 * US


def vnic_virq(min_interarrival: int, pseudo_budget: int | None, **extra: Any) -> dict[str, Any]:
    """The `vnic` virq config; `pseudo_budget=None` leaves it unmanaged (Baseline)."""
    virq: dict[str, Any] = {"name": "vnic", "phys": 0, "vcpu": 0, "isr": 10 * US, "eoi": 2 * US,
                            "dsr": 30 * US, "dsr_priority": 10,
                            "min_interarrival": min_interarrival, **extra}
    if pseudo_budget is not None:
        virq["pseudo"] = {"deferrable": True, "budget": pseudo_budget, "period": 10 * MS,
                          "rank": 1}
    return virq
