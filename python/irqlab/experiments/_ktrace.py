"""Kernel tracepoints for UPCALL Figures 1-2: interrupt dispatch latency split
into ID (interrupt to handler entry), IE (handler execution) and BHD (handler
exit to bottom-half start), measured on this machine (UPCALL §2, the formula
delta_e = ID + IE + BHD).

What it is: a private ftrace instance (``instances/irqlab-PID`` under the
mounted tracefs, so other users of the top-level buffer are not disturbed and
nothing outlives the run), the workloads that generate the events, and a
parser that turns the text trace into per-event (ID, IE, BHD) triples.

* **Timer events** (Figure 1): the local timer interrupt of the measured CPU
  (``irq_vectors:local_timer_entry/exit``) that expires the tick hrtimer
  (``hrtimer_expire_entry``, armed by ``hrtimer_start`` with its ``expires``)
  and raises the timer softirq (``softirq_raise`` vec 1). ID = entry minus
  the hrtimer's expiry, IE = exit minus entry, BHD = the next timer
  ``softirq_entry`` on that CPU minus the exit. A thread on the measured CPU
  blocks in recv(2) with SO_RCVTIMEO, so timer-wheel timers (schedule_timeout)
  keep falling due and the tick raises the timer softirq.
* **Network events** (Figure 2): 512-byte UDP datagrams on a private loopback
  (own network namespace, ``lo`` with receive packet steering to the measured
  CPU), sent from the other CPU. RPS hands each packet to the measured CPU
  with an inter-processor interrupt: ``ipi_send_cpu`` (the call-function
  IPI, sent from the sender's NET_RX softirq) on the sender, ``call_function_single_entry/exit``
  on the receiver, which raises NET_RX (``softirq_raise`` vec 3). ID = IPI
  entry minus the send, IE = IPI exit minus entry, BHD = the socket callback
  (``sock:sk_data_ready`` for UDP, the paper's endpoint) minus the IPI exit.

Timestamps: the instance runs on the ``x86-tsc`` clock (cycles, like the
paper's figures) and cycles are converted to nanoseconds with a least-squares
line through the (TSC, ``now``) pairs of ``hrtimer_expire_entry`` (its ``now``
is CLOCK_MONOTONIC in ns); where that clock is missing, ``mono`` (printed in
microseconds). Design principles: the parser is pure (text in, triples out)
and tested on hand-written traces; every reason not to run (not root, no
tracefs, a missing tracepoint) is returned as text, never swallowed.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import re
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

SOFTIRQ_TIMER = 1
SOFTIRQ_NET_RX = 3
_CSD_IPI = "generic_smp_call_function_single_interrupt"

TIMER_EVENTS = [
    "irq_vectors/local_timer_entry",
    "irq_vectors/local_timer_exit",
    "timer/hrtimer_start",
    "timer/hrtimer_cancel",
    "timer/hrtimer_expire_entry",
    "irq/softirq_raise",
    "irq/softirq_entry",
    "irq/softirq_exit",
]
NET_EVENTS = [
    "ipi/ipi_send_cpu",
    "irq_vectors/call_function_single_entry",
    "irq_vectors/call_function_single_exit",
    "irq/softirq_raise",
    "irq/softirq_entry",
    "irq/softirq_exit",
    "sock/sk_data_ready",
    # for the TSC -> ns fit only
    "irq_vectors/local_timer_entry",
    "timer/hrtimer_expire_entry",
]


@dataclass(frozen=True)
class Event:
    cpu: int
    ts: int  # clock units (TSC cycles, or ns for the mono clock)
    name: str
    args: dict[str, str]


_LINE = re.compile(
    r"^\s*.+?-\d+\s+\[(?P<cpu>\d+)\]\s+\S+\s+(?P<ts>\d+(?:\.\d+)?):\s+(?P<name>\w+):\s?(?P<args>.*)$"
)
_ARG = re.compile(r"(\w+)=(\S+)")


def parse(text: str) -> list[Event]:
    """The events of an ftrace text trace, in file order. Timestamps with a
    decimal point (sec.usec clocks) become integer nanoseconds."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if m is None:
            continue
        ts_s = m["ts"]
        ts = round(float(ts_s) * 1e9) if "." in ts_s else int(ts_s)
        out.append(Event(int(m["cpu"]), ts, m["name"], dict(_ARG.findall(m["args"]))))
    out.sort(key=lambda e: e.ts)
    return out


