"""A system model in the irqlab kernel under QEMU (``irqlab guest``; DESIGN
§11a; docs/kernel.md, "irqlab guest MODEL.yaml").

:func:`lower` turns a ``quest`` model with ``xhci`` and ``usb`` devices into
the kernel's ``run=spec`` workload (the text it reads through fw_cfg): its
Main VCPUs (sporadic servers), its I/O VCPUs (PIBS, one per I/O class, the
k-th ``io`` line being class k, which owns interrupter k), one fd per USB
device in the class the model binds it to, with the device's Omega_IO (+
kfree) as its bottom half's work, and one thread per task running the
task's program (compute, read, write, sleep, bind, loops; a periodic task
ends each job with ``period``). What the guest cannot run raises
:class:`GuestUnsupported` naming the field, its value and the reason.

:func:`run` starts QEMU (always under ``timeout``) with one ``usb-serial``
per USB device fed from the host -- "always ready" (a file holding more
than the run can read) when the device's model rate delivers a request
faster than the guest's own request path takes (:data:`READY_BELOW_NS`),
else a feeder thread writing a FIFO at the model's rate in host time --,
reads the kernel's console and returns the parsed records; :func:`metrics`
builds ``metrics.json`` in the simulator's shape (docs/metrics.md) from the
guest-side timestamps (TSC, emulated time under ``-icount``): per task its
jobs and responses (the kernel's ``job`` lines), per device its requests
(``req`` lines: TRB queued -> task resumed, plus the Omega_Main the task
then spends, where the simulator's latency ends), per server the CPU time
its threads got. It is marked ``"clock": "emulated"`` and counts no
simulator events, so ``irqlab report`` labels its maxima "measured".

Design principles: the model is the only input (no second format); the
kernel checks the spec again and every count in the metrics is the
kernel's (nothing is re-derived that the guest printed); the run is
deterministic under ``-icount shift=2,sleep=off`` when every feeder is
"always ready" (a paced feeder needs ``sleep=on``, and host time then leaks
into the figures: the notes say so).
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
KERNEL = ROOT / "kernel" / "target" / "x86_64-unknown-linux-gnu" / "release" / "irqlab-kernel"
QBOOT = Path("/usr/share/qemu/qboot.rom")
EXIT_PASS, EXIT_FAIL = 33, 35
#: Emulated time per instruction: `-icount shift=2` (4 ns).
ICOUNT_SHIFT = 2
#: A device whose model delivers a request within this time is fed "always
#: ready": the guest's own path from TRB queued to the task resumed takes
#: 28 us or more of emulated time (docs/kernel.md), and QEMU completes a
#: TRB whose data is there inside the doorbell write, so a faster device
#: cannot be told from one that is always ready.
READY_BELOW_NS = 50_000
#: The guest's fastest request (TRB queued -> task resumed, emulated): an
#: always-ready file holds more than a reader can take in the run.
MIN_REQUEST_NS = 25_000
#: Payload bytes of one read: one 64-byte FTDI packet less its 2 status bytes.
PACKET_PAYLOAD = 62
#: A request whose completion reached the top half later than this after
#: its TRB was queued found no data in the device (or its interrupt was held
#: off): with an always-ready feeder that means QEMU's main loop had not yet
#: refilled the device from its file (host timing, outside the instruction
#: count; normally 10-80 us; one such request in about 2 000 also happens
#: deterministically, on an idle host).
DATA_WAIT_NS = 200_000
MAX_FDS = 8  # kernel/src/run.rs MAX_FDS
MAX_CLASSES = 2  # kernel/src/usb.rs MAX_CLASSES
MAX_RECORDS = 20_000  # kernel/src/sched.rs MAX_REQUESTS
MAX_OPS = 4096  # unrolled loop steps per task
MAX_FEED_BYTES = 512 << 20  # always-ready files, all devices together


class GuestUnsupported(ValueError):
    """The model asks for what the guest cannot run (one line: field, value,
    reason)."""


class GuestUnavailable(OSError):
    """QEMU or the kernel image is missing, or the guest did not finish."""


def _no(field_: str, value: Any, why: str) -> GuestUnsupported:
    if value is None:
        return GuestUnsupported(f"{field_}: {why}")
    return GuestUnsupported(f"{field_}: {value}: {why}")


def _t(ns: int) -> str:
    """A spec time (the kernel takes integers with a unit)."""
    return f"{int(ns)}ns"


@dataclass
class Plan:
    """A lowered model: the spec text and what the metrics need."""

    spec: str
    duration_ns: int
    #: per model device index: (fd, name, rate B/s, request bytes, omega_main ns)
    devices: list[dict[str, Any]]
    #: per model server index: its name and kind (sporadic, pibs)
    servers: list[dict[str, Any]]
    #: per task: name, period (None: released once), deadline
    tasks: list[dict[str, Any]]
    cmdline: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _name(kind: str, i: int, name: str) -> str:
    if not name or any(c.isspace() or c in "#=" for c in name) or len(name) > 64:
        raise _no(f"{kind}[{i}].name", repr(name),
                  "the guest's spec takes names of at most 64 characters without spaces, "
                  "'#' or '='")
    return name


def lower(cfg: dict[str, Any], duration_ns: int | None = None) -> Plan:
    """The kernel's ``run=spec`` workload for the simulator configuration
    ``cfg`` of a model (``irqlab.model.load(path).sim_config``)."""
    dur = int(duration_ns if duration_ns is not None else cfg["duration"])
    notes: list[str] = []
    if cfg.get("path", "quest") != "quest":
        raise _no("machine.path", cfg.get("path"),
                  "the guest kernel runs the quest path only (bottom halves on I/O VCPUs)")
    if cfg.get("cpus", 1) != 1:
        raise _no("machine.cpus", cfg.get("cpus"), "the guest kernel has one CPU")
    for key, what in (("virqs", "virtual interrupts"),):
        if cfg.get(key):
            raise _no(key, len(cfg[key]), f"the guest has no {what}")
    if cfg.get("switch_overhead"):
        raise _no("vms.switch_overhead", cfg["switch_overhead"], "not a guest kernel's cost")
    if dur <= 0:
        raise _no("simulation.duration", dur, "must be positive")
    servers = cfg["servers"]
    classes = cfg.get("classes", [])
    lines = ["# irqlab guest: lowered from the model (python/irqlab/guest.py)"]
    kinds: list[dict[str, Any]] = []
    max_repl: set[int] = set()
    strict: set[bool] = set()
    io_servers = {c.get("iovcpu") for c in classes if c.get("iovcpu") is not None}
    for i, s in enumerate(servers):
        name = _name("vcpus", i, s["name"])
        pol = s["policy"]
        if s.get("cpu", 0) != 0:
            raise _no(f"vcpus[{i}].cpu", s["cpu"], "the guest kernel has one CPU")
        if s.get("rank") is not None:
            raise _no(f"vcpus[{i}].priority", s["rank"],
                      "the guest's Main VCPUs are rate monotonic (no explicit priority)")
        if pol == "sporadic":
            if i in io_servers:
                raise _no(f"vcpus[{i}].policy", pol, "an I/O VCPU in the guest is PIBS")
            if s.get("background"):
                raise _no(f"vcpus[{i}].background", True,
                          "the guest's sporadic servers have no background mode")
            max_repl.add(int(s.get("max_repl", 32)))
            lines.append(f"main {name} {_t(s['budget'])} {_t(s['period'])}")
            kinds.append({"name": s["name"], "kind": "sporadic", "budget": s["budget"],
                          "period": s["period"]})
        elif pol == "pibs":
            kinds.append({"name": s["name"], "kind": "pibs"})
            strict.add(bool(s.get("strict")))
        else:
            raise _no(f"vcpus[{i}].policy", pol,
                      "the guest kernel has sporadic Main VCPUs and PIBS I/O VCPUs only")
    cmdline = ["run=spec"]
    if len(max_repl) > 1:
        raise _no("vcpus[].max_repl", sorted(max_repl),
                  "the guest takes one replenishment-queue bound for every Main VCPU")
    if max_repl and max_repl != {32}:
        (mr,) = max_repl
        if not 2 <= mr <= 1024:
            raise _no("vcpus[].max_repl", mr, "the guest takes 2..1024")
        cmdline.append(f"max_repl={mr}")
    if len(strict) > 1:
        raise _no("vcpus[].inherit", "paper and strict",
                  "the guest takes one PIBS inheritance rule for every I/O VCPU")
    if strict == {True}:
        cmdline.append("inherit=strict")
    # I/O classes -> the kernel's classes 1..n (class c owns interrupter c)
    used = sorted({d["class"] for d in cfg.get("devices", []) if d.get("class") is not None})
    if len(used) > MAX_CLASSES:
        raise _no("classes", len(used),
                  f"the guest's driver has {MAX_CLASSES} I/O classes (interrupters 1 and 2)")
    kclass: dict[int, int] = {}
    for k, c in enumerate(used, 1):
        iov = classes[c].get("iovcpu")
        if iov is None:
            raise _no(f"classes[{c}].iovcpu", None, "the guest runs every bottom half on an "
                      "I/O VCPU (a quest model's class has one)")
        s = servers[iov]
        num, den = int(s["num"]), int(s["den"])
        if (100 * num) % den:
            raise _no(f"vcpus[{iov}].utilization", f"{num}/{den}",
                      "the guest takes whole percents")
        lines.append(f"io {_name('vcpus', iov, s['name'])} {100 * num // den}%")
        kclass[c] = k
    # the controller and its interrupter map
    xh = cfg.get("xhci", [])
    if len(xh) > 1:
        raise _no("xhci", len(xh), "the guest has one xHCI controller (qemu-xhci)")
    for x in xh:
        if x.get("cpu", 0) != 0:
            raise _no("xhci[0].cpu", x["cpu"], "the guest kernel has one CPU")
        seen: dict[int, int] = {}
        for j, it in enumerate(x.get("interrupters", [])):
            if it.get("moderation"):
                raise _no(f"xhci[0].interrupters[{j}].moderation", it["moderation"],
                          "QEMU's xHCI stores IMOD but never applies it (docs/kernel.md)")
            seen[it["class"]] = seen.get(it["class"], 0) + 1
        for c, n in seen.items():
            if n > 1 and c in kclass:
                raise _no("xhci[0].interrupter_map", classes[c]["name"],
                          f"{n} interrupters for one class; the guest's driver gives each "
                          "class exactly one")
        notes.append(f"xhci.top_half {x.get('top_half', 0) / 1e3:g} us is the simulator's; "
                     "the guest's top half is the kernel's own (trap, IMAN, event ring, "
                     "ERDP), whatever it costs under -icount")
    # devices -> fds, in model order (fd i = the i-th usb-serial device)
    devs: list[dict[str, Any]] = []
    for i, d in enumerate(cfg.get("devices", [])):
        if d["kind"] != "usb":
            raise _no(f"devices[{i}].kind", d["kind"],
                      "the guest has usb-serial devices on qemu-xhci only")
        if d.get("echo_of") is not None:
            raise _no(f"devices[{i}].echo_of", d["echo_of"],
                      "a usb-serial device returns the host's stream, not what was written")
        if d.get("cpu", 0) != 0:
            raise _no(f"devices[{i}].cpu", d["cpu"], "the guest kernel has one CPU")
        if d.get("class") is None:
            raise _no(f"devices[{i}].class", None,
                      "the guest runs every bottom half in an I/O class (none is bound)")
        if len(devs) >= MAX_FDS:
            raise _no("devices", len(cfg["devices"]),
                      f"the guest reports at most {MAX_FDS} usb-serial devices")
        fd = len(devs)
        _name("devices", i, d["name"])
        bh = int(d.get("omega_io", 0)) + int(d.get("kfree", 0))
        lines.append(f"fd {fd} {kclass[d['class']]}" + (f" bh={_t(bh)}" if bh else ""))
        devs.append({"fd": fd, "name": d["name"], "rate": d.get("rate"),
                     "bytes": d.get("bytes", 512), "omega_main": int(d.get("omega_main", 0)),
                     "jitter": d.get("jitter", 0), "class": kclass[d["class"]]})
    if any(d["bytes"] != PACKET_PAYLOAD for d in devs):
        notes.append("a read in the guest is one 64-byte FTDI packet (62 bytes of payload), "
                     "not the model's request size; the bytes and throughput are the guest's")
    if any(d["jitter"] for d in devs):
        notes.append("the devices' response jitter is the simulator's: QEMU's usb-serial "
                     "answers at once when its data is there")
    # tasks
    tasks: list[dict[str, Any]] = []
    for i, t in enumerate(cfg["tasks"]):
        name = _name("tasks", i, t["name"])
        srv = t["server"]
        if kinds[srv]["kind"] != "sporadic":
            raise _no(f"tasks[{i}].vcpu", servers[srv]["name"], "tasks run on Main VCPUs")
        if t.get("abort_on_miss"):
            raise _no(f"tasks[{i}].abort_on_miss", True, "the guest runs late jobs to the end")
        rel = t["release"]
        ops: list[str]
        if rel["kind"] == "periodic":
            if rel.get("offset"):
                raise _no(f"tasks[{i}].offset", rel["offset"],
                          "the guest releases every task at the start")
            period = int(rel["period"])
            body = _ops(t["program"], devs, kclass, f"tasks[{i}].program", periodic=True)
            body.append(f"period={_t(period)}")
            if rel.get("jobs") is not None:
                n = int(rel["jobs"])
                if n * len(body) > MAX_OPS:
                    raise _no(f"tasks[{i}].jobs", n, f"more than {MAX_OPS} steps unrolled")
                ops = body * n
            else:
                ops = [*body, "loop"]
            deadline = int(rel.get("deadline") or period)
        else:
            if rel.get("at"):
                raise _no(f"tasks[{i}].offset", rel["at"],
                          "the guest releases every task at the start")
            period, deadline = None, None
            ops = _ops(t["program"], devs, kclass, f"tasks[{i}].program", periodic=False)
        if not ops or ops == ["loop"]:
            raise _no(f"tasks[{i}].program", "[]", "a task with nothing to do")
        lines.append(f"task {name} {servers[srv]['name']} {int(t.get('priority', 1))} "
                     + " ".join(ops))
        jobs = rel.get("jobs") if rel["kind"] == "periodic" else None
        tasks.append({"name": t["name"], "period": period, "deadline": deadline, "jobs": jobs})
    lines.append(f"run {_t(dur)}")
    return Plan("\n".join(lines) + "\n", dur, devs, kinds, tasks, cmdline, notes)


def _ops(program: list[dict[str, Any]], devs: list[dict[str, Any]], kclass: dict[int, int],
         where: str, *, periodic: bool) -> list[str]:
    """A program as spec ops (counted loops unrolled; a `forever` loop only
    as the whole program of a task released once: the kernel's `loop`
    restarts the program)."""
    out: list[str] = []
    for j, st in enumerate(program):
        op = st["op"]
        if op == "compute":
            if st["ns"] > 0:
                out.append(f"compute={_t(st['ns'])}")
        elif op in ("io", "write"):
            d = devs[st["device"]]
            out.append(f"{'read' if op == 'io' else 'write'}={d['fd']}")
            if d["omega_main"]:
                out.append(f"compute={_t(d['omega_main'])}")
        elif op == "sleep":
            if st["ns"] > 0:
                out.append(f"sleep={_t(st['ns'])}")
        elif op == "bind":
            out.append(f"iovcpu={devs[st['device']]['fd']}:{kclass.get(st['class'], 0)}")
            if st["class"] not in kclass:
                raise _no(f"{where}[{j}].bind.class", st["class"],
                          "a class no device starts in (the guest's classes are the devices')")
        elif op == "loop":
            if st.get("count") is None:
                if periodic or j != 0 or len(program) != 1:
                    raise _no(f"{where}[{j}]", "forever",
                              "the guest's loop restarts the whole program: a forever loop "
                              "must be the whole program of a task released once")
                out += [*_ops(st["body"], devs, kclass, f"{where}[{j}].do", periodic=True),
                        "loop"]
            else:
                body = _ops(st["body"], devs, kclass, f"{where}[{j}].do", periodic=True)
                if len(body) * int(st["count"]) > MAX_OPS:
                    raise _no(f"{where}[{j}].loop.count", st["count"],
                              f"more than {MAX_OPS} steps unrolled")
                out += body * int(st["count"])
        else:
            raise _no(f"{where}[{j}]", op, "not a step the guest runs")
        if len(out) > MAX_OPS:
            raise _no(where, len(out), f"more than {MAX_OPS} steps")
    return out


# ---- running it -------------------------------------------------------------

def pattern(fd: int, n: int) -> bytes:
    """The stream fed to device `fd` (kernel/src/run.rs `pattern`)."""
    return bytes((p * 7 + fd * 13) % 251 for p in range(n))


def _feed_bytes(duration_ns: int) -> int:
    """Bytes an always-ready device file holds: more than one reader can
    take in the run (one packet per MIN_REQUEST_NS), plus a margin."""
    return (duration_ns // MIN_REQUEST_NS + 64) * PACKET_PAYLOAD + 4096


class _Feeder(threading.Thread):
    """Writes `rate` bytes per host second into a FIFO until stopped."""

    def __init__(self, path: Path, fd: int, rate: float) -> None:
        super().__init__(daemon=True)
        self.path, self.fd, self.rate = path, fd, rate
        self.stop = threading.Event()
        self.sent = 0

    def run(self) -> None:
        chunk = PACKET_PAYLOAD
        data = pattern(self.fd, 251 * chunk)
        f = -1
        while f < 0 and not self.stop.is_set():
            try:  # ENXIO until QEMU has opened the FIFO's reading end
                f = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                self.stop.wait(0.01)
        if f < 0:
            return
        t0 = time.monotonic()
        try:
            while not self.stop.is_set():
                due = t0 + (self.sent + chunk) / self.rate
                wait = due - time.monotonic()
                if wait > 0:
                    self.stop.wait(min(wait, 0.05))
                    continue
                off = self.sent % (251 * chunk)
                try:
                    self.sent += os.write(f, (data * 2)[off:off + chunk])
                except BlockingIOError:
                    self.stop.wait(0.001)
        except OSError:
            pass
        finally:
            os.close(f)


@dataclass
class GuestRun:
    """One run of a lowered model in the guest."""

    plan: Plan
    status: int
    console: str
    command: list[str]
    wall_s: float
    feeders: dict[str, str]
    accel: str = "tcg"

    @property
    def passed(self) -> bool:
        return self.status == EXIT_PASS


def qemu_binary() -> str:
    q = shutil.which("qemu-system-x86_64")
    if q is None:
        raise GuestUnavailable("qemu-system-x86_64 is not installed "
                               "(apt-get install qemu-system-x86, or make apt)")
    return q


def kernel_image() -> Path:
    k = Path(os.environ.get("IRQLAB_KERNEL", KERNEL))
    if not k.is_file():
        raise GuestUnavailable(f"{k}: no kernel image (make kernel; or set IRQLAB_KERNEL)")
    return k


def accel_args(accel: str, sleep: bool) -> list[str]:
    """QEMU's accelerator: TCG with `-icount` (emulated time, deterministic
    with `sleep=off`), or KVM where hardware virtualization is present (the
    host's time; not on this machine, whose /dev/kvm is a software
    hypervisor QEMU's KVM mode fails on: docs/kernel.md)."""
    if accel == "tcg":
        return ["-accel", "tcg", "-icount",
                f"shift={ICOUNT_SHIFT},sleep={'on' if sleep else 'off'}"]
    if accel == "kvm":
        return ["-accel", "kvm", "-cpu", "host"]
    raise ValueError(f"--accel: {accel!r}: tcg or kvm")


def run(plan: Plan, *, workdir: Path | None = None, extra_cmdline: list[str] | None = None,
        timeout_s: float | None = None, accel: str = "tcg") -> GuestRun:
    """Boot the kernel with the plan's spec and devices under QEMU (TCG by
    default); returns the console and QEMU's exit status (33 pass, 35 a
    check of the kernel's failed; the records are there in both cases)."""
    accel_args(accel, False)  # a bad accelerator is refused before anything runs
    qemu, kernel = qemu_binary(), kernel_image()
    tmp = None
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="irqlab-guest-")
        workdir = Path(tmp.name)
    workdir.mkdir(parents=True, exist_ok=True)
    feeders: list[_Feeder] = []
    how: dict[str, str] = {}
    try:
        spec = workdir / "spec.txt"
        spec.write_text(plan.spec)
        paced = [d for d in plan.devices
                 if d["rate"] and d["bytes"] * 1e9 / d["rate"] >= READY_BELOW_NS]
        size = _feed_bytes(plan.duration_ns)
        if size * (len(plan.devices) - len(paced)) > MAX_FEED_BYTES:
            raise _no("simulation.duration", f"{plan.duration_ns / 1e9:g}s",
                      f"too long for the always-ready device files ({MAX_FEED_BYTES >> 20} MiB)")
        args = ["-device", f"qemu-xhci,id=xhci,p2={min(15, max(8, len(plan.devices) + 2))}"]
        for d in plan.devices:
            base = workdir / f"d{d['fd']}"
            inp = Path(f"{base}.in")
            inp.unlink(missing_ok=True)
            if d in paced:
                os.mkfifo(inp)
                feeders.append(_Feeder(inp, d["fd"], float(d["rate"])))
                how[d["name"]] = f"paced at {d['rate']:,} B/s of host time (FIFO)"
            else:
                inp.write_bytes(pattern(d["fd"], size))
                how[d["name"]] = "always ready"
            Path(f"{base}.out").write_bytes(b"")
            args += ["-chardev", f"pipe,id=s{d['fd']},path={base}",
                     "-device", f"usb-serial,chardev=s{d['fd']},bus=xhci.0"]
        sleep = "on" if paced else "off"
        if paced:
            plan.notes.append(
                "paced devices are fed at the model's rate in host time, and QEMU runs with "
                "-icount sleep=on (an idle guest's clock follows the host's): emulated time "
                "runs at the host's only while the guest idles, so the rate the guest sees "
                "(its throughput) differs from the model's and the run is not deterministic")
        dur_s = plan.duration_ns / 1e9
        if timeout_s is None:
            timeout_s = 60 + 60 * dur_s * max(1, len(plan.devices))
        append = " ".join([*plan.cmdline, *(extra_cmdline or []),
                           f"watchdog_ms={int(plan.duration_ns / 1e6) + 10_000}"])
        cmd = ["timeout", "--kill-after=5", f"{timeout_s:g}", qemu,
               *accel_args(accel, sleep == "on"), "-display", "none",
               "-serial", "stdio", "-monitor", "none", "-no-reboot", "-m", "128",
               "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
               *(["-bios", str(QBOOT), "-vga", "none"] if QBOOT.exists() else []),
               *args, "-fw_cfg", f"name=opt/irqlab/spec,file={spec}",
               "-kernel", str(kernel), "-append", append]
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for f in feeders:
            f.start()
        out, _ = p.communicate()
        wall = time.monotonic() - t0
        for f in feeders:
            f.stop.set()
        for f in feeders:
            f.join(2)
        console = out.decode(errors="replace")
        (workdir / "console.txt").write_text(console)
        if p.returncode not in (EXIT_PASS, EXIT_FAIL):
            tail = "; ".join(console.strip().splitlines()[-3:])
            why = "timed out" if p.returncode in (124, 137) else f"exit status {p.returncode}"
            raise GuestUnavailable(f"the guest did not finish ({why}): {tail[-400:]}")
        if "spec: released_ns=" not in console:
            err = [ln for ln in console.splitlines() if ln.startswith("spec: ")]
            why = err[0] if err else "; ".join(console.strip().splitlines()[-2:])[-400:]
            raise GuestUnavailable(f"the guest did not run the spec: {why}")
        return GuestRun(plan, p.returncode, console, cmd, wall, how, accel)
    finally:
        for f in feeders:
            f.stop.set()
        if tmp is not None:
            tmp.cleanup()


