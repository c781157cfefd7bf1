"""Export a system model to the ecosystem's tools: ``rtapp(model)`` writes
its workload as an rt-app JSON description (Debian's ``rt-app``; format in
``/usr/share/doc/rt-app/tutorial.txt``), so the same workload can be
replayed on any Linux.

The mapping (docs/model.md, "Export to rt-app"):

* a task is an rt-app thread named like the task, pinned to its VCPU's CPU
  (``cpus``), started after its ``offset`` (``delay``);
* scheduling from its VCPU: a budgeted server (sporadic, deferrable,
  polling: ``budget``/``period``; cbs: ``runtime``/``period``) that runs
  this one task becomes SCHED_DEADLINE with ``dl-runtime``/``dl-period``
  (``dl-deadline`` = period; not pinned: Linux refuses a deadline thread
  whose affinity is smaller than its root domain); a ``fifo`` VCPU keeps its
  SCHED_FIFO priority;
  tasks sharing a budgeted server (or every task, with ``fifo=True``) get
  rate-monotonic SCHED_FIFO priorities (server period or explicit priority
  first, then the task's priority inside the server) from 90 down;
* its program: ``compute`` -> ``run`` (calibrated work, in us), ``sleep``
  -> ``sleep``, ``loop`` -> the body repeated; a ``read``/``write`` of a
  disk or USB endpoint -> ``sleep`` for the device's service time (disk
  latency; USB transfer at the device's rate, at least a 125 us microframe)
  then ``run`` of its top and bottom half (rt-app has no interrupt context:
  the reader pays), of a NIC or generic device -> ``suspend`` until that
  device's generator thread ``resume``s it; then ``run`` of its
  ``omega_main``; a periodic task ends each job with a ``timer`` of its period (rt-app
  logs ``c_period`` per job), ``jobs`` bounds ``loop``;
* a device that tasks read becomes a generator thread ``dev.<name>`` at
  SCHED_FIFO 99 on the device's CPU: per arrival it runs the top plus
  bottom half, resumes its readers and waits a ``timer`` of the inter-arrival
  time (periodic and flood NICs: ``interval``; generic devices:
  ``min_interarrival``).

What rt-app cannot replay is refused with the field, the value and the
reason (``ValueError``): a hypervisor machine, ``abort_on_miss``, fd
rebinding (``bind``), a NIC without a fixed inter-arrival time (Poisson,
burst, trace, ping-flood), a ``forever`` loop inside a periodic task's job.

Design principles: the export reads the validated model and its resolved
configuration (integer ns), never re-parses units; nothing the model says is
silently dropped (what is not exported is refused).
"""

from __future__ import annotations

import math
from typing import Any

from irqlab.model import LoadedModel, model_error

__all__ = ["rtapp"]

FIFO_TOP = 90  # highest priority given to a task (devices get 99)
DEVICE_PRIO = 99


def _us(ns: int) -> int:
    """rt-app's unit (us), at least 1 for a non-zero time."""
    return max(1, round(ns / 1000)) if ns else 0


def _interarrival(dev: dict[str, Any], path: str) -> int:
    kind = dev["kind"]
    if kind == "nic" and dev["arrival"]["kind"] == "periodic" and dev["arrival"]["interval"]:
        return dev["arrival"]["interval"]
    if kind == "generic":
        return dev["min_interarrival"]
    raise model_error(path, dev["name"], "rt-app replays only NICs with a fixed inter-arrival "
                      f"time ({dev['arrival']['kind']} arrivals)")


def _service(dev: dict[str, Any], cfg: dict[str, Any]) -> tuple[int, int] | None:
    """A request-driven device's `(wait, work)` in ns: a disk's latency,
    then its top half and PIO bottom half; a USB transfer's time at the
    device's rate (at least one 125 us microframe), then the controller's
    top half and the bottom half (Omega_IO, kfree). `None` for devices whose
    events come unsolicited (NIC, generic)."""
    k = dev["kind"]
    if k == "disk":
        return dev["latency"], dev["top_half"] + dev["per_sector"] * dev["sectors"]
    if k == "usb":
        transfer = math.ceil(dev["bytes"] * 1e9 / dev["rate"]) if dev["rate"] else 0
        top = cfg["xhci"][dev["controller"]]["top_half"]
        return max(transfer, 125_000), top + dev["omega_io"] + dev["kfree"]
    return None


def _device_work(dev: dict[str, Any]) -> int:
    if dev["kind"] == "generic":
        return dev["isr"] + dev["dsr"]
    return dev["top_half"] + dev["bottom_half"]


class _Events:
    """One thread's events in order, with rt-app's unique key suffixes."""

    def __init__(self) -> None:
        self.items: list[tuple[str, Any]] = []

    def add(self, kind: str, value: Any) -> None:
        self.items.append((f"{kind}{len(self.items)}", value))


def _program(phases: list[dict[str, Any]], path: str, ev: _Events, cfg: dict[str, Any],
             task: str, periodic: bool, readers: dict[int, list[str]]) -> None:
    for k, ph in enumerate(phases):
        here = f"{path}[{k}]"
        op = ph["op"]
        if op == "compute":
            ev.add("run", _us(ph["ns"]))
        elif op == "sleep":
            ev.add("sleep", _us(ph["ns"]))
        elif op == "io":
            d = ph["device"]
            dev = cfg["devices"][d]
            service = _service(dev, cfg)
            if service is not None:  # a request the task waits for
                wait, work = service
                ev.add("sleep", _us(wait))
                if work:
                    ev.add("run", _us(work))
            else:  # unsolicited events: its generator thread wakes the task
                _interarrival(dev, here)
                readers.setdefault(d, [])
                if task not in readers[d]:
                    readers[d].append(task)
                ev.add("suspend", task)
            if dev["omega_main"]:
                ev.add("run", _us(dev["omega_main"]))
        elif op == "bind":
            raise model_error(here, "bind", "rt-app has no file descriptors to rebind")
        elif op == "loop":
            if ph.get("count") is None:
                if periodic:
                    raise model_error(here, "forever",
                                      "a forever loop inside a periodic task never ends a job")
                raise model_error(here, "forever", "only a task's whole program may loop forever")
            for _ in range(ph["count"]):
                _program(ph["body"], f"{here}.do", ev, cfg, task, periodic, readers)
        else:  # pragma: no cover - the loader knows every op
            raise model_error(here, op, "unknown step")


