"""The analyses from Python (``irqlab._native.analysis``): the fixed-priority
RTA (``fp_rta``), the UUniFast generator, QUEST-VCPU Eq. 1, USB-DIFFSERV Eq. 1-3 and Eq. 4-8, the
bounds of a quest / quest-no-iovcpu / linux machine (``model_bounds``), the
VINT Eq. 3-8 bounds of a hypervisor machine, and the VINT sweeps (Figures
4-9).

The sweep runs in Rust on all cores, deterministic for a seed whatever the
number of threads. Times are integer nanoseconds everywhere (arguments
and results); throughputs are bytes per second. ``bounds(model)`` gathers
what ``irqlab analyze`` prints for a loaded model.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from irqlab._native import analysis as _a

if TYPE_CHECKING:
    from irqlab.model import LoadedModel

SCHEMES = ("DSbase", "SSbase", "DSvINT", "SSvINT")
# Most generated systems one sweep point evaluates.
MAX_SETS = 10_000_000

def _finite(arg: str, x: Any, *, positive: bool = False) -> float:
    """`x` as a float; ValueError naming `arg` unless finite and >= 0 (> 0)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TypeError(f"{arg}: {x!r} must be a number")
    if not math.isfinite(x) or x < 0 or (positive and x == 0):
        rule = "a finite positive number" if positive else "a finite non-negative number"
        raise ValueError(f"{arg}: {x} must be {rule}")
    return float(x)


def quest_eq1(main: Sequence[tuple[int, int]], io: Sequence[float]) -> tuple[float, float,
                                                                          float, bool]:
    """QUEST-VCPU Eq. 1: `main` = [(C, T)] in ns, `io` = [U]; returns
    (demand, bound, slack, passes)."""
    for i, u in enumerate(io):
        if not 0 < _finite(f"io[{i}]", u) <= 1:
            raise ValueError(f"io[{i}]: {u} must be a utilization U in (0, 1]")
    for i, pair in enumerate(main):
        if len(pair) != 2:
            raise ValueError(f"main[{i}]: {pair!r} must be a (C, T) pair of integers (ns)")
        c, t = pair
        for name, x in (("C", c), ("T", t)):
            if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < 1 << 64:
                raise ValueError(f"main[{i}].{name}: {x!r} must be a non-negative integer (ns)")
        if t == 0 or c > t:
            raise ValueError(f"main[{i}]: ({c}, {t}): need 0 <= C <= T and T > 0")
    return _a.quest_eq1(list(main), list(io))


NS = 1e9  # ns per second: the native USB-DIFFSERV functions work in seconds


def _u_io(u_io: float) -> float:
    if not 0 < _finite("u_io", u_io) <= 1:
        raise ValueError(f"u_io: {u_io} must be in (0, 1]")
    return float(u_io)


def usb_typical_throughput(beta_bytes: int, omega_io_ns: int, u_io: float,
                           omega_main_ns: int) -> float:
    """USB-DIFFSERV Eq. 3 with the typical latency: the throughput (bytes
    per second) of transfers of ``beta_bytes`` bytes whose bottom half needs
    ``omega_io_ns`` on an I/O VCPU of utilization ``u_io`` (0-1] and whose
    main-VCPU part needs ``omega_main_ns``."""
    for name, x in (("beta_bytes", beta_bytes), ("omega_io_ns", omega_io_ns),
                    ("omega_main_ns", omega_main_ns)):
        _finite(name, x)
    u_io = _u_io(u_io)
    return float(_a.usb_typical_throughput(beta_bytes, omega_io_ns / NS, u_io,
                                           omega_main_ns / NS))


def usb_latency_bound(omega_io_ns: int, u_io: float, omega_main_ns: int, c_main_ns: int,
                      t_main_ns: int) -> int:
    """USB-DIFFSERV Eq. 1-2: the worst-case latency (ns, rounded to the
    nearest ns) of a USB transfer whose bottom half needs ``omega_io_ns`` on
    an I/O VCPU of utilization ``u_io`` (0-1], read by a task that needs
    ``omega_main_ns`` on a Main VCPU of budget ``c_main_ns`` and period
    ``t_main_ns``."""
    _finite("omega_io_ns", omega_io_ns)
    _finite("omega_main_ns", omega_main_ns)
    _finite("c_main_ns", c_main_ns, positive=True)
    _finite("t_main_ns", t_main_ns, positive=True)
    u_io = _u_io(u_io)
    if c_main_ns > t_main_ns:
        raise ValueError(f"c_main_ns: {c_main_ns} must not exceed t_main_ns {t_main_ns}")
    return round(_a.usb_latency_bound(omega_io_ns / NS, u_io, omega_main_ns / NS,
                                      c_main_ns / NS, t_main_ns / NS) * NS)