def records(console: str, tag: str) -> list[dict[str, str]]:
    """The `tag key=value ...` lines the kernel printed."""
    rows = []
    for line in console.splitlines():
        if line.startswith(tag + " "):
            rows.append(dict(w.split("=", 1) for w in line.split()[1:] if "=" in w))
    return rows


# ---- metrics.json --------------------------------------------------------------

def dist(samples: list[int]) -> dict[str, Any]:
    """A distribution in the simulator's shape (docs/metrics.md, Dist):
    exact quantiles (nearest rank) and a histogram of at most 32 bins."""
    n = len(samples)
    if n == 0:
        return {"count": 0, "min_ns": None, "mean_ns": None, "max_ns": None,
                "std_dev_ns": None, "p50_ns": None, "p99_ns": None, "histogram_ns": []}
    xs = sorted(samples)
    mean = sum(xs) / n
    var = sum((x - mean) ** 2 for x in xs) / n

    def q(p: float) -> int:
        return xs[min(n - 1, max(0, math.ceil(p * n) - 1))]

    lo, hi = xs[0], xs[-1] + 1
    width = max(1, math.ceil((hi - lo) / 32))
    bins: dict[int, int] = {}
    for x in xs:
        b = (x - lo) // width
        bins[b] = bins.get(b, 0) + 1
    hist = [[lo + b * width, lo + (b + 1) * width, c] for b, c in sorted(bins.items())]
    return {"count": n, "min_ns": xs[0], "mean_ns": mean, "max_ns": xs[-1],
            "std_dev_ns": math.sqrt(var), "p50_ns": q(0.5), "p99_ns": q(0.99),
            "histogram_ns": hist}


