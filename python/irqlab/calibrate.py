"""``irqlab calibrate``: measure this machine into a model's ``costs:``
section (docs/model.md; reference: docs/model.md, "costs").

Two sources:

* :func:`measure_host` -- the runtime's micro-measurements (Rust,
  ``irqlab_rt::calibrate``): timer and eventfd wake-up latency, context
  switch, the supervisor's decision and priority switch, the runtime top
  half's per-event cost and dispatch delay;
* :func:`trace_kernel` -- the kernel's own per-packet hard-IRQ and NET_RX
  softirq cost from ftrace tracepoints (``irq_handler_entry/exit``,
  ``softirq_raise/entry/exit``, ``napi_poll``, ``sched_wakeup/switch`` of
  ksoftirqd), on loopback (UDP traffic it sends itself) and on the NIC
  (TCP connects to a closed port of the default gateway, whose RSTs
  arrive through the NIC's hard IRQ and NET_RX: :func:`nic_rst_traffic`),
  in a tracefs *instance* of its own so other users of the global trace
  buffer are not disturbed.

Use from Python (e.g. to set a reproduction's Linux-path costs)::

    from irqlab.calibrate import load_costs, per_packet_ns
    costs = load_costs("costs.yaml")          # validated, also a model file
    per_packet_ns(costs)                      # {'hardirq': 0, 'softirq': 2140}

Design principles: every number is measured here, never assumed; what cannot
be measured (no root, no tracefs, no traffic on the NIC) is left out with the
reason in the section (``kernel.tracing``) and on the command's output; the
section is validated by the same Rust loader as every model (units, ordered
statistics), so what ``calibrate`` writes ``irqlab check`` accepts.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import re
import socket
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from irqlab import __version__
from irqlab._native import model as _model
from irqlab._native import rt as _rt

__all__ = ["TracingUnavailable", "apply_costs", "calibrate", "dump", "load_costs", "measure_host",
           "parse_trace", "per_packet_ns", "stat_ns", "trace_kernel"]

TRACEFS = (Path("/sys/kernel/tracing"), Path("/sys/kernel/debug/tracing"))
NET_RX = 3  # softirq vector of NET_RX (include/linux/interrupt.h)
HOST_FIELDS = ("timer_wakeup", "thread_wakeup", "context_switch", "supervisor_decision",
               "priority_switch", "runtime_top_half", "runtime_dispatch")
STATS = ("min", "mean", "p50", "p99", "max")


class TracingUnavailable(OSError):
    """tracefs cannot be used here (not root, not mounted and not mountable)."""


# ---- the costs section ----------------------------------------------------

def _ns(v: float) -> str:
    return f"{round(v)}ns"


def dist(values: list[float], mean: float | None = None) -> dict[str, Any] | None:
    """Nearest-rank summary of `values` (ns) as a model distribution
    (durations with units); `mean` overrides the plain mean (e.g. a
    packet-weighted one, which lies between min and max as well)."""
    if not values:
        return None
    v = sorted(values)
    n = len(v)

    def rank(p: float) -> float:
        return v[min(max(int(-(-p * n // 1)), 1), n) - 1]

    m = sum(v) / n if mean is None else mean
    return {"samples": n, "min": _ns(v[0]), "mean": _ns(min(max(m, v[0]), v[-1])),
            "p50": _ns(rank(0.5)), "p99": _ns(rank(0.99)), "max": _ns(v[-1])}


def _from_summary(s: dict[str, Any]) -> dict[str, Any]:
    return {"samples": s["samples"], **{k: _ns(s[k]) for k in STATS}}


def measure_host(samples: int = 2000, runs: int = 5, run_ms: int = 200) -> tuple[dict, list[str]]:
    """The runtime's micro-measurements: ``(section fields, notes)``; a
    measurement that could not be made is left out and its reason is a
    note."""
    raw = json.loads(_rt.calibrate(samples, runs, run_ms * 1_000_000))
    out: dict[str, Any] = {}
    notes = [] if raw["fifo"] else ["SCHED_FIFO not permitted: measured at SCHED_OTHER"]
    for name in HOST_FIELDS:
        r = raw[name]
        if "Ok" in r:
            out[name] = _from_summary(r["Ok"])
        else:
            notes.append(f"{name}: not measured: {r['Err']}")
    return out, notes


def origin() -> dict[str, Any]:
    """The machine and kernel the costs come from."""
    u = platform.uname()
    cpu = None
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {"host": socket.gethostname(), "kernel": f"{u.release} {u.version}",
            "cpu_model": cpu, "cpus": os.cpu_count() or 1,
            "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "tool": f"irqlab calibrate {__version__}"}


def calibrate(samples: int = 2000, runs: int = 5, run_ms: int = 200, packets: int = 3000,
              trace: bool = True) -> tuple[dict[str, Any], list[str]]:
    """Measure this machine: ``(costs section, notes)``; the section is
    validated (a :class:`irqlab.model.ModelError` if not)."""
    costs: dict[str, Any] = {"origin": origin()}
    if costs["origin"]["cpu_model"] is None:
        del costs["origin"]["cpu_model"]
    host, notes = measure_host(samples, runs, run_ms)
    costs.update(host)
    if trace:
        try:
            costs["kernel"] = trace_kernel(packets)
        except TracingUnavailable as e:
            costs["kernel"] = {"tracing": f"not used: {e}"}
            notes.append(f"kernel costs not measured: {e}")
    else:
        costs["kernel"] = {"tracing": "not used: --no-trace"}
    k = costs["kernel"]
    if "loopback" not in k and "nic" in k:
        costs["net_path"] = "nic"
    for path in ("loopback", "nic"):
        if path not in k and not k["tracing"].startswith("not used"):
            notes.append(f"kernel.{path}: no packet seen on this path while tracing")
    _model.load_costs(dump(costs))  # the Rust loader is the authority
    return costs, notes


def dump(costs: dict[str, Any]) -> str:
    """A costs file: YAML with the one key ``costs``."""
    head = "# irqlab calibrate: measured costs of this machine (docs/model.md, \"costs\").\n"
    return head + yaml.safe_dump({"costs": costs}, sort_keys=False, default_flow_style=None)


def load_costs(path: str | Path) -> dict[str, Any]:
    """The validated ``costs`` section of a costs file or of a model file
    (durations as text, as written); raises :class:`irqlab.model.ModelError`
    when invalid, ``KeyError`` for a model without one."""
    from irqlab.model import MAX_MODEL_BYTES, read_input

    text = read_input(Path(path), MAX_MODEL_BYTES)
    if _model.is_costs_file(text):
        return json.loads(_model.load_costs(text)[0])
    model = json.loads(_model.load(text)[0])
    if model.get("costs") is None:
        raise KeyError(f"{path}: the model has no costs: section (run irqlab calibrate)")
    return model["costs"]


def apply_costs(cfg: dict[str, Any], costs: dict[str, Any]) -> dict[str, Any]:
    """A simulator configuration with `costs` (a ``costs`` section) folded
    in exactly as a model with that section is lowered (the Rust
    ``lower/costs.rs``: per-packet kernel costs, dispatch delay, thread
    switch and timer costs), for experiments that build configurations
    directly."""
    return json.loads(_model.apply_costs(json.dumps(cfg), dump(costs)))


def stat_ns(d: dict[str, Any] | None, stat: str) -> int:
    """Statistic `stat` (min, mean, p50, p99, max) of a distribution, in
    integer ns (0 when not measured)."""
    return 0 if d is None else _model.parse_duration(d[stat])


def per_packet_ns(costs: dict[str, Any], path: str | None = None,
                  stat: str | None = None) -> dict[str, int]:
    """The kernel's per-packet costs a ``nic`` pays on the simulated
    ``linux`` path: ``{"hardirq": ns, "softirq": ns}`` for `path`
    (``loopback``/``nic``; default the section's ``net_path``) and `stat`
    (default the section's ``use``). ``KeyError`` when not measured."""
    path = path or costs.get("net_path", "loopback")
    stat = stat or costs.get("use", "mean")
    net = (costs.get("kernel") or {}).get(path)
    if net is None:
        raise KeyError(f"costs.kernel.{path}: not measured on {costs['origin']['host']}")
    return {"hardirq": stat_ns(net.get("hardirq"), stat),
            "softirq": stat_ns(net["softirq"], stat)}


# ---- ftrace ------------------------------------------------------------------

def tracefs_root() -> Path:
    """The mounted tracefs, mounting it if needed; raises
    :class:`TracingUnavailable` with the reason."""
    if os.geteuid() != 0:
        raise TracingUnavailable("tracing needs root (tracefs is root-only)")
    for p in TRACEFS:
        if (p / "instances").is_dir():
            return p
    err = os.system(f"mount -t tracefs nodev {TRACEFS[0]} 2>/dev/null")
    if err == 0 and (TRACEFS[0] / "instances").is_dir():
        return TRACEFS[0]
    raise TracingUnavailable(f"tracefs is not mounted at {TRACEFS[0]} and mounting it failed")


EVENTS = {
    "irq/irq_handler_entry": None,
    "irq/irq_handler_exit": None,
    "irq/softirq_raise": f"vec == {NET_RX}",
    "irq/softirq_entry": f"vec == {NET_RX}",
    "irq/softirq_exit": f"vec == {NET_RX}",
    "napi/napi_poll": None,
    "sched/sched_wakeup": 'comm ~ "ksoftirqd*"',
    "sched/sched_switch": 'next_comm ~ "ksoftirqd*"',
}


@contextlib.contextmanager
def trace_instance(root: Path) -> Iterator[Path]:
    """A tracefs instance of our own with `EVENTS` enabled on the raw TSC
    clock (ns-resolution timestamps; converted with `trace_marker` pairs),
    removed afterwards."""
    inst = root / "instances" / f"irqlab-calibrate-{os.getpid()}"
    try:
        inst.mkdir()
    except OSError as e:
        raise TracingUnavailable(f"cannot create a tracefs instance: {e.strerror}") from e
    try:
        clocks = (inst / "trace_clock").read_text()
        (inst / "trace_clock").write_text("x86-tsc" if "x86-tsc" in clocks else "mono")
        (inst / "buffer_size_kb").write_text("8192")
        for ev, flt in EVENTS.items():
            d = inst / "events" / ev
            if not d.is_dir():
                raise TracingUnavailable(f"the kernel has no {ev} tracepoint")
            if flt:
                (d / "filter").write_text(flt)
            (d / "enable").write_text("1")
        (inst / "tracing_on").write_text("1")
        yield inst
    finally:
        with contextlib.suppress(OSError):
            (inst / "tracing_on").write_text("0")
        for ev in EVENTS:
            with contextlib.suppress(OSError):
                (inst / "events" / ev / "enable").write_text("0")
        with contextlib.suppress(OSError):
            inst.rmdir()


def udp_loopback(packets: int, size: int = 64) -> int:
    """Send `packets` UDP datagrams on loopback to a receiver thread that
    drains them; returns how many were received."""
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    # A receive buffer for the whole burst, so the count received is the
    # count sent (SO_RCVBUFFORCE past rmem_max as root; else what rmem_max
    # allows, and the return value says how many arrived).
    for opt in (getattr(socket, "SO_RCVBUFFORCE", 33), socket.SO_RCVBUF):
        with contextlib.suppress(OSError):
            rx.setsockopt(socket.SOL_SOCKET, opt, max(packets, 1) * 2048)
            break
    rx.bind(("127.0.0.1", 0))
    rx.settimeout(0.5)
    got = [0]

    def drain() -> None:
        with contextlib.suppress(OSError):
            while got[0] < packets:
                rx.recv(2048)
                got[0] += 1

    t = threading.Thread(target=drain)
    t.start()
    payload = b"x" * size
    addr = rx.getsockname()
    for i in range(packets):
        tx.sendto(payload, addr)
        if i % 32 == 31:
            time.sleep(0.0002)
    t.join()
    rx.close()
    tx.close()
    return got[0]


def default_gateway(ifaces: set[str]) -> tuple[str, str] | None:
    """``(interface, gateway address)`` of the IPv4 default route through
    one of the NIC interfaces `ifaces` (``/proc/net/route``), else None."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/net/route").read_text().splitlines()[1:]:
            f = line.split()
            # RTF_UP | RTF_GATEWAY, destination 0.0.0.0: the default route.
            if (len(f) > 3 and f[0] in ifaces and f[1] == "00000000"
                    and int(f[3], 16) & 0x3 == 0x3):
                return f[0], socket.inet_ntoa(int(f[2], 16).to_bytes(4, "little"))
    return None


NIC_PORT = 80  # a closed TCP port on the gateway: it answers a SYN with a RST
NIC_PACKETS = 300  # connects at most (paced: about 0.3 s when answered; this VM's
# gateway stopped answering after ~800 RSTs in a row: a rate limit)


def nic_rst_traffic(gateway: str, packets: int, port: int = NIC_PORT,
                    gap_s: float = 0.0005, timeout_s: float = 0.02,
                    give_up: int = 20) -> tuple[int, str]:
    """Make `packets` packets arrive on the NIC without any outside network:
    non-blocking TCP connects, one at a time and paced by `gap_s`, to a
    closed `port` of the default `gateway`, which answers each SYN with a
    RST -- a real packet received through the NIC's hard IRQ and the
    NET_RX softirq (connect fails with ECONNREFUSED). Returns ``(replies,
    why)``: how many connects were refused by a RST, and when fewer than
    asked, why (timeouts: the gateway drops SYNs or rate-limits its RSTs,
    as this VM's gateway does after some hundreds; connected: the port is
    open). Stops after `give_up` connects in a row without a reply."""
    import errno
    import select

    replies, timeouts, connected, silent = 0, 0, 0, 0
    for _ in range(packets):
        if silent >= give_up:
            break
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.setblocking(False)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
            rc = s.connect_ex((gateway, port))
            if rc == errno.EINPROGRESS:
                p = select.poll()
                p.register(s, select.POLLOUT)
                rc = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) if p.poll(
                    timeout_s * 1000) else errno.ETIMEDOUT
            if rc == errno.ECONNREFUSED:
                replies += 1
            elif rc == 0:
                connected += 1
            else:
                timeouts += 1
            silent = 0 if rc == errno.ECONNREFUSED else silent + 1
        finally:
            s.close()
        time.sleep(gap_s)
    why = ""
    if replies < packets:
        why = (f"{timeouts} connects to {gateway}:{port} got no reply"
               + (f" (stopped after {give_up} in a row)" if silent >= give_up else "")
               + (f", {connected} connected (the port is open)" if connected else ""))
    return replies, why


def nic_irq_names() -> tuple[set[str], set[str]]:
    """Prefixes of the NIC interrupts' names (interface names and their
    devices' names, e.g. ``eth0``, ``virtio2``) and the interfaces."""
    prefixes, ifaces = set(), set()
    with contextlib.suppress(OSError):
        for n in Path("/sys/class/net").iterdir():
            dev = n / "device"
            if n.name == "lo" or not dev.exists():
                continue
            ifaces.add(n.name)
            prefixes.update({n.name, dev.resolve().name})
    return prefixes, ifaces


LINE = re.compile(r"^\s*(?P<comm>.*?)-(?P<pid>\d+)\s+(?:\(\s*\S+\)\s+)?\[(?P<cpu>\d+)\]\s+"
                  r"(?:\S+\s+)?(?P<ts>\d+(?:\.\d+)?):\s+(?P<ev>\w+):\s?(?P<rest>.*)$")


TX_IRQ = re.compile(r"[-_.](output|tx)([-_.]|\d|$)", re.IGNORECASE)


@dataclass
class _Run:
    start: float
    ksoftirqd: bool
    work: dict[str, int] = field(default_factory=lambda: defaultdict(int))


def parse_trace(text: str, ns_per_tick: float, nic_prefixes: set[str],
                ifaces: set[str]) -> dict[str, Any]:
    """Per-packet costs from an ftrace text dump (timestamps in ticks of
    `ns_per_tick`): hard IRQs of the NIC (`nic_prefixes`), each NET_RX
    softirq run's time over the packets its NAPI polls took (``(no_device)``
    and ``lo`` are loopback's backlog, `ifaces` the NIC), and ksoftirqd's
    wake-up to run. Returns the ``kernel`` fields found."""
    irq_open: dict[tuple[int, int], tuple[float, str]] = {}
    hard: list[float] = []
    runs: dict[int, _Run] = {}
    per_packet: dict[str, list[float]] = defaultdict(list)
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0, 0, 0])  # time, pkts, runs, ksd
    woken: dict[str, float] = {}
    ksd_wake: list[float] = []
    for line in text.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        cpu, ts, ev, rest = int(m["cpu"]), float(m["ts"]) * ns_per_tick, m["ev"], m["rest"]
        if ev == "irq_handler_entry":
            f = dict(x.split("=", 1) for x in rest.split() if "=" in x)
            irq_open[(cpu, int(f.get("irq", -1)))] = (ts, f.get("name", ""))
        elif ev == "irq_handler_exit":
            f = dict(x.split("=", 1) for x in rest.split() if "=" in x)
            start = irq_open.pop((cpu, int(f.get("irq", -1))), None)
            # The NIC's receive interrupts (a transmit-completion vector,
            # e.g. virtio's ``-output.N``, is not the receive path's cost).
            if (start and any(start[1].startswith(p) for p in nic_prefixes)
                    and not TX_IRQ.search(start[1])):
                hard.append(ts - start[0])
        elif ev == "softirq_entry":
            runs[cpu] = _Run(ts, m["comm"].startswith("ksoftirqd"))
        elif ev == "napi_poll" and cpu in runs:
            dm = re.search(r"for device (\S+) work (\d+)", rest)
            if dm and int(dm[2]) > 0:  # a poll that found nothing carries no packet
                path = "nic" if dm[1] in ifaces else "loopback"
                runs[cpu].work[path] += int(dm[2])
        elif ev == "softirq_exit" and cpu in runs:
            r = runs.pop(cpu)
            n = sum(r.work.values())
            if n == 0:
                continue
            for path, k in r.work.items():
                share = (ts - r.start) * k / n
                per_packet[path].append(share / k)
                t = totals[path]
                t[0] += share
                t[1] += k
                t[2] += 1
                t[3] += r.ksoftirqd
        elif ev == "sched_wakeup":
            cm = re.search(r"comm=(\S+)", rest)
            if cm:
                woken[cm[1]] = ts
        elif ev == "sched_switch":
            cm = re.search(r"next_comm=(\S+)", rest)
            if cm and cm[1] in woken:
                ksd_wake.append(ts - woken.pop(cm[1]))
    out: dict[str, Any] = {}
    for path in ("loopback", "nic"):
        t = totals.get(path)
        if not t or t[1] == 0:
            continue
        net: dict[str, Any] = {"packets": int(t[1])}
        if path == "nic" and hard:
            net["hardirq"] = dist(hard)
        net["softirq"] = dist(per_packet[path], mean=t[0] / t[1])
        net["ksoftirqd_share"] = round(t[3] / t[2], 4)
        out[path] = net
    if ksd_wake:
        out["ksoftirqd_wakeup"] = dist(ksd_wake)
    return out


