"""The whole run's schedule, read from its trace, for ``irqlab report``:
the interactive timeline's data (every slice of every CPU, the servers'
budget counters), the per-CPU time breakdown and the CPU use over time.

The trace is the trace-event dict of ``trace.json`` (or of
``trace.pftrace`` decoded by ``irqlab.tracefile``): CPU ``c``'s slices are
on ``pid`` = ``c``, ``tid`` 0 (threads, whose ``cat`` is their server;
top halves, ``cat`` ``isr``; softirq bottom halves, ``cat`` ``softirq``)
and ``tid`` 1 (VCPU switches); its servers' budget counters on ``pid`` =
1000 + ``c`` (docs/simulator.md, "Traces"). Times become integer
nanoseconds here (the JSON's microseconds have three decimals).

Compact encoding (:func:`encode`): per CPU track the slices' start deltas,
durations and label indices, then per budget counter its time deltas and
zigzag values (ns), all unsigned LEB128 varints in one byte stream,
deflated (zlib) and base64'd; the page inflates it with the browser's
``DecompressionStream`` (no library, no network). A slice costs about 2-4
bytes of page.

Design principles: one pass over the events; everything the page draws or
tabulates comes from :class:`Schedule`, so the tests check the same
numbers the page shows.
"""

from __future__ import annotations

import base64
import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from irqlab.palette import SWITCH, color_of, isr_color, softirq_color


@dataclass
class Label:
    """What a slice is: ``kind`` ``task``, ``thread`` (a bottom-half or
    kernel thread), ``isr`` (a top half), ``softirq`` or ``switch``; its
    ``server`` (threads) and colour."""

    name: str
    kind: str
    server: str | None
    color: str


@dataclass
class Track:
    """The slices of one CPU track, in start order (integer ns)."""

    cpu: int
    kind: str  # "cpu" (what runs) or "switch" (VCPU switches)
    starts: np.ndarray
    durs: np.ndarray
    labels: np.ndarray


@dataclass
class Counter:
    """A server's remaining-budget counter: ``(time ns, budget ns)`` steps;
    a budget of -1 us marks a server without one (FIFO, ``unbounded``)."""

    server: str
    cpu: int
    times: np.ndarray
    values: np.ndarray


@dataclass
class Schedule:
    """A run's schedule from its trace (see the module doc)."""

    labels: list[Label]
    tracks: list[Track]
    counters: list[Counter]
    end_ns: int  # end of the last slice
    truncated: bool
    servers_of_cpu: dict[int, list[str]] = field(default_factory=dict)

    @property
    def slices(self) -> int:
        """Slices on the CPU tracks."""
        return int(sum(len(t.starts) for t in self.tracks))


def _device(name: str, prefix: str) -> str:
    return name.removeprefix(prefix).strip() or name