def rtapp(model: LoadedModel, duration_s: int | None = None, fifo: bool = False,
          calibration: str | int = "CPU0", logdir: str = "./",
          log_basename: str = "rt-app") -> dict[str, Any]:
    """The model's workload as an rt-app description (a JSON-ready dict).
    `duration_s`: the use case's length (default: the model's simulated
    duration, at least 1 s); `fifo`: SCHED_FIFO for every task."""
    m, cfg = model.model, model.sim_config
    if m["machine"]["path"] == "hypervisor":
        raise model_error("machine.path", "hypervisor",
                          "rt-app replays Linux threads; a hypervisor's guests are not")
    servers = cfg["servers"]
    tasks_on = [sum(1 for t in cfg["tasks"] if t["server"] == i) for i in range(len(servers))]

    def budget(s: dict[str, Any]) -> tuple[int, int] | None:
        if s["policy"] in ("sporadic", "deferrable", "polling"):
            return s["budget"], s["period"]
        if s["policy"] == "cbs":
            return s["runtime"], s["period"]
        return None

    # Rate-monotonic SCHED_FIFO order of the tasks that do not get
    # SCHED_DEADLINE or an explicit FIFO priority.
    def rm_key(t: dict[str, Any]) -> tuple[int, int]:
        s = servers[t["server"]]
        key = s["rank"] * 1000 if s.get("rank") is not None else s.get("period") or 0
        return key, -t["priority"]

    fp = [t for t in cfg["tasks"]
          if servers[t["server"]]["policy"] != "unbounded"
          and (fifo or budget(servers[t["server"]]) is None or tasks_on[t["server"]] > 1)]
    fp_prio = {t["name"]: max(FIFO_TOP - i, 2) for i, t in enumerate(sorted(fp, key=rm_key))}

    out: dict[str, Any] = {}
    readers: dict[int, list[str]] = {}
    for i, t in enumerate(cfg["tasks"]):
        s = servers[t["server"]]
        if t.get("abort_on_miss"):
            raise model_error(f"tasks[{i}].abort_on_miss", "true",
                              "rt-app cannot abort a job at its deadline")
        th: dict[str, Any] = {"cpus": [s["cpu"]]}
        if s["policy"] == "unbounded":
            th.update(policy="SCHED_FIFO", priority=max(1, min(99, 100 - (s.get("rank") or 50))))
        elif t["name"] in fp_prio:
            th.update(policy="SCHED_FIFO", priority=fp_prio[t["name"]])
        else:
            b = budget(s)
            assert b is not None
            # Linux refuses SCHED_DEADLINE to a thread whose affinity is
            # smaller than its root domain: deadline threads are not pinned.
            del th["cpus"]
            th.update({"policy": "SCHED_DEADLINE", "dl-runtime": _us(b[0]),
                       "dl-period": _us(b[1]), "dl-deadline": _us(b[1])})
        rel = t["release"]
        periodic = rel["kind"] == "periodic"
        start = rel["offset"] if periodic else rel["at"]
        if start:
            th["delay"] = _us(start)
        prog = t["program"]
        path = f"tasks[{i}].program"
        ev = _Events()
        if not periodic and len(prog) == 1 and prog[0]["op"] == "loop" \
                and prog[0].get("count") is None:
            th["loop"] = -1
            _program(prog[0]["body"], f"{path}[0].forever", ev, cfg, t["name"], False, readers)
        else:
            _program(prog, path, ev, cfg, t["name"], periodic, readers)
            if periodic:
                ev.add("timer", {"ref": f"timer.{t['name']}", "period": _us(rel["period"])})
                th["loop"] = rel["jobs"] if rel.get("jobs") is not None else -1
            else:
                th["loop"] = 1
        if not ev.items:
            raise model_error(path, "", "nothing rt-app can run (no compute, sleep or read)")
        th.update(ev.items)
        out[t["name"]] = th
    for d, names in sorted(readers.items()):
        dev = cfg["devices"][d]
        ev = _Events()
        work = _device_work(dev)
        if work:
            ev.add("run", _us(work))
        for n in names:
            ev.add("resume", n)
        ev.add("timer", {"ref": f"timer.dev.{dev['name']}",
                         "period": _us(_interarrival(dev, f"devices[{d}]"))})
        th = {"policy": "SCHED_FIFO", "priority": DEVICE_PRIO, "cpus": [dev["cpu"]], "loop": -1}
        th.update(ev.items)
        out[f"dev.{dev['name']}"] = th
    if duration_s is None:
        duration_s = max(1, math.ceil(cfg["duration"] / 1e9))
    return {
        "tasks": out,
        # A log buffer (MB), not "file": rt-app 1.0 loses file-mode logs of
        # threads it kills at the end of `duration`.
        "global": {"duration": duration_s, "calibration": calibration,
                   "default_policy": "SCHED_OTHER", "pi_enabled": False, "lock_pages": False,
                   "logdir": logdir, "log_size": 4, "log_basename": log_basename,
                   "ftrace": False, "gnuplot": False},
    }
