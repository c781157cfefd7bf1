"""The scheduling core, stepped by hand from Python (``irqlab._native.core``).

Times are integer nanoseconds; :func:`us` and :func:`ms` convert. I/O VCPU
utilizations are exact fractions (``Fraction(1, 10)`` or :func:`percent`).
Invalid arguments raise ``ValueError`` with the core's message, e.g.
``budget 12ms exceeds period 10ms``.

Example (QUEST-VCPU Figure 2)::

    from irqlab.core import Scheduler, percent
    s = Scheduler()
    io = s.add_pibs("iovcpu", percent(50))
    bh = s.add_thread("bh", io)
    s.wakeup(0, bh, inherit_period=4)
    s.schedule(0)          # Dispatch(server=0, thread=0, ..., next_update=2)
"""

from __future__ import annotations

from fractions import Fraction

from irqlab._native.core import Dispatch, LatencyRecorder, Scheduler

__all__ = ["Dispatch", "LatencyRecorder", "Scheduler", "us", "ms", "percent"]


def us(x: float) -> int:
    """Microseconds to integer nanoseconds."""
    return round(x * 1_000)


def ms(x: float) -> int:
    """Milliseconds to integer nanoseconds."""
    return round(x * 1_000_000)


def percent(p: int | str | Fraction) -> Fraction:
    """An exact utilization from a percentage: ``percent(1)``, ``percent("0.5")``."""
    return Fraction(p) / 100