@dataclass(frozen=True)
class Clock:
    """Trace clock units to CLOCK_MONOTONIC nanoseconds: ``ns = a*ts + b``."""

    a: float
    b: float
    residual_ns: float  # RMS of the fit (0 for the identity)

    def ns(self, ts: int) -> float:
        return self.a * ts + self.b

    @staticmethod
    def fit(events: list[Event]) -> Clock:
        """The line through the (ts, now) pairs of the first
        ``hrtimer_expire_entry`` of each local timer interrupt (``now`` is
        read once per interrupt, so later expiries in it lag)."""
        pts = []
        first: set[int] = set()  # CPUs inside a timer interrupt, no expiry yet
        for e in events:
            if e.name == "local_timer_entry":
                first.add(e.cpu)
            elif e.name == "hrtimer_expire_entry" and e.cpu in first and "now" in e.args:
                first.discard(e.cpu)
                with suppress(ValueError):
                    pts.append((e.ts, int(e.args["now"])))
        if len(pts) < 2:
            raise ValueError(f"clock fit: {len(pts)} hrtimer_expire_entry events, need >= 2")
        x = np.array([p[0] for p in pts], dtype=np.float64)
        y = np.array([p[1] for p in pts], dtype=np.float64)
        x0, y0 = x[0], y[0]
        a, b0 = np.polyfit(x - x0, y - y0, 1)
        res = (y - y0) - (a * (x - x0) + b0)
        return Clock(float(a), float(y0 + b0 - a * x0), float(np.sqrt(np.mean(res**2))))


IDENTITY = Clock(1.0, 0.0, 0.0)


