"""Building blocks of the USB-DIFFSERV experiments (simulator configs).

A Cincoze DX1100-like host with one xHCI controller and Teensy 4.1 boards as
CDC-ACM devices (USB-DIFFSERV §IV). Values the paper gives are used as
given (budgets, periods, utilizations, 512-byte requests, Omega_Main = 20 us,
Omega_IO = 200 us with kfree, 20 us without). Values it does not give are
assumptions recorded in docs/reproductions.md: the Teensy answers at USB 2.0
high speed (60 MB/s) with up to 20 us of response jitter; the xHCI top half
costs 5 us; the Linux path costs are listed in `LINUX_*`.
"""

from __future__ import annotations

from typing import Any

US = 1_000
MS = 1_000_000
TEENSY_RATE = 60_000_000  # bytes/s, USB 2.0 high speed
TEENSY_JITTER = 20 * US
XHCI_TOP_HALF = 5 * US
OMEGA_MAIN = 20 * US
OMEGA_IO_KFREE = 200 * US
OMEGA_IO = 20 * US
# Linux (assumption): the USB completion path in softirq (xHCI event
# handling, URB giveback, CDC-ACM completion) costs as much as Quest's
# bottom half without kfree; freeing is deferred to a tasklet, off the
# latency path.
LINUX_OMEGA_IO = OMEGA_IO


def sporadic(name: str, budget: int, period: int, cpu: int = 0) -> dict[str, Any]:
    return {"name": name, "cpu": cpu, "policy": "sporadic", "budget": budget, "period": period}


def pibs(name: str, percent: int) -> dict[str, Any]:
    return {"name": name, "policy": "pibs", "num": percent, "den": 100}


def cbs(name: str, runtime: int, period: int) -> dict[str, Any]:
    return {"name": name, "policy": "cbs", "runtime": runtime, "period": period}


def teensy(name: str, cls: int, *, omega_io: int = OMEGA_IO, omega_main: int = OMEGA_MAIN,
           bytes_: int = 512, echo_of: int | None = None, jitter: int = TEENSY_JITTER,
           rate: int = TEENSY_RATE) -> dict[str, Any]:
    d: dict[str, Any] = {
        "name": name, "class": cls, "kind": "usb", "controller": 0, "rate": rate,
        "jitter": jitter, "bytes": bytes_, "omega_io": omega_io, "omega_main": omega_main,
    }
    if echo_of is not None:
        d["echo_of"] = echo_of
    return d


def xhci(classes: list[int]) -> dict[str, Any]:
    """One controller; interrupter i is mapped to I/O class classes[i]. Its
    microframe clock is not synchronised with the CPU's (random phase)."""
    return {"name": "xhci", "top_half": XHCI_TOP_HALF, "msi_base": 32,
            "random_frame_phase": True, "interrupters": [{"class": c} for c in classes]}


def reader(name: str, server: int, device: int, *, period: int | None = None,
           reads_per_job: int | None = 1, priority: int = 1) -> dict[str, Any]:
    """A task reading `device`: once per `period`, or back to back forever."""
    io = {"op": "io", "device": device}
    if period is None:
        return {"name": name, "server": server, "priority": priority,
                "release": {"kind": "once"}, "program": [{"op": "loop", "body": [io]}]}
    body: list[dict[str, Any]] = [io] if reads_per_job == 1 else [
        {"op": "loop", "count": reads_per_job, "body": [io]}]
    return {"name": name, "server": server, "priority": priority,
            "release": {"kind": "periodic", "period": period}, "program": body}


def cpu_bound(name: str, server: int) -> dict[str, Any]:
    return {"name": name, "server": server, "release": {"kind": "once"},
            "program": [{"op": "loop", "body": [{"op": "compute", "ns": 10 * MS}]}]}