def schedule(trace: dict[str, Any], *, tasks: set[str] | None = None,
             path: str | None = None) -> Schedule | None:
    """The :class:`Schedule` of a trace dict, or ``None`` when it holds no
    slice. ``tasks``: the model's task names (the other threads are bottom
    halves or kernel threads); ``path``: the interrupt path (on
    ``hypervisor`` a guest ISR thread, ``*.isr``, is drawn as a top half)."""
    events = trace.get("traceEvents") or []
    labels: list[Label] = []
    index: dict[tuple[str, str, str | None], int] = {}
    rows: dict[tuple[int, int], list[tuple[int, int, int]]] = defaultdict(list)
    budgets: dict[tuple[int, str], list[tuple[int, int]]] = defaultdict(list)
    server_names: dict[tuple[int, int], str] = {}
    tasks = tasks or set()

    def label(name: str, cat: str) -> int:
        if cat == "isr":
            key = (name, "isr", None)
        elif cat == "softirq":
            key = (name, "softirq", None)
        elif cat == "switch":
            key = (name, "switch", None)
        else:
            key = (name, "thread", cat)
        i = index.get(key)
        if i is None:
            kind = key[1]
            if kind == "isr":
                lab = Label(name, "isr", None, isr_color(_device(name, "irq")))
            elif kind == "softirq":
                lab = Label(name, "softirq", None, softirq_color(_device(name, "softirq")))
            elif kind == "switch":
                lab = Label(name, "switch", None, SWITCH)
            elif path == "hypervisor" and name.endswith(".isr"):
                lab = Label(name, "isr", cat, isr_color(name))
            else:
                lab = Label(name, "task" if name in tasks else "thread", cat, color_of(name))
            i = index[key] = len(labels)
            labels.append(lab)
        return i

    end = 0
    for e in events:
        ph = e.get("ph")
        if ph == "X":
            pid = e["pid"]
            if pid >= 1000:
                continue  # server tracks repeat the CPU's thread slices
            s = round(e["ts"] * 1e3)
            d = round(e["dur"] * 1e3)
            rows[(pid, e.get("tid", 0))].append((s, d, label(e["name"], e.get("cat", ""))))
            end = max(end, s + d)
        elif ph == "C":
            name = e["name"].removeprefix("budget ").removesuffix(" (us)")
            budgets[(e["pid"] - 1000, name)].append(
                (round(e["ts"] * 1e3), round(e["args"]["budget"] * 1e3)))
        elif ph == "M" and e.get("name") == "thread_name" and e.get("pid", 0) >= 1000:
            server_names[(e["pid"] - 1000, e.get("tid", 0))] = e["args"]["name"]
    if not rows:
        return None
    tracks = []
    for (cpu, tid), segs in sorted(rows.items()):
        segs.sort(key=lambda x: (x[0], -x[1]))
        a = np.array(segs, dtype=np.int64).reshape(-1, 3)
        tracks.append(Track(cpu, "switch" if tid == 1 else "cpu", a[:, 0], a[:, 1], a[:, 2]))
    counters = []
    for (cpu, name), pts in sorted(budgets.items()):
        pts.sort()
        a = np.array(pts, dtype=np.int64).reshape(-1, 2)
        counters.append(Counter(name, cpu, a[:, 0], a[:, 1]))
    by_cpu: dict[int, list[str]] = defaultdict(list)
    for (cpu, _), name in sorted(server_names.items()):
        by_cpu[cpu].append(name)
    truncated = bool((trace.get("otherData") or {}).get("truncated"))
    return Schedule(labels, tracks, counters, end, truncated, dict(by_cpu))


# ---- the compact encoding -----------------------------------------------------

def leb128(values: np.ndarray) -> bytes:
    """Unsigned LEB128 varints of non-negative integers, concatenated."""
    v = np.asarray(values, dtype=np.uint64)
    if v.size == 0:
        return b""
    if (np.asarray(values) < 0).any():
        raise ValueError("leb128: negative value")
    groups = np.stack([(v >> np.uint64(7 * k)) & np.uint64(0x7F) for k in range(10)], axis=1)
    more = np.stack([(v >> np.uint64(7 * (k + 1))) > 0 for k in range(10)], axis=1)
    nbytes = 1 + more[:, :9].sum(axis=1)
    keep = np.arange(10)[None, :] < nbytes[:, None]
    out = (groups | (more.astype(np.uint64) << np.uint64(7))).astype(np.uint8)
    return out[keep].tobytes()


def zigzag(values: np.ndarray) -> np.ndarray:
    """Signed integers as unsigned ones (0, -1, 1, -2 ... -> 0, 1, 2, 3 ...)."""
    v = np.asarray(values, dtype=np.int64)
    return ((v << 1) ^ (v >> 63)).astype(np.uint64)


