"""Building blocks of the USB-DIFFSERV experiments (simulator configs).

A Cincoze DX1100-like host with one xHCI controller and Teensy 4.1 boards as
CDC-ACM devices (USB-DIFFSERV §IV). Values the paper gives are used as
given (budgets, periods, utilizations, 512-byte requests, Omega_Main = 20 us,
Omega_IO = 200 us with kfree, 20 us without). Values it does not give are
assumptions recorded in docs/reproductions.md: the Teensy answers at USB 2.0
high speed (60 MB/s) with up to 20 us of response jitter; the xHCI top half
costs 5 us. The Linux path's cost per request is derived from Table I
(`LINUX_OMEGA_IO`), and its bottom halves are threaded (`LINUX`): the
paper's kernel is 5.4.19-rt (PREEMPT_RT, USB-DIFFSERV §V).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

US = 1_000
MS = 1_000_000
TEENSY_RATE = 60_000_000  # bytes/s, USB 2.0 high speed
TEENSY_JITTER = 20 * US
XHCI_TOP_HALF = 5 * US
OMEGA_MAIN = 20 * US
OMEGA_IO_KFREE = 200 * US
OMEGA_IO = 20 * US
# Linux's completion path (xHCI event, URB giveback, CDC-ACM completion),
# derived from USB-DIFFSERV Table I: Linux frees in a tasklet, off the
# latency path, like Quest (No kfree), and both read the same Teensy once
# per 20 ms period, so the difference of their averages is the extra cost
# of Linux's path: 20 us + (112.26 - 66.01) us = 66.25 us.
LINUX_OMEGA_IO = OMEGA_IO + 46_250
# PREEMPT_RT (the paper's 5.4.19-rt kernel): every bottom half runs in a
# kernel thread (ksoftirqd, SCHED_FIFO 50 unless an experiment says
# otherwise), below the SCHED_DEADLINE tasks.
LINUX: dict[str, Any] = {"threaded_bh": True}


def linux_omega_io(costs: Mapping[str, Any] | None = None) -> int:
    """Linux's per-request completion cost (ns). Hook for `irqlab calibrate`:
    a `costs:` section measured on this machine (key `usb_completion_ns`)
    replaces the figure derived from the paper's Table I."""
    if costs is not None and "usb_completion_ns" in costs:
        v = costs["usb_completion_ns"]
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise ValueError(f"costs.usb_completion_ns: {v!r} must be a positive integer (ns)")
        return v
    return LINUX_OMEGA_IO


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