def metrics(g: GuestRun, cfg: dict[str, Any]) -> dict[str, Any]:
    """The guest run as the simulator's ``metrics.json`` (times relative to
    the tasks' common release, in emulated ns)."""
    con, plan = g.console, g.plan
    rel = [r for r in records(con, "spec:") if "released_ns" in r]
    if not rel:
        raise GuestUnavailable("the guest printed no release line (not a run=spec console)")
    t0 = int(rel[0]["released_ns"])
    ends = records(con, "end")
    if not ends or not records(con, "sched:"):
        tail = "; ".join(con.strip().splitlines()[-3:])[-400:]
        raise GuestUnavailable(f"the guest did not finish its run: {tail}")
    end = int(ends[0]["now_ns"])
    dur = end - t0
    sched = records(con, "sched:")[0]
    vcpu = {v["name"]: v for v in records(con, "vcpu")}
    pibs = {p["vcpu"]: p for p in records(con, "pibs")}
    fds = {int(f["fd"]): f for f in records(con, "fd")}
    jobs: dict[str, list[tuple[int, int]]] = {}
    for j in records(con, "job"):
        jobs.setdefault(j["task"], []).append((int(j["release_ns"]), int(j["end_ns"])))
    reqs = records(con, "req")
    truncated = len(reqs) >= MAX_RECORDS or sum(len(v) for v in jobs.values()) >= MAX_RECORDS
    tasks = []
    for t in plan.tasks:
        js = jobs.get(t["name"], [])
        resp = [e - r for r, e in js]
        if t["period"] is None:
            released, late = 1, 0
            unfinished = 0
        else:
            released = (dur + t["period"] - 1) // t["period"]
            if t["jobs"] is not None:
                released = min(released, int(t["jobs"]))
            late = sum(1 for x in resp if x > t["deadline"])
            unfinished = sum(1 for k in range(len(js), released)
                             if t0 + k * t["period"] + t["deadline"] < end)
        tasks.append({"name": t["name"], "released": released, "completed": len(js),
                      "deadline_misses": late + unfinished,
                      "unfinished_past_deadline": unfinished, "aborted": 0,
                      "response": dist(resp),
                      "completions_ns": [e - t0 for _, e in js][:10_000]})
    devices = []
    stages: dict[str, dict[str, Any]] = {}
    for d in plan.devices:
        f = fds.get(d["fd"], {})
        mine = [r for r in reqs if int(r["fd"]) == d["fd"]]
        lat = [int(r["resumed_ns"]) - int(r["submit_ns"]) + d["omega_main"] for r in mine]
        handling = [int(r["done_ns"]) - int(r["irq_ns"]) for r in mine]
        stages[d["name"]] = {
            f"{a}_to_{b}": dist([int(r[f"{b}_ns"]) - int(r[f"{a}_ns"]) for r in mine])
            for a, b in (("submit", "irq"), ("irq", "bh"), ("bh", "done"), ("done", "resumed"))}
        waits = sum(1 for r in mine
                    if int(r["irq_ns"]) - int(r["submit_ns"]) > DATA_WAIT_NS)
        nbytes = int(f.get("bytes", 0))
        ev = sum(int(f.get(f"{k}{i}", 0)) for k in ("events", "out_events") for i in range(3))
        thr = nbytes * 1e9 / dur if dur > 0 else 0.0
        devices.append({"name": d["name"], "interrupts": ev,
                        "handled": int(f.get("completed", 0)) + int(f.get("writes", 0)),
                        "dropped": 0, "bytes": nbytes, "throughput_bytes_per_s": thr,
                        "throughput_windows_bytes_per_s": [thr], "latency": dist(lat),
                        "handling": dist(handling),
                        # beyond the simulator's fields: requests whose data was not
                        # there when queued (TRB queued -> top half > DATA_WAIT_NS)
                        "data_waits": waits})
    servers = []
    for s in plan.servers:
        if s["kind"] == "sporadic":
            busy = int(vcpu.get(s["name"], {}).get("consumed_ns", 0))
        else:
            busy = int(pibs.get(s["name"], {}).get("consumed_ns", 0))
        share = busy / dur if dur > 0 else 0.0
        servers.append({"name": s["name"], "cpu": 0, "kind": s["kind"], "busy_ns": busy,
                        "background_ns": 0, "share_fraction": share,
                        "share_windows_fraction": [share]})
    m: dict[str, Any] = {
        "duration_ns": dur, "seed": cfg.get("seed", 0), "path": "quest", "window_ns": dur,
        "events": 0,
        "cpus": [{"schedule_calls": int(sched["resched"]),
                  "server_switches": int(sched["switches"])}],
        "servers": servers, "tasks": tasks, "devices": devices, "virqs": [],
        # beyond the simulator's fields: where these numbers come from
        "clock": "emulated" if g.accel == "tcg" else "host",
        "source": "guest",
        "clock_note": (f"emulated time: QEMU TCG, -icount shift={ICOUNT_SHIFT} "
                       f"({1 << ICOUNT_SHIFT} ns per guest instruction), guest TSC"
                       if g.accel == "tcg" else "host time: QEMU KVM, guest TSC"),
        "guest": {"status": "pass" if g.passed else "fail", "wall_s": round(g.wall_s, 3),
                  "cmdline": " ".join(plan.cmdline), "feeders": g.feeders,
                  "records_truncated": truncated, "notes": plan.notes,
                  "budget": budget_rows(con),
                  # per device, each request's path in four stages: TRB queued ->
                  # top half -> bottom half starts -> bottom half done -> task resumed
                  "stages": stages,
                  "interrupters": [{k: r[k] for k in ("intr", "vector", "msix_irqs",
                                                      "transfer_events")}
                                   for r in records(con, "intr")]},
    }
    return m