@dataclass
class Triples:
    """Per-event ID, IE and BHD in ns, plus what was seen but not used."""

    id: list[float] = field(default_factory=list)
    ie: list[float] = field(default_factory=list)
    bhd: list[float] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)

    def skip(self, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1

    def add(self, i: float, e: float, b: float) -> None:
        self.id.append(i)
        self.ie.append(e)
        self.bhd.append(b)

    def extend(self, other: Triples) -> None:
        """Append ``other``'s events and add its skip counts."""
        self.id += other.id
        self.ie += other.ie
        self.bhd += other.bhd
        for why, n in other.skipped.items():
            self.skipped[why] = self.skipped.get(why, 0) + n

    def __len__(self) -> int:
        return len(self.id)


_HZ_CANDIDATES = (100, 250, 300, 1000)  # the kernel's CONFIG_HZ choices


def tick_period(events: list[Event], cpu: int) -> int | None:
    """The scheduler tick's period (ns) on ``cpu``: the median gap between
    consecutive expiries of the tick hrtimer (its ``now``), snapped to the
    nearest 1e9 / CONFIG_HZ; None when there are too few ticks to tell or the
    gap matches no HZ within 10 %."""
    nows = [int(e.args["now"]) for e in events
            if e.cpu == cpu and e.name == "hrtimer_expire_entry"
            and "tick" in e.args.get("function", "") and e.args.get("now", "").isdigit()]
    gaps = sorted(b - a for a, b in zip(nows, nows[1:], strict=False) if b > a)
    if len(gaps) < 3:
        return None
    med = gaps[len(gaps) // 2]
    best = min((round(1e9 / hz) for hz in _HZ_CANDIDATES), key=lambda p: abs(p - med))
    return best if abs(best - med) <= 0.1 * best else None


def _due(expires: dict[str, int], e: Event, tick: int | None) -> int | None:
    """The expiry of the hrtimer that ``e`` (an ``hrtimer_expire_entry``)
    runs, known from its last ``hrtimer_start`` and consumed by this expiry.
    The tick's hrtimer is re-armed by ``hrtimer_forward`` in its own callback,
    with no start event, so it stays known: due on its last start's grid of
    tick periods (the latest grid point at or before ``now``)."""
    h = e.args.get("hrtimer", "")
    due = expires.pop(h, None)
    if due is None or tick is None or "tick" not in e.args.get("function", ""):
        return due
    with suppress(KeyError, ValueError):
        now = int(e.args["now"])
        if now - due >= tick:
            due += (now - due) // tick * tick
    expires[h] = due
    return due


def timer_triples(events: list[Event], cpu: int, clock: Clock) -> Triples:
    """Figure 1: local timer interrupts of ``cpu`` that expire an hrtimer and
    raise the timer softirq."""
    out = Triples()
    tick = tick_period(events, cpu)
    expires: dict[str, int] = {}  # hrtimer -> expiry (ns) of its last start
    irq: dict | None = None  # the open interrupt
    waiting: float | None = None  # exit time of an irq whose softirq is awaited
    pending: dict = {}
    for e in events:
        if e.name == "hrtimer_start":
            with suppress(KeyError, ValueError):
                expires[e.args["hrtimer"]] = int(e.args["expires"])
            continue
        if e.name == "hrtimer_cancel":
            # NOHZ idle cancels the tick and re-arms it later: the old expiry
            # is not the one the interrupt serves
            expires.pop(e.args.get("hrtimer", ""), None)
            continue
        if e.cpu != cpu:
            continue
        if e.name == "local_timer_entry":
            irq = {"entry": clock.ns(e.ts), "due": None, "raised": False}
        elif irq is not None and e.name == "hrtimer_expire_entry":
            due = _due(expires, e, tick)
            if due is not None and (irq["due"] is None or due < irq["due"]):
                irq["due"] = due
        elif irq is not None and e.name == "softirq_raise" and _vec(e) == SOFTIRQ_TIMER:
            irq["raised"] = True
        elif irq is not None and e.name == "local_timer_exit":
            exit_ns = clock.ns(e.ts)
            if not irq["raised"]:
                out.skip("no timer softirq raised")
            elif irq["due"] is None:
                out.skip("expiry unknown (hrtimer started before the trace)")
            elif irq["entry"] < irq["due"]:
                out.skip("entry before the expiry (clock fit)")
            else:
                if waiting is not None:
                    out.skip("softirq still pending at the next interrupt")
                irq["exit"] = exit_ns
                waiting = exit_ns
                pending = irq
            irq = None
        elif e.name == "softirq_entry" and _vec(e) == SOFTIRQ_TIMER and waiting is not None:
            p = pending
            out.add(p["entry"] - p["due"], p["exit"] - p["entry"], clock.ns(e.ts) - p["exit"])
            waiting = None
    return out


def net_triples(events: list[Event], cpu: int, clock: Clock) -> Triples:
    """Figure 2: RPS inter-processor interrupts to ``cpu`` that raise NET_RX,
    up to the first UDP socket callback of the softirq that follows."""
    out = Triples()
    sent: float | None = None  # last rps IPI sent to cpu, not yet taken
    irq: dict | None = None
    pending: dict | None = None
    for e in events:
        if e.name == "ipi_send_cpu":
            # The IPI carrying the call-function queue; it is sent only when
            # the queue was empty, so the last one before the entry is it.
            callback = e.args.get("callback", "")
            if e.args.get("cpu") == str(cpu) and callback.startswith(_CSD_IPI):
                sent = clock.ns(e.ts)
            continue
        if e.cpu != cpu:
            continue
        if e.name == "call_function_single_entry":
            irq = {"entry": clock.ns(e.ts), "sent": sent, "raised": False}
            sent = None
        elif irq is not None and e.name == "softirq_raise" and _vec(e) == SOFTIRQ_NET_RX:
            irq["raised"] = True
        elif irq is not None and e.name == "call_function_single_exit":
            if not irq["raised"]:
                out.skip("IPI without NET_RX")
            elif irq["sent"] is None:
                out.skip("no rps IPI send before the entry")
            else:
                if pending is not None:
                    out.skip("no socket callback before the next IPI")
                irq["exit"] = clock.ns(e.ts)
                pending = irq
            irq = None
        elif e.name == "sk_data_ready" and pending is not None and e.args.get("protocol") == "17":
            p = pending
            out.add(p["entry"] - p["sent"], p["exit"] - p["entry"], clock.ns(e.ts) - p["exit"])
            pending = None
    return out


def _vec(e: Event) -> int:
    try:
        return int(e.args.get("vec", "-1"))
    except ValueError:
        return -1


def stat(xs: list[float], key: str) -> float:
    """One column of :func:`summary`; NaN when there are no samples (a ratio
    of NaN holds no band, so a claim with nothing measured fails)."""
    return summary(xs).get(key, float("nan"))


def summary(xs: list[float]) -> dict[str, float]:
    """min/mean/median/max/sample std of ``xs`` (ns), the paper's columns."""
    a = np.asarray(xs, dtype=np.float64)
    if a.size == 0:
        return {"n": 0}
    return {
        "n": int(a.size),
        "min": float(a.min()),
        "mean": float(a.mean()),
        "median": float(np.median(a)),
        "max": float(a.max()),
        "std": float(a.std(ddof=1)) if a.size > 1 else 0.0,
    }


# ---------------------------------------------------------------------------
# tracefs


def tracefs_root() -> Path | None:
    """Where tracefs is mounted, mounting it at /sys/kernel/tracing if root
    and it is not mounted anywhere."""
    with suppress(OSError):
        for line in Path("/proc/mounts").read_text().splitlines():
            parts = line.split()
            if len(parts) > 2 and parts[2] == "tracefs":
                return Path(parts[1])
    target = Path("/sys/kernel/tracing")
    if os.geteuid() == 0 and target.is_dir():
        r = subprocess.run(["mount", "-t", "tracefs", "nodev", str(target)],
                           capture_output=True, check=False)
        if r.returncode == 0 or (target / "instances").is_dir():
            return target
    return None


def unavailable(events: list[str]) -> str | None:
    """Why the tracepoints in ``events`` cannot be traced here, or None."""
    if os.geteuid() != 0:
        return "needs root (tracefs and the tracepoints are root-only)"
    root = tracefs_root()
    if root is None:
        return "tracefs is not mounted and could not be mounted at /sys/kernel/tracing"
    if not (root / "instances").is_dir():
        return f"{root}: no trace instances"
    missing = [e for e in events if not (root / "events" / e / "enable").exists()]
    if missing:
        return "tracepoints missing in this kernel: " + ", ".join(missing)
    return None


@contextmanager
def trace_instance(events: list[str], filters: dict[str, str] | None = None,
                   buffer_kb: int = 16384) -> Iterator[Path]:
    """A private trace instance with ``events`` enabled (tracing on inside the
    block); yields its directory. The instance is removed afterwards."""
    root = tracefs_root()
    if root is None:
        raise OSError("tracefs is not mounted")
    inst = root / "instances" / f"irqlab-{os.getpid()}-{threading.get_ident() % 100000}"
    inst.mkdir()
    try:
        clocks = (inst / "trace_clock").read_text()
        (inst / "trace_clock").write_text("x86-tsc" if "x86-tsc" in clocks else "mono")
        (inst / "buffer_size_kb").write_text(str(buffer_kb))
        for ev in events:
            if filters and ev in filters:
                (inst / "events" / ev / "filter").write_text(filters[ev])
            (inst / "events" / ev / "enable").write_text("1")
        (inst / "tracing_on").write_text("1")
        yield inst
    finally:
        with suppress(OSError):
            (inst / "tracing_on").write_text("0")
        with suppress(OSError):
            for ev in events:
                (inst / "events" / ev / "enable").write_text("0")
        for _ in range(50):
            try:
                inst.rmdir()
                break
            except OSError:
                time.sleep(0.05)


def read_trace(inst: Path) -> tuple[str, Clock | None]:
    """The instance's text trace (tracing stopped first) and its clock: the
    identity for ``mono`` (already ns), None for TSC cycles (fit them)."""
    (inst / "tracing_on").write_text("0")
    clock = (inst / "trace_clock").read_text()
    return (inst / "trace").read_text(), (IDENTITY if "[mono]" in clock else None)


# ---------------------------------------------------------------------------
# workloads


@contextmanager
def hogs(n: int, cpu: int) -> Iterator[list[int]]:
    """``n`` CPU-bound processes pinned to ``cpu`` (SCHED_OTHER, nice 0)."""
    code = f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nwhile True:\n    pass\n"
    procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(n)]
    try:
        time.sleep(0.05 if n else 0)
        yield [p.pid for p in procs]
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def timer_workload(cpu: int, seconds: float) -> int:
    """Block in recv(2) with a 1 ms SO_RCVTIMEO on ``cpu`` for ``seconds``:
    timer-wheel timers (schedule_timeout) fall due at every tick. Returns the
    number of timeouts."""
    n = 0

    def body() -> None:
        nonlocal n
        os.sched_setaffinity(0, {cpu})
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, (0).to_bytes(8, "little")
                     + (1000).to_bytes(8, "little"))
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            with suppress(BlockingIOError, TimeoutError):
                s.recv(16)
            n += 1
        s.close()

    t = threading.Thread(target=body)
    t.start()
    t.join()
    return n