def encode(s: Schedule) -> tuple[dict[str, Any], str]:
    """The timeline's data: a JSON-able description (labels, tracks with
    their slice counts, counters) and the base64 of the deflated varint
    stream (see the module doc)."""
    parts = []
    tracks = []
    for t in s.tracks:
        deltas = np.diff(t.starts, prepend=0)
        parts += [leb128(deltas), leb128(t.durs), leb128(t.labels)]
        tracks.append({"cpu": t.cpu, "kind": t.kind, "n": len(t.starts)})
    counters = []
    for c in s.counters:
        parts += [leb128(np.diff(c.times, prepend=0)), leb128(zigzag(c.values))]
        counters.append({"server": c.server, "cpu": c.cpu, "n": len(c.times)})
    meta = {"labels": [{"name": lab.name, "kind": lab.kind, "server": lab.server,
                        "color": lab.color} for lab in s.labels],
            "tracks": tracks, "counters": counters, "end_ns": s.end_ns,
            "truncated": s.truncated}
    blob = zlib.compress(b"".join(parts), 9)
    return meta, base64.b64encode(blob).decode()


# ---- what each CPU spent its time on ----------------------------------------

def top_level(t: Track) -> np.ndarray:
    """Mask of the slices not nested in an earlier one of the track (a top
    half nested in the one it interrupted is drawn inside it)."""
    ends = t.starts + t.durs
    reach = np.maximum.accumulate(ends)
    prev = np.concatenate(([np.iinfo(np.int64).min], reach[:-1]))
    return t.starts >= prev


def cpu_time(s: Schedule) -> dict[int, dict[tuple[str, str, str | None], int]]:
    """Per CPU: ns per ``(kind, name, server)`` from the top-level slices
    of its track (kind ``task``/``thread``/``isr``/``softirq``)."""
    out: dict[int, dict[tuple[str, str, str | None], int]] = {}
    for t in s.tracks:
        if t.kind != "cpu":
            continue
        top = top_level(t)
        acc: dict[tuple[str, str, str | None], int] = defaultdict(int)
        sums = np.bincount(t.labels[top], weights=t.durs[top], minlength=len(s.labels))
        for i, ns in enumerate(sums):
            if ns:
                lab = s.labels[i]
                acc[(lab.kind, lab.name, lab.server)] += int(round(ns))
        out[t.cpu] = dict(acc)
    return out


def binned(s: Schedule, duration_ns: int, bins: int) -> tuple[np.ndarray, dict[int, dict[
        tuple[str, str], np.ndarray]]]:
    """CPU use over time: the bin edges (ns) and, per CPU, ns per bin for
    each ``(kind, group)``: kind ``server`` (group: the server), ``isr`` and
    ``softirq`` (group: ``""``); idle is what is left of each bin."""
    edges = np.linspace(0, duration_ns, bins + 1)
    out: dict[int, dict[tuple[str, str], np.ndarray]] = {}
    for t in s.tracks:
        if t.kind != "cpu":
            continue
        top = top_level(t)
        starts, durs, labs = t.starts[top], t.durs[top], t.labels[top]
        groups: dict[tuple[str, str], list[int]] = defaultdict(list)
        for i in np.unique(labs):
            lab = s.labels[i]
            key = ((lab.kind, "") if lab.kind in ("isr", "softirq") and lab.server is None
                   else ("server", lab.server or lab.name))
            groups[key].append(int(i))
        per: dict[tuple[str, str], np.ndarray] = {}
        for key, ids in groups.items():
            m = np.isin(labs, ids)
            a, d = starts[m].astype(float), durs[m].astype(float)
            # busy time before each edge: whole slices ended, plus the one open
            cum = np.concatenate(([0.0], np.cumsum(d)))
            ends = a + d
            k = np.searchsorted(ends, edges, side="right")
            before = cum[k] + np.where(k < len(a),
                                       np.clip(edges - a[np.minimum(k, len(a) - 1)], 0,
                                               d[np.minimum(k, len(a) - 1)]), 0)
            per[key] = np.diff(before)
        out[t.cpu] = per
    return edges, out
