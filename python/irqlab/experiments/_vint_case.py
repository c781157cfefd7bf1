"""The virtual NIC interrupt shared by the VINT case-study experiments.

VINT §VI: one physical NIC interrupt forwarded to a guest as a virtual
interrupt (guest ISR + EOI + DSR); under vINT it gets its own deferrable
pseudo-VCPU of `pseudo_budget` per 10 ms (VINT §V-A).
"""

from __future__ import annotations

from typing import Any

US = 1_000
MS = 1_000_000


def vnic_virq(min_interarrival: int, pseudo_budget: int | None, **extra: Any) -> dict[str, Any]:
    """The `vnic` virq config; `pseudo_budget=None` leaves it unmanaged (Baseline)."""
    virq: dict[str, Any] = {"name": "vnic", "phys": 0, "vcpu": 0, "isr": 10 * US, "eoi": 2 * US,
                            "dsr": 30 * US, "dsr_priority": 10,
                            "min_interarrival": min_interarrival, **extra}
    if pseudo_budget is not None:
        virq["pseudo"] = {"deferrable": True, "budget": pseudo_budget, "period": 10 * MS,
                          "rank": 1}
    return virq