def _marker_ticks(inst: Path, text: str, tag: str) -> float | None:
    m = re.search(r"(\d+(?:\.\d+)?):\s+tracing_mark_write:\s+" + re.escape(tag), text)
    return float(m[1]) if m else None


def trace_kernel(packets: int = 3000) -> dict[str, Any]:
    """The ``kernel`` part of the costs section, from ftrace while sending
    `packets` UDP datagrams on loopback and, when a NIC carries a default
    route, making up to ``min(packets, NIC_PACKETS)`` RSTs arrive on it
    (:func:`nic_rst_traffic`);
    raises :class:`TracingUnavailable` with the reason when tracefs cannot
    be used."""
    root = tracefs_root()
    prefixes, ifaces = nic_irq_names()
    gw = default_gateway(ifaces)
    with trace_instance(root) as inst:
        marker = inst / "trace_marker"
        t0 = time.monotonic_ns()
        marker.write_text("irqlab-t0")
        received = udp_loopback(packets)
        if gw is not None:
            n = min(packets, NIC_PACKETS)
            replies, why = nic_rst_traffic(gw[1], n)
            nic = (f"; NIC traffic: up to {n} TCP connects to the default gateway "
                   f"{gw[1]}:{NIC_PORT} on {gw[0]} (a closed port), {replies} answered "
                   "by a RST" + (f" ({why})" if why else ""))
        else:
            nic = ("; NIC traffic: none (no IPv4 default route through a NIC: "
                   + ("no NIC" if not ifaces else "interfaces " + ", ".join(sorted(ifaces)))
                   + ")")
        time.sleep(0.05)
        marker.write_text("irqlab-t1")
        t1 = time.monotonic_ns()
        (inst / "tracing_on").write_text("0")
        text = (inst / "trace").read_text()
        clock = next(c.strip("[]") for c in (inst / "trace_clock").read_text().split()
                     if c.startswith("["))
    if clock == "mono":
        ns_per_tick = 1000.0  # text timestamps are microseconds
    else:
        a, b = _marker_ticks(inst, text, "irqlab-t0"), _marker_ticks(inst, text, "irqlab-t1")
        if a is None or b is None or b <= a:
            raise TracingUnavailable("the trace lost its clock markers (buffer overrun)")
        ns_per_tick = (t1 - t0) / (b - a)
    kernel: dict[str, Any] = {
        "tracing": f"ftrace: tracefs instance at {root}/instances, clock {clock}, events "
                   + ", ".join(e.split("/")[1] for e in EVENTS)
                   + f"; traffic: {packets} UDP datagrams of 64 B sent on loopback, "
                     f"{received} received" + nic}
    kernel.update(parse_trace(text, ns_per_tick, prefixes, ifaces))
    return kernel