#: The guest's enforcement granularity: the timer interrupt that ends a
#: budget arrives up to 11 us late under -icount (kernel/src/run.rs
#: BUDGET_TOLERANCE_NS).
BUDGET_TOLERANCE_NS = 50_000


def budget_rows(console: str) -> list[dict[str, Any]]:
    """Per Main VCPU, the guest's own accounting (TSC): its budget and
    period, whether it was CPU-bound (never blocked: every replenishment on
    a whole period), the least and most CPU time it got in a whole period,
    the most in any window of one period, and the kernel's verdicts."""
    out = []
    for v in records(console, "vcpu"):
        out.append({"name": v["name"], "cpu_bound": v["cpu_bound"] == "true",
                    "budget_ns": int(v["budget_ns"]), "period_ns": int(v["period_ns"]),
                    "periods": int(v["periods"]), "period_min_ns": int(v["period_min_ns"]),
                    "period_max_ns": int(v["period_max_ns"]),
                    "window_max_ns": int(v["window_max_ns"]),
                    "within_budget": v["within_budget"] == "true",
                    "truncated": v["truncated"] == "true"})
    return out


def budget_violations(rows: list[dict[str, Any]], served_fraction: float = 0.9) -> list[str]:
    """The Main-VCPU check on the guest's own figures: a CPU-bound VCPU gets
    at most C (+ the tolerance) and at least `served_fraction` of C in every
    whole period (it receives its budget under overload); any VCPU at most
    2C in any window of one period (a periodic task run back to back)."""
    bad = []
    for v in rows:
        c = v["budget_ns"]
        if v["truncated"]:
            bad.append(f"{v['name']}: run intervals truncated")
        if v["cpu_bound"] and v["period_max_ns"] > c + BUDGET_TOLERANCE_NS:
            bad.append(f"{v['name']}: {v['period_max_ns']} ns in a period, budget {c}")
        if v["window_max_ns"] > 2 * c + BUDGET_TOLERANCE_NS:
            bad.append(f"{v['name']}: {v['window_max_ns']} ns in a window of one period")
        if v["cpu_bound"] and (v["periods"] == 0
                               or v["period_min_ns"] < served_fraction * c):
            bad.append(f"{v['name']}: only {v['period_min_ns']} ns in a period, budget {c}")
    return bad