_CLONE_NEWNS = 0x00020000
_CLONE_NEWNET = 0x40000000
_MS_REC = 0x4000
_MS_PRIVATE = 1 << 18
_MNT_DETACH = 2
_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1


def _private_loopback(cpu: int) -> None:
    """Own network and mount namespaces, a private sysfs, ``lo`` up, RPS of
    ``lo`` to ``cpu`` (as bench/dispatch's netns.rs). Child process only."""
    libc = ctypes.CDLL(None, use_errno=True)

    def check(what: str, rc: int) -> None:
        if rc != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"{what}: {os.strerror(err)}")

    check("unshare(CLONE_NEWNET|CLONE_NEWNS)", libc.unshare(_CLONE_NEWNET | _CLONE_NEWNS))
    check("make / private", libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None))
    libc.umount2(b"/sys", _MNT_DETACH)
    check("mount sysfs", libc.mount(b"sysfs", b"/sys", b"sysfs", 0, None))
    # lo up: SIOCGIFFLAGS / SIOCSIFFLAGS on a struct ifreq (name, then flags)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        req = struct.pack("16sh22x", b"lo", 0)
        flags = struct.unpack("16sh22x", fcntl.ioctl(s, _SIOCGIFFLAGS, req))[1]
        fcntl.ioctl(s, _SIOCSIFFLAGS, struct.pack("16sh22x", b"lo", flags | _IFF_UP))
    Path("/sys/class/net/lo/queues/rx-0/rps_cpus").write_text(f"{1 << cpu:x}")