def reads(program: list[dict[str, Any]]) -> set[int]:
    """Devices a task program reads (indices into ``sim_config["devices"]``)."""
    out: set[int] = set()
    for step in program:
        if step["op"] == "io":
            out.add(step["device"])
        elif step["op"] == "loop":
            out |= reads(step["body"])
    return out


def usb_io_bounds(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """USB-DIFFSERV Eq. 1-3 for every task of a ``quest`` machine reading a
    USB device through an I/O VCPU (sporadic Main VCPU, PIBS I/O VCPU):
    ``latency_bound_ns`` and ``throughput_bound_bytes_per_s``."""
    servers = cfg["servers"]
    out = []
    for t in cfg["tasks"]:
        main_srv = servers[t["server"]]
        for d in sorted(reads(t["program"])):
            dev = cfg["devices"][d]
            if dev["kind"] != "usb":
                continue
            io_idx = cfg["classes"][dev["class"]]["iovcpu"]
            if io_idx is None or main_srv["policy"] != "sporadic" or cfg["path"] != "quest":
                continue
            io = servers[io_idx]
            lat = usb_latency_bound(dev["omega_io"] + dev.get("kfree", 0), io["num"] / io["den"],
                                    dev.get("omega_main", 0), main_srv["budget"],
                                    main_srv["period"])
            out.append({"task": t["name"], "device": dev["name"], "latency_bound_ns": lat,
                        "throughput_bound_bytes_per_s": dev.get("bytes", 512) / (lat / NS),
                        "equation": "USB-DIFFSERV Eq. 1-3"})
    return out


def bounds(model: LoadedModel | dict[str, Any]) -> dict[str, Any]:
    """The analytic results ``irqlab analyze`` prints, for a loaded model (or
    its ``sim_config``). For a hypervisor machine ``{"path": "hypervisor",
    "hypervisor": hypervisor_bounds(...)}``; otherwise QUEST-VCPU Eq. 1 per
    CPU (``cpus``: demand, bound and slack as fractions, ``passes``) and
    USB-DIFFSERV Eq. 1-3 per task reading a USB device through an I/O VCPU
    (``io_bounds``: ``latency_bound_ns``, ``throughput_bound_bytes_per_s``)."""
    cfg = model if isinstance(model, dict) else model.sim_config
    if cfg["path"] == "hypervisor":
        return {"path": "hypervisor", "hypervisor": hypervisor_bounds(cfg)}
    servers = cfg["servers"]
    per_cpu: dict[int, tuple[list[tuple[int, int]], list[float]]] = defaultdict(lambda: ([], []))
    for s in servers:
        main, io = per_cpu[s["cpu"]]
        if s["policy"] == "pibs":
            io.append(s["num"] / s["den"])
        elif s["policy"] in ("sporadic", "deferrable", "polling"):
            main.append((s["budget"], s["period"]))
        elif s["policy"] == "cbs":
            main.append((s["runtime"], s["period"]))
    result: dict[str, Any] = {"path": cfg["path"], "cpus": [], "io_bounds": []}
    for cpu, (main, io) in sorted(per_cpu.items()):
        if main:
            demand, bound, slack, ok = quest_eq1(main, io)
            result["cpus"].append({"cpu": cpu, "demand": demand, "bound": bound,
                                   "slack": slack, "passes": ok})
    result["io_bounds"] = usb_io_bounds(cfg)
    return result


def uunifast(n: int, total: float, seed: int = 0) -> list[float]:
    """UUniFast (Bini & Buttazzo): ``n`` utilizations (fractions of a CPU)
    summing to ``total``, uniformly distributed, deterministic for ``seed``."""
    return _a.uunifast(n, total, seed)


def periods(n: int, lo_ns: int, hi_ns: int, *, log_uniform: bool = False,
            seed: int = 0) -> list[int]:
    """``n`` periods in integer ns drawn from ``[lo_ns, hi_ns]``, uniformly or
    log-uniformly (each decade as likely as the next), deterministic for
    ``seed``."""
    return _a.periods(n, lo_ns, hi_ns, log_uniform, seed)


def rm_priorities(periods_ns: Sequence[int]) -> list[int]:
    """Rate-monotonic priorities for ``periods_ns`` (integer ns): shorter
    period, higher priority (higher is more urgent); ties by position."""
    return _a.rm_priorities(list(periods_ns))


def random_priorities(n: int, *, seed: int = 0) -> list[int]:
    """A random permutation of priorities ``1..n`` (higher is more urgent),
    as VINT §VII-A gives interrupts; deterministic for ``seed``."""
    return _a.random_priorities(n, seed)


def vint_table2(params: dict[str, Any] | None = None, *, seed: int = 0, index: int = 0,
                pcpus: int = 1) -> list[dict[str, Any]]:
    """System ``index`` of a VINT sweep with ``seed`` (the generator of VINT
    §VII-A, Table II defaults overridden by ``params`` as in ``vint_sweep``):
    the very system ``vint_sweep(params, sets, seed=seed, pcpus=pcpus)``
    evaluates as its set ``index``. Per PCPU a dict of ``vcpus`` (budget,
    period, priority), ``tasks`` (C, T, priority, vcpu), ``phys`` (C, T,
    priority, J) and ``virt`` (isr, dsr, dsr_priority, T, priority, vcpu,
    phys); times in integer ns, higher priority more urgent. VCPU budgets
    are 0: the sweep searches them (VINT §VII-A)."""
    return _a.vint_table2(params or {}, seed, index, pcpus)


def hypervisor_bounds(sim_config: dict[str, Any] | LoadedModel | Any) -> dict[str, Any]:
    """VINT Eq. 3-8 for a lowered hypervisor machine (``LoadedModel.sim_config``
    of a ``vms`` model): per CPU, Eq. 3 of every VCPU and pseudo-VCPU, Eq. 4
    of every guest task, Eq. 5 of every physical ISR and the flow bound of
    every virtual interrupt (Eq. 5 + 7 or 5 + 8). An item without a bound
    (``None``) says why in ``note``. Raises ``ValueError`` on a configuration
    the analysis does not cover. Takes the dict, a :class:`LoadedModel` or
    its resolved ``system`` (read in Rust as it is)."""
    return json.loads(_a.hypervisor_bounds(_resolved(sim_config)))


def model_bounds(sim_config: dict[str, Any] | LoadedModel | Any) -> dict[str, Any]:
    """Bounds of a lowered ``quest`` / ``quest-no-iovcpu`` / ``linux`` machine
    (``LoadedModel.sim_config``): per CPU the interrupt load, QUEST-VCPU
    Eq. 1 and each server's response; per task its response over its
    server's supply, or ``None`` and the reason in ``note``; per task and
    device it reads (``io``) the read's latency bound (``latency``, its
    ``terms``) or the reason there is none; ``ok`` and ``failures``
    summarize. Raises ``ValueError`` on a bad configuration. Takes the dict,
    a :class:`LoadedModel` or its resolved ``system``."""
    return json.loads(_a.model_bounds(_resolved(sim_config)))


def _resolved(config: Any) -> Any:
    """What the native analyses read: a LoadedModel's resolved system (the
    Rust handle until its ``sim_config`` is taken), else ``config`` as given
    (a dict, or a handle)."""
    from irqlab.model import LoadedModel

    return config.resolved() if isinstance(config, LoadedModel) else config


def hypervisor_failures(bounds: dict[str, Any]) -> list[str]:
    """Why a hypervisor machine is not fully bounded (empty: it is)."""
    out = []
    for c in bounds["cpus"]:
        if c["note"]:
            out.append(f"cpu {c['cpu']}: {c['note']}")
        out += [f"server {s['name']}: Eq. 3 exceeds its period"
                for s in c["servers"] if not s["schedulable"]]
        out += [f"task {t['name']}: {t['note'] or 'Eq. 4 exceeds its deadline'}"
                for t in c["tasks"] if not t["schedulable"]
                and not (t["note"] or "").startswith("background task")]
        out += [f"virtual interrupt {v['name']}: {v['note'] or 'not serviceable'}"
                for v in c["virtual_interrupts"] if not v["serviceable"]]
    return out


def analyze(model: LoadedModel) -> dict[str, Any]:
    """Everything ``irqlab analyze`` gives for a loaded model, as its
    ``--json`` file holds it (``LoadedModel.analyze()``, the sweep's
    ``analysis.`` records and the report read this one function): for a
    hypervisor machine ``{"path", "hypervisor": hypervisor_bounds,
    "verdict"}``; otherwise :func:`bounds` (``path``, ``cpus``: QUEST-VCPU
    Eq. 1, ``io_bounds``: USB-DIFFSERV Eq. 1-3) with ``model``:
    :func:`model_bounds` and ``verdict``: ``{"ok", "failures"}``."""
    if model.system is not None and model.system.path == "hypervisor" or (
            model.system is None and model.sim_config["path"] == "hypervisor"):
        hv = hypervisor_bounds(model)
        failures = hypervisor_failures(hv)
        result: dict[str, Any] = {"path": "hypervisor", "hypervisor": hv}
    else:
        b = model_bounds(model)
        result = {**bounds(model), "model": b}
        failures = b["failures"]
    result["verdict"] = {"ok": not failures, "failures": failures}
    return result


def fp_rta(tasks: Sequence[dict[str, int]], *, origin: str = "arrival",
           ) -> list[tuple[int | None, str | None]]:
    """Fixed-priority response-time analysis on one CPU (level-i busy period
    with release jitter, arbitrary deadlines, every job of the window).

    Each task is a dict with ``C``, ``T``, ``D`` (default ``T``), ``J``
    (release jitter, default 0) and ``priority`` (higher is more urgent;
    equal priorities interfere with each other), times in integer ns.
    ``origin`` is ``"arrival"`` (a response from the job's own, jittered
    arrival) or ``"release"`` (from its nominal release, Tindell's form).
    Returns per task ``(bound, None)`` within its deadline, or ``(None,
    reason)``."""
    rows = []
    for i, t in enumerate(tasks):
        unknown = set(t) - {"C", "T", "D", "J", "priority"}
        if unknown:
            raise ValueError(f"tasks[{i}]: unknown key(s) {sorted(unknown)}; "
                             "known: C, T, D, J, priority")
        try:
            rows.append((int(t["C"]), int(t["T"]), int(t.get("D", t["T"])), int(t.get("J", 0)),
                         int(t["priority"])))
        except KeyError as e:
            raise ValueError(f"tasks[{i}]: missing {e.args[0]}") from None
    return [tuple(r) for r in _a.fp_rta(rows, origin)]  # type: ignore[misc]


def vint_sweep(
    params: dict[str, Any], sets: int, *, seed: int = 0, pcpus: int = 4,
    pseudo_ratio: tuple[int, int] = (1, 1), threads: int | None = None,
) -> dict[str, Any]:
    """Percentages of schedulable task sets and serviceable interrupt sets
    per scheme for `sets` generated systems (VINT Table II + `params`)."""
    if isinstance(sets, bool) or not isinstance(sets, int) or not 0 < sets <= MAX_SETS:
        raise ValueError(f"sets: {sets!r} must be an integer in 1..{MAX_SETS}")
    for arg, v, hi in (("seed", seed, (1 << 64) - 1), ("pcpus", pcpus, 1024),
                       ("threads", threads or 1, 1024)):
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= hi:
            raise ValueError(f"{arg}: {v!r} must be an integer in 0..{hi}")
    r = _a.vint_sweep(params, sets, seed=seed, pcpus=pcpus, pseudo_ratio=pseudo_ratio,
                      threads=threads or os.cpu_count() or 1)
    n = r["sets"]
    return {
        "sets": n,
        "schedulable": {k: 100.0 * v / n for k, v in r["schedulable"].items()},
        "serviceable": {k: 100.0 * v / n for k, v in r["serviceable"].items()},
    }


def vint_curve(points: Sequence[tuple[float, dict[str, Any]]], sets: int, *, seed: int = 0,
               pseudo_ratio: Sequence[tuple[int, int]] | None = None) -> list[dict[str, Any]]:
    """One sweep per point (x, params); progress (points, rate, ETA) on
    stderr when it is a terminal, as ``irqlab sweep`` shows it."""
    from irqlab.sweep import Progress

    bar = Progress(len(points), sys.stderr.isatty(), label="points")
    out = []
    for i, (x, params) in enumerate(points):
        ratio = pseudo_ratio[i] if pseudo_ratio else (1, 1)
        r = vint_sweep(params, sets, seed=seed + i, pseudo_ratio=ratio)
        out.append({"x": x, **r})
        bar.update(1)
    bar.close()
    return out
