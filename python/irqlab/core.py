"""The scheduling core, stepped by hand from Python (``irqlab._native.core``).

Times are integer nanoseconds; :func:`us` and :func:`ms` convert. I/O VCPU
utilizations are exact fractions (``Fraction(1, 10)`` or :func:`percent`).
Invalid arguments raise ``ValueError`` with the core's message, e.g.
``budget 12ms exceeds period 10ms``; the checks made here name the argument
and the rule (``budget: -1 must be a non-negative integer (ns)``) -- a
negative or oversized integer, a duplicate server name, a PIBS wake-up with
no period to inherit -- instead of the binding's bare ``OverflowError``.

Example (QUEST-VCPU Figure 2)::

    from irqlab.core import Scheduler, percent
    s = Scheduler()
    io = s.add_pibs("iovcpu", percent(50))
    bh = s.add_thread("bh", io)
    s.wakeup(0, bh, inherit_period=4)
    s.schedule(0)          # Dispatch(server=0, thread=0, ..., next_update=2)
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from irqlab._native import core as _core
from irqlab._native.core import Dispatch

# Arguments that are not unsigned integers.
_NOT_UINT = {"self", "name", "utilization", "inherit", "background", "q"}
# Unsigned 32-bit arguments.
_U32 = {"priority"}
# Largest LatencyRecorder capacity (samples kept; the IP keeps 512).
MAX_RECORDER_CAPACITY = 1 << 20


def _check_uint(arg: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        return  # the binding raises TypeError naming the argument
    if value < 0:
        raise ValueError(f"{arg}: {value} must be a non-negative integer")
    bits = 32 if arg in _U32 else 64
    if value >= 1 << bits:
        raise ValueError(f"{arg}: {value} must be below 2**{bits}")


def _checked(method: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a native method: unsigned-integer arguments are checked by name."""
    sig = inspect.signature(method)

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{method.__name__}: {e}") from None
        for arg, value in bound.arguments.items():
            if arg not in _NOT_UINT:
                _check_uint(arg, value)
        return method(*args, **kwargs)

    return wrapper


class Scheduler(_core.Scheduler):
    """One physical CPU's scheduler (QUEST-VCPU Alg. 1-2), with argument
    checks: server names are unique; a thread of a PIBS server wakes with
    ``inherit_period`` unless the server has a period already (Alg. 7)."""

    def _unique(self, name: str) -> None:
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"name: {name!r} must be a non-empty string")
        if any(self.server_name(i) == name for i in range(self.num_servers)):
            raise ValueError(f"name: {name!r} is used by another server")

    def wakeup(self, now: int, thread: int, inherit_period: int | None = None) -> bool:
        """QUEST-VCPU Alg. 2: ``thread`` becomes runnable at ``now`` (ns);
        a thread of a PIBS server takes ``inherit_period`` (ns, the period
        of the Main VCPU it serves). True when ``schedule`` must be called
        now (preemption)."""
        if inherit_period is None and isinstance(thread, int) and thread >= 0:
            server = self._thread_server.get(thread)
            if server is not None:
                st = self.server_state(server)
                if st["kind"] == "pibs" and st["inherited_period"] is None:
                    raise ValueError(
                        f"inherit_period: required to wake thread {thread} of PIBS server "
                        f"{st['name']!r}, which has no period to inherit yet (QUEST-VCPU "
                        "Alg. 7: the I/O VCPU takes the period of the Main VCPU it serves)")
        return _WAKEUP(self, now, thread, inherit_period)

    def add_thread(self, name: str, server: int, priority: int = 1) -> int:
        """A thread of ``server`` (starts blocked; higher ``priority`` is
        more urgent); returns its id."""
        t = _ADD_THREAD(self, name, server, priority)
        self._thread_server[t] = server
        return t

    @property
    def _thread_server(self) -> dict[int, int]:
        d = self.__dict__.get("_threads")
        if d is None:
            d = self.__dict__["_threads"] = {}
        return d


_WAKEUP = _checked(_core.Scheduler.wakeup)
_ADD_THREAD = _checked(_core.Scheduler.add_thread)


def _add_server(method: Callable[..., Any]) -> Callable[..., Any]:
    checked = _checked(method)

    @functools.wraps(method)
    def wrapper(self: Scheduler, name: str, *args: Any, **kwargs: Any) -> Any:
        self._unique(name)
        return checked(self, name, *args, **kwargs)

    return wrapper


for _name in ("add_sporadic", "add_pibs", "add_deferrable", "add_polling", "add_cbs",
              "add_unbounded"):
    setattr(Scheduler, _name, _add_server(getattr(_core.Scheduler, _name)))
for _name in ("block", "schedule", "io_service_done", "server_state", "server_name",
              "thread_name"):
    setattr(Scheduler, _name, _checked(getattr(_core.Scheduler, _name)))


class LatencyRecorder(_core.LatencyRecorder):
    """Latency recorder (LATENCY-IP §4 software twin) with checked
    arguments; every time and ``alarm_lat`` in integer ns."""

    def __new__(cls, capacity: int = 512, alarm_lat: int | None = None) -> LatencyRecorder:
        _check_uint("capacity", capacity)
        if isinstance(capacity, int) and capacity > MAX_RECORDER_CAPACITY:
            raise ValueError(f"capacity: {capacity} must be at most {MAX_RECORDER_CAPACITY}")
        if alarm_lat is not None:
            _check_uint("alarm_lat", alarm_lat)
        return super().__new__(cls, capacity, alarm_lat)


for _name in ("irq", "ack", "record"):
    setattr(LatencyRecorder, _name, _checked(getattr(_core.LatencyRecorder, _name)))


def _finite_nonneg(arg: str, x: float) -> None:
    if isinstance(x, bool) or not isinstance(x, (int, float, Fraction)):
        raise TypeError(f"{arg}: {x!r} must be a number")
    if not math.isfinite(x) or x < 0:
        raise ValueError(f"{arg}: {x} must be a finite non-negative number")

__all__ = ["Dispatch", "LatencyRecorder", "Scheduler", "us", "ms", "percent"]


def us(x: float) -> int:
    """Microseconds to integer nanoseconds."""
    _finite_nonneg("x", x)
    return round(x * 1_000)


def ms(x: float) -> int:
    """Milliseconds to integer nanoseconds."""
    _finite_nonneg("x", x)
    return round(x * 1_000_000)


def percent(p: int | str | Fraction) -> Fraction:
    """An exact utilization from a percentage in (0, 100]: ``percent(1)``,
    ``percent("0.5")``."""
    try:
        f = Fraction(p)
    except (ValueError, TypeError, ZeroDivisionError, OverflowError):
        raise ValueError(f"p: {p!r} is not a number (a percentage like 10 or \"0.5\")") from None
    if not 0 < f <= 100:
        raise ValueError(f"p: {p} must be in (0, 100] (a utilization is a share of one CPU)")
    return f / 100