def net_workload(cpu: int, sender_cpu: int, count: int, interval_s: float = 0.001) -> int:
    """``count`` 512-byte UDP datagrams from ``sender_cpu`` to a receiver on
    ``cpu`` over a private loopback steered to ``cpu``, in a forked child
    (the namespaces stay in it). Returns how many the receiver got; raises
    OSError with the child's reason when the set-up fails."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        status = b"0"
        try:
            _private_loopback(cpu)
            rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            rx.bind(("127.0.0.1", 0))
            rx.settimeout(0.5)
            got = 0

            def receive() -> None:
                nonlocal got
                os.sched_setaffinity(0, {cpu})
                with suppress(OSError):
                    while got < count:
                        rx.recv(2048)
                        got += 1

            t = threading.Thread(target=receive)
            t.start()
            os.sched_setaffinity(0, {sender_cpu})
            tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            msg = bytes(512)
            addr = rx.getsockname()
            for _ in range(count):
                tx.sendto(msg, addr)
                time.sleep(interval_s)
            t.join()
            status = str(got).encode()
        except Exception as e:  # the reason goes to the parent
            status = f"error: {e}".encode()
        os.write(w, status)
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        msg = f.read().decode()
    os.waitpid(pid, 0)
    if msg.startswith("error: ") or not msg:
        raise OSError(msg.removeprefix("error: ") or "network child died")
    return int(msg)


# ---------------------------------------------------------------------------
# one measurement


FILTERS = {
    "irq/softirq_raise": f"vec == {SOFTIRQ_TIMER} || vec == {SOFTIRQ_NET_RX}",
    "irq/softirq_entry": f"vec == {SOFTIRQ_TIMER} || vec == {SOFTIRQ_NET_RX}",
    "irq/softirq_exit": f"vec == {SOFTIRQ_TIMER} || vec == {SOFTIRQ_NET_RX}",
    "sock/sk_data_ready": "protocol == 17",
}


def measure(kind: str, cpu: int, other_cpu: int, n_hogs: int, *, seconds: float = 1.0,
            count: int = 300) -> tuple[Triples, Clock]:
    """Trace one workload (``timer``: ``seconds`` of timeouts; ``net``:
    ``count`` datagrams) with ``n_hogs`` CPU-bound processes on ``cpu``."""
    events = TIMER_EVENTS if kind == "timer" else NET_EVENTS
    filters = dict(FILTERS, **{"ipi/ipi_send_cpu": f"cpu == {cpu}"})
    with hogs(n_hogs, cpu), trace_instance(events, filters) as inst:
        if kind == "timer":
            timer_workload(cpu, seconds)
        else:
            net_workload(cpu, other_cpu, count)
        text, clock = read_trace(inst)
    ev = parse(text)
    clock = clock or Clock.fit(ev)
    fn = timer_triples if kind == "timer" else net_triples
    return fn(ev, cpu, clock), clock


def cpus() -> tuple[int, int]:
    """(measured CPU, other CPU): the last allowed CPU and the first."""
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        raise OSError(f"needs two CPUs, this process may use {allowed}")
    return allowed[-1], allowed[0]
