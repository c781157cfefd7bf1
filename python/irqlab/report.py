"""Self-contained HTML report of one or more simulation runs (``irqlab
report RUN_DIR...``, ``irqlab simulate --report``; docs/report.md,
docs/report.md).

A run directory is what ``irqlab simulate`` writes: ``metrics.json``,
``trace.json`` or ``trace.pftrace`` (Perfetto protobuf, decoded by
``irqlab.tracefile``), ``config.json`` (the resolved configuration, for
the model summary, the deadlines and the analysis) and, if the user put it
there, ``analysis.json`` (``irqlab analyze --json``, whose verdict the
banner then shows); a real run's directory (``irqlab compare``'s
``real/``, ``irqlab vmm --out``) leaves out what it does not measure (a
seed, an event count, a device's request latency...): those cells show
"-", those curves are not drawn.

The page, top to bottom: a verdict banner per run (the analysis verdict,
deadline misses, drops; QUEST-VCPU Eq. 1 shown as the sufficient test it
is); the runs; an interactive timeline of the whole run per run
(``report_assets/timeline.js``: one track per CPU, pan and zoom, servers
and budgets on demand; data from ``irqlab.timeline``) with how to open the
trace in Perfetto; where each CPU's time went (each server and its
threads, top halves, softirq, idle: the metrics' totals, the trace's
split); the analysis next to the simulation; tables of tasks, devices,
servers and virtual interrupts; response-time CDFs and histograms per task
with deadline and bound lines; I/O latency per class (zero latencies
counted and left off the log axis); CPU use over time. A plot that would
be empty or have too few points says "not applicable" and why.

Design principles: one file, no network (inline PNG data URIs, inline
script, the timeline's data deflated and base64'd in the page); every
number in a table comes straight from ``metrics.json`` (or, where it says
so, the trace) and carries ``data-key``/``data-value`` attributes (the raw
value) so tests can check the page against the run; colours come from
``irqlab.palette`` (fixed per name, reds and magentas only for interrupt
handlers); plotting cost is bounded whatever the model's size: at most
``TOP_N`` tasks, servers and devices per plot, the cut stated on the page;
the timeline holds every slice of the trace, which the simulator bounds
(``trace_max_events``).
"""

from __future__ import annotations

import base64
import io
import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from irqlab import palette, timeline  # noqa: E402
from irqlab.report_sections import (  # noqa: E402, F401 (verdict, breakdown: the API)
    TOP_N,
    banner,
    breakdown,
    breakdown_section,
    timeline_section,
    verdict,
)
from irqlab.report_sections import cell as _cell  # noqa: E402
from irqlab.report_sections import esc as _esc  # noqa: E402
from irqlab.report_sections import na as _na  # noqa: E402
from irqlab.report_sections import us as _us  # noqa: E402

#: bins of the CPU-use-over-time plot; a curve needs at least MIN_POINTS points
SHARE_BINS = 100
MIN_POINTS = 10
#: a latency distribution's note about exact zeros appears from this share on
ZERO_NOTE_FRACTION = 0.01


@dataclass
class Run:
    """One run directory, loaded."""

    name: str
    metrics: dict[str, Any]
    trace: dict[str, Any]
    config: dict[str, Any] | None
    path: Path | None = None
    analysis: dict[str, Any] | None = None
    _schedule: Any = None

    @classmethod
    def load(cls, path: Path, name: str | None = None,
             window: tuple[int, int] | None = None) -> Run:
        """Load a run directory: its metrics, configuration, ``analysis.json``
        if there is one, and its whole trace (``window``, the timeline's first
        view in ns, does not limit what is read)."""
        from irqlab.tracefile import load_trace

        mp = path / "metrics.json"
        if not mp.exists():
            raise FileNotFoundError(f"{path}: no metrics.json (not a run directory of "
                                    "irqlab simulate)")
        cp = path / "config.json"
        ap = path / "analysis.json"
        trace = load_trace(path)
        return cls(name or path.name, json.loads(mp.read_text()), trace,
                   json.loads(cp.read_text()) if cp.exists() else None, path,
                   json.loads(ap.read_text()) if ap.exists() else None)

    @property
    def schedule(self) -> timeline.Schedule | None:
        """The trace's schedule (``irqlab.timeline``), or ``None`` without one."""
        if self._schedule is None and self.trace:
            self._schedule = timeline.schedule(
                self.trace, tasks={t["name"] for t in self.metrics["tasks"]},
                path=self.metrics.get("path")) or False
        return self._schedule or None

    def traced(self) -> tuple[int, str | None]:
        """The part ``[0, end ns)`` of the run the trace covers, and why it
        is not the whole run (``None`` when it is)."""
        dur = self.metrics["duration_ns"]
        sched = self.schedule
        until = ((self.config or {}).get("trace") or {}).get("until")
        # trace.json says it in otherData, a trace.pftrace only in the metrics
        if sched is not None and (sched.truncated or self.metrics.get("trace_truncated")):
            return min(dur, sched.end_ns), ("the trace was cut at trace_max_events at "
                                            f"{_us(sched.end_ns)}")
        if until is not None and until < dur:
            return int(until), f"the trace covers the first {_us(until)} (trace_until)"
        return dur, None

    def trace_file(self) -> Path | None:
        """The trace file of the run directory, if any."""
        for n in ("trace.json", "trace.pftrace"):
            if self.path is not None and (self.path / n).exists():
                return self.path / n
        return None


# ---- formatting --------------------------------------------------------------

def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return ('<img alt="plot" src="data:image/png;base64,'
            + base64.b64encode(buf.getvalue()).decode() + '">')


def _top(rows: list[dict[str, Any]], key: Any, n: int = TOP_N) -> tuple[list[dict[str, Any]],
                                                                       str]:
    if len(rows) <= n:
        return rows, ""
    ranked = sorted(rows, key=key, reverse=True)[:n]
    return ranked, f'<p class="note">Showing the top {n} of {len(rows)}.</p>'


# ---- what the model promises ---------------------------------------------------

def deadline_ns(cfg: dict[str, Any] | None, task: str) -> int | None:
    """A task's relative deadline (ns): explicit, else its period."""
    for t in (cfg or {}).get("tasks", []):
        if t["name"] == task:
            rel = t.get("release", {})
            return rel.get("deadline") or rel.get("period")
    return None


def run_bounds(run: Run) -> dict[str, Any]:
    """The analysis of the run's configuration, what ``irqlab analyze``
    prints: ``irqlab.analysis.bounds`` and, for a quest / quest-no-iovcpu /
    linux machine, ``model_bounds`` under ``"model"`` (per-task response
    and per-read latency bounds); or ``{"error": why}``."""
    if run.config is None:
        return {"error": "no config.json in the run directory"}
    from irqlab.analysis import bounds, model_bounds

    try:
        b = bounds(run.config)
        if b.get("path") != "hypervisor":
            b["model"] = model_bounds(run.config)
        return b
    except ValueError as e:
        return {"error": str(e)}


def _no_bound(why: str | None) -> str:
    return "no bound: " + (why or "the analysis gives none").removeprefix("no bound: ")


def task_bounds(b: dict[str, Any]) -> dict[str, tuple[int | None, str]]:
    """Per task name: ``(response bound ns, its equation)`` where the
    analysis gives one (VINT Eq. 4 for a hypervisor machine, ``model_bounds``
    otherwise), else ``(None, "no bound: <reason>")``."""
    tasks = [t for c in b.get("hypervisor", {}).get("cpus", []) for t in c["tasks"]]
    tasks += b.get("model", {}).get("tasks", [])
    eq = "VINT Eq. 4" if "hypervisor" in b else "FP RTA over the server's supply"
    return {t["name"]: ((t["response"], t.get("equation") or eq) if t["response"] is not None
                        else (None, _no_bound(t.get("note")))) for t in tasks}


def read_bounds(b: dict[str, Any]) -> list[dict[str, Any]]:
    """``model_bounds``' per-read latency bounds (``task``, ``device``,
    ``latency`` ns or ``None`` and ``note``); empty for a hypervisor machine."""
    return list(b.get("model", {}).get("io", []))


def _why_none(b: dict[str, Any], what: str) -> str:
    if "error" in b:
        return _no_bound(f"the analysis failed: {b['error']}")
    return _no_bound(f"the analysis does not cover this {what}")


# ---- sections ------------------------------------------------------------------

def _summary(runs: Sequence[Run]) -> str:
    rows = []
    for r in runs:
        m = r.metrics
        cfg = r.config or {}
        part = " (partial: stopped early)" if m.get("partial") else ""
        rows.append(
            f"<tr><th>{_esc(r.name)}</th><td>{_esc(m['path'])}</td>"
            + _cell(len(m["cpus"]), f"{r.name}.cpus")
            + _cell(m["duration_ns"], f"{r.name}.duration_ns", _us(m["duration_ns"]) + part)
            + _cell(m.get("seed"), f"{r.name}.seed") + _cell(m.get("events"), f"{r.name}.events")
            + f"<td>{len(m['servers'])} servers, {len(m['tasks'])} tasks, "
            f"{len(m['devices'])} devices, {len(m['virqs'])} virtual interrupts"
            f"{'' if cfg else ' (no config.json)'}</td></tr>")
    head = ("<tr><th>run</th><th>path</th><th>CPUs</th><th>simulated</th><th>seed</th>"
            "<th>events</th><th>model</th></tr>")
    out = [f"<h2>Runs</h2><table>{head}{''.join(rows)}</table>"]
    for r in runs:
        if not r.config:
            continue
        srv, note = _top(r.config["servers"], key=lambda s: s.get("budget", 0) or 0)
        body = "".join(
            f"<tr><td>{_esc(s['name'])}</td><td>{s['cpu']}</td><td>{_esc(s['policy'])}</td>"
            f"<td>{_esc(_server_params(s))}</td></tr>" for s in srv)
        out.append(f"<h3>{_esc(r.name)}: servers</h3>{note}<table><tr><th>server</th>"
                   f"<th>CPU</th><th>policy</th><th>parameters</th></tr>{body}</table>")
    return "".join(out)


def _server_params(s: dict[str, Any]) -> str:
    if s.get("budget") is not None and s.get("period") is not None:
        return f"budget {_us(s['budget'])} every {_us(s['period'])}"
    if s.get("num") is not None:
        return f"utilization {100 * s['num'] / s['den']:.2f} %"
    if s.get("runtime") is not None:
        return f"runtime {_us(s['runtime'])} every {_us(s['period'])}"
    return ""


def _analysis(run: Run, b: dict[str, Any]) -> str:
    m = run.metrics
    if "error" in b:
        return f"<h3>{_esc(run.name)}: analysis</h3><p class='note'>{_esc(b['error'])}</p>"
    rows: list[tuple[Any, ...]] = []
    cut = ""
    if b.get("path") == "hypervisor":
        sim_srv = {s["name"]: s.get("response") for s in m["servers"]}
        sim_task = {t["name"]: t["response"] for t in m["tasks"]}
        sim_virq = {v["name"]: v["handling"] for v in m["virqs"]}
        for c in b["hypervisor"]["cpus"]:
            for s in c["servers"]:
                rows.append(("VINT Eq. 3", s["name"], s["response"],
                             (sim_srv.get(s["name"]) or {}).get("max_ns"), s["schedulable"]))
            for t in c["tasks"]:
                rows.append(("VINT Eq. 4", t["name"], t["response"],
                             (sim_task.get(t["name"]) or {}).get("max_ns"), t["schedulable"]))
            for v in c["virtual_interrupts"]:
                rows.append((f"VINT Eq. {v['equation']}", v["name"], v["bound"],
                             (sim_virq.get(v["name"]) or {}).get("max_ns"), v["serviceable"]))
    else:
        for c in b.get("cpus", []):
            rows.append(("QUEST-VCPU Eq. 1 (sufficient test, not part of the verdict)",
                         f"cpu {c['cpu']} demand {100 * c['demand']:.1f} % / bound "
                         f"{100 * c['bound']:.1f} %", None, None,
                         "met" if c["passes"] else "not met (inconclusive)"))
        devs = {d["name"]: d["latency"] for d in m["devices"]}
        for e in b.get("io_bounds", []):
            rows.append(("USB-DIFFSERV Eq. 1-2", f"{e['task']} reading {e['device']}",
                         e["latency_bound_ns"], (devs.get(e["device"]) or {}).get("max_ns"),
                         None))
        # model_bounds: the bounds the plots draw (task response, read latency);
        # past 4 TOP_N items, those with the most jobs / requests (the plotted ones)
        model = b.get("model", {})
        tb = task_bounds(b)
        tasks = [t for t in model.get("tasks", [])
                 if tb[t["name"]][0] is not None or t["deadline"] is not None]
        reads = model.get("io", [])
        if len(tasks) + len(reads) > TOP_N * 4:
            jobs = {t["name"]: t["response"]["count"] for t in m["tasks"]}
            done = {d["name"]: d["latency"]["count"] for d in m["devices"]}
            tasks = sorted(tasks, key=lambda t: -jobs.get(t["name"], 0))[:TOP_N * 2]
            reads = sorted(reads, key=lambda r: -done.get(r["device"], 0))[:TOP_N * 2]
            cut = (f"<p class='note'>Bounds of the {TOP_N * 2} tasks with the most jobs and "
                   f"the {TOP_N * 2} reads with the most requests shown.</p>")
        sim_task = {t["name"]: t["response"] for t in m["tasks"]}
        for t in tasks:
            bd, why = tb[t["name"]]
            rows.append((why if bd is not None else "response", t["name"], bd,
                         (sim_task.get(t["name"]) or {}).get("max_ns"), t["schedulable"],
                         f"task.{t['name']}", None if bd is not None else why))
        for r in reads:
            rows.append((r["equation"] if r["latency"] is not None else "read latency",
                         f"{r['task']} reading {r['device']}", r["latency"],
                         (devs.get(r["device"]) or {}).get("max_ns"), None,
                         f"read.{r['task']}.{r['device']}",
                         None if r["latency"] is not None else _no_bound(r["note"])))
    body = []
    for i, (eq, item, bound, sim, ok, *named) in enumerate(rows):
        key, why = named if named else (str(i), None)
        within = "-" if bound is None or sim is None else ("yes" if sim <= bound else "NO")
        holds = ok if isinstance(ok, str) else "-" if ok is None else (
            "holds" if ok else "FAILS")
        body.append(f"<tr><td>{_esc(eq)}</td><td>{_esc(item)}</td>"
                    + _cell(bound, f"{run.name}.bound.{key}",
                            _us(bound) if bound else (why or "-"))
                    + _cell(sim, f"{run.name}.simulated_max.{key}", _us(sim))
                    + f"<td>{within}</td><td>{holds}</td></tr>")
    if not body:
        return ""
    # a real run (compare's real/, vmm --out) counts no simulator events
    what = ("simulation", "simulated max") if m.get("events") else ("measurement", "measured max")
    return (f"<h3>{_esc(run.name)}: analysis next to the {what[0]}</h3>{cut}<table><tr>"
            f"<th>equation</th><th>item</th><th>bound</th><th>{what[1]}</th>"
            f"<th>within</th><th>verdict</th></tr>{''.join(body)}</table>")


def _side_by_side(runs: Sequence[Run], kind: str, fields: list[tuple[str, str, str]]) -> str:
    """One table: a row per item (per item and run when there are several
    runs, next to each other), a column per field. ``fields``: (label,
    dotted path in the item, unit: ns | fraction | count | Bps)."""
    names: list[str] = []
    by_run: list[dict[str, dict[str, Any]]] = []
    for r in runs:
        items = {x["name"]: x for x in r.metrics[kind]}
        by_run.append(items)
        names += [n for n in items if n not in names]
    note = ""
    if len(names) > TOP_N * 4:
        note = f'<p class="note">Showing the first {TOP_N * 4} of {len(names)} {kind}.</p>'
        names = names[:TOP_N * 4]
    many = len(runs) > 1
    head = ("<th>name</th>" + ("<th>run</th>" if many else "")
            + "".join(f"<th>{_esc(label)}</th>" for label, _, _ in fields))
    body = []
    for n in names:
        for r, items in zip(runs, by_run, strict=True):
            if n not in items:
                continue
            cells = []
            for _, path, unit in fields:
                v: Any = items[n]
                for k in path.split("."):
                    v = v.get(k) if isinstance(v, dict) else None
                text = None
                if v is not None:
                    text = (_us(v) if unit == "ns" else f"{100 * v:.2f} %" if unit == "fraction"
                            else f"{v:,.0f} B/s" if unit == "Bps" else None)
                cells.append(_cell(v, f"{r.name}.{kind}.{n}.{path}", text))
            run_col = f"<td>{_esc(r.name)}</td>" if many else ""
            body.append(f"<tr><td>{_esc(n)}</td>{run_col}{''.join(cells)}</tr>")
    return (f"<h2>{kind.capitalize()}</h2>{note}<table class='{kind}'><tr>{head}</tr>"
            f"{''.join(body)}</table>")


def _cdf(ax: Any, hist: list[list[int]], label: str, color: str | None = None) -> Any:
    """Draw the CDF of a ``histogram_ns`` (in ``color``, else the next of
    the cycle); returns its colour."""
    total = sum(b[2] for b in hist)
    xs, ys, acc = [hist[0][0] / 1e3], [0.0], 0
    for lo, hi, c in hist:
        acc += c
        xs += [lo / 1e3, hi / 1e3]
        ys += [ys[-1], acc / total]
    return ax.plot(xs, ys, label=label, color=color)[0].get_color()


def _bound_line(ax: Any, ns: int, label: str, color: Any) -> None:
    ax.axvline(ns / 1e3, color=color, ls=":", lw=1.5, label=label)


def _drawn_bounds(ax: Any) -> str:
    """The bound lines actually on ``ax`` as JSON ``[[label, ns], ...]`` (a
    ``data-bounds`` attribute: tests check the plot, not what it was fed)."""
    return _esc(json.dumps([[ln.get_label(), round(ln.get_xdata()[0] * 1e3)]
                            for ln in ax.lines if "bound" in ln.get_label()]))


def _responses(runs: Sequence[Run], bounds: list[dict[str, Any]]) -> str:
    names: list[str] = []
    single: dict[str, list[str]] = defaultdict(list)
    for r in runs:
        names += [t["name"] for t in r.metrics["tasks"]
                  if t["response"]["count"] >= 2 and t["name"] not in names]
        for t in r.metrics["tasks"]:
            if t["response"]["count"] == 1:
                single[t["name"]].append(f"{r.name}: {_us(t['response']['max_ns'])}"
                                         if len(runs) > 1 else _us(t["response"]["max_ns"]))
    one = "".join(_na(f"response times of {n}", "one finished job, no distribution "
                      f"({'; '.join(v)})") for n, v in single.items() if n not in names)
    if not names:
        return f"<h2>Response times</h2>{one}" if one else ""
    note = ""
    if len(names) > TOP_N:
        counts: dict[str, int] = defaultdict(int)
        for r in runs:
            for t in r.metrics["tasks"]:
                counts[t["name"]] = max(counts[t["name"]], t["response"]["count"])
        names = sorted(names, key=lambda n: -counts[n])[:TOP_N]
        note = f'<p class="note">Tasks with the most jobs: {TOP_N} shown.</p>'
    index = [{t["name"]: t for t in r.metrics["tasks"]} for r in runs]
    tbs = [task_bounds(b) for b in bounds]
    many = len(runs) > 1
    out = [f"<h2>Response times</h2>{note}<p>CDF and histogram per task (release to "
           "completion); dashed: the deadline, dotted: the analysis's response bound "
           "(the Analysis table's bound), in the colour of its run.</p><div class=grid>"]
    for n in names:
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(8, 2.6))
        caption = []
        for r, by_name, tb, b in zip(runs, index, tbs, bounds, strict=True):
            t = by_name.get(n)
            if t is None or t["response"]["count"] < 2:
                continue
            h = t["response"]["histogram_ns"]
            color = _cdf(a1, h, r.name, None if many else palette.color_of(n))
            a2.bar([(lo + hi) / 2e3 for lo, hi, _ in h], [c for _, _, c in h],
                   width=[max((hi - lo) / 1e3, 1e-3) for lo, hi, _ in h], alpha=0.6,
                   label=r.name, color=color)
            bd, why = tb.get(n, (None, _why_none(b, "task")))
            who = f"{r.name}: " if many else ""
            if bd is not None:
                for ax in (a1, a2):
                    _bound_line(ax, bd, f"{who}bound", color)
                caption.append(f"{who}bound {_us(bd)} ({why})")
            else:
                caption.append(who + why)
        dl = next((d for r in runs if (d := deadline_ns(r.config, n))), None)
        for ax in (a1, a2):
            if dl:
                ax.axvline(dl / 1e3, color="red", ls="--", lw=1, label="deadline")
            ax.set_xlabel("response (us)")
        a1.set_ylabel("fraction of jobs")
        a2.set_ylabel("jobs")
        a1.set_title(n, fontsize=9)
        a1.legend(fontsize=7)
        fig.tight_layout()
        drawn = _drawn_bounds(a1)
        out.append(f'<figure class="response" data-task="{_esc(n)}" data-bounds="{drawn}">'
                   f"{_png(fig)}<figcaption class='note'>{_esc('; '.join(caption))}"
                   "</figcaption></figure>")
    return "".join(out) + "</div>" + one


def zero_share(hist: list[list[int]]) -> tuple[int, int]:
    """``(samples exactly 0 ns, all samples)`` of a ``histogram_ns`` (the
    bin ``[0, 1)`` holds the zeros)."""
    return (sum(c for lo, hi, c in hist if lo == 0 and hi <= 1), sum(c for _, _, c in hist))


def _io_latency(runs: Sequence[Run], bounds: list[dict[str, Any]]) -> str:
    fig, ax = plt.subplots(figsize=(8, 3))
    drawn = 0
    captions: list[str] = []
    zeros: list[str] = []
    many = len(runs) > 1
    for r, b in zip(runs, bounds, strict=True):
        classes = [c["name"] for c in (r.config or {}).get("classes", [])]
        by_class: dict[str, list[list[int]]] = defaultdict(list)
        cls_of = {d["name"]: d.get("class") for d in (r.config or {}).get("devices", [])}
        kind_of = {d["name"]: d.get("kind") for d in (r.config or {}).get("devices", [])}
        kinds: dict[str, set[str]] = defaultdict(set)

        def label_of(dev: str, classes: list[str] = classes,
                     cls_of: dict[str, Any] = cls_of) -> str:
            c = cls_of.get(dev)
            return classes[c] if isinstance(c, int) and c < len(classes) else dev

        for d in r.metrics["devices"]:
            if not (d.get("latency") or {}).get("count"):
                continue
            by_class[label_of(d["name"])] += d["latency"]["histogram_ns"]
            kinds[label_of(d["name"])].add(str(kind_of.get(d["name"]) or "device"))
        colors = {}
        for label, hist in list(by_class.items())[:TOP_N]:
            name = f"{r.name}: {label}" if many else label
            z, n = zero_share(hist)
            rest = sorted(h for h in hist if not (h[0] == 0 and h[1] <= 1))
            if n and z / n >= ZERO_NOTE_FRACTION:
                zeros.append(
                    f'<p class="zero-note" data-class="{_esc(name)}" data-zeros="{z}" '
                    f'data-count="{n}" data-zero-fraction="{z / n:.4f}"><b>{_esc(name)}</b> '
                    f"({_esc('/'.join(sorted(kinds[label])))}): {100 * z / n:.1f} % of its "
                    f"{n:,} requests took exactly 0 ns: a read that finds data already "
                    "buffered (the bottom half delivered it before the task asked) returns "
                    "at once when the device's return cost (omega_main) is 0 (docs/metrics.md, "
                    "\"Zero latencies\"). "
                    + ("The curve shows the other "
                       f"{n - z:,} ({100 * (n - z) / n:.1f} %), on the log axis."
                       if rest else "No other request: no curve.") + "</p>")
            if not rest:
                continue
            colors[label] = _cdf(ax, rest, name + (" (non-zero)" if z else ""),
                                 None if many else palette.color_of(label))
            drawn += 1
        # model_bounds' per-read latency bounds, in the colour of the read's class
        who = f"{r.name}: " if many else ""
        reads = read_bounds(b)
        if not reads and r.metrics["devices"]:
            captions.append(who + _why_none(b, "machine's reads"))
        lines = 0
        for e in reads:
            what = f"read {e['task']} <- {e['device']}"
            if e["latency"] is None:
                captions.append(f"{who}{what}: {_no_bound(e['note'])}")
                continue
            captions.append(f"{who}{what}: bound {_us(e['latency'])}")
            color = colors.get(label_of(e["device"]))
            if color is not None and lines < TOP_N:
                _bound_line(ax, e["latency"], f"{who}bound {what}", color)
                lines += 1
    head = ("<h2>I/O latency per class</h2><p>Request submission (or arrival) to return "
            "to the task, all devices of a class together; dotted: the analysis's latency "
            "bound of each read of a device of the class (the Analysis table's bound), in "
            "the class's colour.</p>")
    if not drawn:
        plt.close(fig)
        if zeros:
            return head + "".join(zeros)
        return ""
    ax.set_xlabel("I/O request latency (us)")
    ax.set_ylabel("fraction of requests")
    ax.set_xscale("log")
    ax.legend(fontsize=7)
    fig.tight_layout()
    cut = ""
    if len(captions) > TOP_N * 4:
        cut = f"<li>... and {len(captions) - TOP_N * 4} more reads</li>"
    items = "".join(f"<li>{_esc(c)}</li>" for c in captions[:TOP_N * 4])
    return (head + "".join(zeros)
            + f'<figure class="io-latency" data-bounds="{_drawn_bounds(ax)}">'
            f"{_png(fig)}<figcaption class='note'><ul>{items}{cut}</ul></figcaption></figure>")


def _share(runs: Sequence[Run]) -> str:
    out = ["<h2>CPU use over time</h2>"]
    for r in runs:
        m = r.metrics
        sched = r.schedule
        if sched is not None:
            out.append(_share_from_trace(r, sched))
            continue
        srv, note = _top(m["servers"], key=lambda s: s["share_fraction"])
        windows = max((len(s.get("share_windows_fraction") or []) for s in srv), default=0)
        if windows < MIN_POINTS:
            out.append(_na(f"{r.name}: CPU share over time",
                           f"the run has {windows} window(s) of {_us(m.get('window_ns'))} "
                           f"and no trace; a curve needs {MIN_POINTS} points: set a shorter "
                           "simulation.window, or simulate with --trace"))
            continue
        w = m["window_ns"] / 1e9
        fig, ax = plt.subplots(figsize=(8, 3))
        for s in srv:
            ys = [100 * v for v in s["share_windows_fraction"]]
            xs = [(i + 0.5) * w for i in range(len(ys))]
            ax.plot(xs, ys, label=s["name"], color=palette.color_of(s["name"]))
        ax.set_xlabel("time (s)")
        ax.set_ylabel("% of its CPU")
        ax.set_title(f"{r.name}: per window of {_us(m['window_ns'])}", fontsize=9)
        ax.legend(fontsize=7, ncol=2)
        fig.tight_layout()
        out.append(note + f'<figure class="share" data-run="{_esc(r.name)}">{_png(fig)}'
                   "</figure>")
    return "".join(out)


def _share_from_trace(r: Run, sched: timeline.Schedule) -> str:
    """Stacked CPU use per CPU from the trace: each server, top halves,
    softirq, idle, in ``SHARE_BINS`` bins of the run (of the trace's part
    of it the trace covers)."""
    span, why = r.traced()
    edges, per = timeline.binned(sched, span, SHARE_BINS)
    width = (edges[1] - edges[0]) if len(edges) > 1 else span
    out = []
    cpus = sorted(per)
    srv_all = sorted({k[1] for cpu in cpus for k in per[cpu] if k[0] == "server"})
    fig, axes = plt.subplots(len(cpus), 1, figsize=(8, 1.9 * len(cpus) + 0.8), squeeze=False,
                             sharex=True)
    for ax, cpu in zip(axes[:, 0], cpus, strict=True):
        groups = per[cpu]
        srv = sorted((k for k in groups if k[0] == "server"), key=lambda k: -groups[k].sum())
        shown = srv[:TOP_N]
        layers, labels, colors = [], [], []
        for k in shown:
            layers.append(groups[k])
            labels.append(k[1])
            colors.append(palette.color_of(k[1]))
        if srv[TOP_N:]:
            layers.append(sum(groups[k] for k in srv[TOP_N:]))
            labels.append(f"{len(srv) - TOP_N} more servers")
            colors.append("#999999")
        for k, lab, col in ((("isr", ""), "top halves", palette.ISR_PALETTE[0]),
                            (("softirq", ""), "softirq", palette.SOFTIRQ_PALETTE[0])):
            if k in groups and groups[k].sum() > 0:
                layers.append(groups[k])
                labels.append(lab)
                colors.append(col)
        busy = sum(layers) if layers else np.zeros(len(edges) - 1)
        layers.append(np.clip(width - busy, 0, None))
        labels.append("idle")
        colors.append(palette.IDLE)
        xs = (edges[:-1] + edges[1:]) / 2e9
        ax.stackplot(xs, [100 * v / width for v in layers], labels=labels, colors=colors,
                     step=None)
        ax.set_ylim(0, 100)
        ax.set_xlim(edges[0] / 1e9, edges[-1] / 1e9)
        ax.set_ylabel(f"CPU {cpu} (%)")
        ax.legend(fontsize=6, ncol=4, loc="upper right", framealpha=0.8)
    axes[-1, 0].set_xlabel("time (s)")
    axes[0, 0].set_title(f"{r.name}: CPU use per {_us(width)} (from the trace)", fontsize=9)
    fig.tight_layout()
    cut = (f"<p class='note'>The plot covers [0, {_us(span)}): {_esc(why)}.</p>"
           if why else "")
    many = (f"<figcaption class='note'>Busiest {TOP_N} of {len(srv_all)} servers shown; "
            f"the other {len(srv_all) - TOP_N} together in grey.</figcaption>"
            if len(srv_all) > TOP_N else "")
    out.append(f'<figure class="share" data-run="{_esc(r.name)}" data-bins="{len(xs)}">'
               f"{_png(fig)}{many}</figure>{cut}")
    return "".join(out)


TASK_FIELDS = [("released", "released", "count"), ("finished", "completed", "count"),
               ("deadline misses", "deadline_misses", "count"),
               ("response mean", "response.mean_ns", "ns"),
               ("response p99", "response.p99_ns", "ns"),
               ("response max", "response.max_ns", "ns")]
DEVICE_FIELDS = [("handled", "handled", "count"), ("dropped", "dropped", "count"),
                 ("throughput", "throughput_bytes_per_s", "Bps"),
                 ("latency mean", "latency.mean_ns", "ns"), ("latency p99", "latency.p99_ns", "ns"),
                 ("latency max", "latency.max_ns", "ns")]
SERVER_FIELDS = [("CPU share", "share_fraction", "fraction"),
                 ("response max (Eq. 3 quantity)", "response.max_ns", "ns"),
                 ("budget misses", "budget_misses", "count")]
VIRQ_FIELDS = [("arrivals", "arrivals", "count"), ("handled", "handled", "count"),
               ("serviceable", "serviceable", "count"),
               ("handling max", "handling.max_ns", "ns")]

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;background:#fff}
h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ccc;margin-top:28px}
h3{font-size:15px}table{border-collapse:collapse;margin:8px 0}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f0f3f7}
td:first-child,td:nth-child(2){text-align:left}.note{color:#666;font-size:12px}
img{max-width:100%;display:block;margin:6px 0}
.verdict{border-radius:6px;padding:8px 12px;margin:8px 0;border:2px solid}
.verdict .head{font-size:15px}.verdict ul{margin:4px 0 0 0}.verdict p{margin:4px 0 0 0}
.verdict.ok{background:#e9f6ec;border-color:#3a9b50}
.verdict.warn{background:#fff6e0;border-color:#d09a1a}
.verdict.fail{background:#fdeceb;border-color:#c0392b}
.na{color:#555;font-style:italic;background:#f6f6f6;padding:4px 8px;border-left:3px solid #bbb}
.zero-note{background:#eef4fb;padding:4px 8px;border-left:3px solid #4a7fb5;font-size:13px}
section.timeline{position:relative;margin:6px 0;user-select:none}
.tl-bar{display:flex;gap:6px;align-items:center;margin:4px 0;font-size:12px}
.tl-bar button{font-size:12px;padding:1px 8px}.tl-range{margin-left:12px;font-family:monospace}
.tl-status{color:#a33}.tl-wrap{position:relative}
section.timeline canvas{display:block;cursor:grab;border:1px solid #ddd}
.tl-tip{position:absolute;display:none;background:#fffffe;border:1px solid #999;padding:3px 6px;
font-size:12px;white-space:pre;pointer-events:none;box-shadow:0 1px 4px #0003;z-index:2}
.tl-legend{display:flex;flex-wrap:wrap;gap:4px 12px;font-size:12px;margin:4px 0}
.tl-legend i,i.swatch{display:inline-block;width:11px;height:11px;margin-right:4px;
vertical-align:-1px;border:1px solid #0002}
.tl-legend small{color:#888}
table.breakdown tr.sub td{color:#555;font-size:12px}table.breakdown tr.total td{font-weight:600}
details.perfetto{margin:6px 0;font-size:13px}
"""


def render(runs: Sequence[Run], *, window: tuple[int, int] | None = None) -> str:
    """The report's HTML for ``runs`` (see the module doc)."""
    if not runs:
        raise ValueError("report: at least one run directory")
    bounds = [run_bounds(r) for r in runs]
    title = " vs ".join(r.name for r in runs)
    script = (Path(__file__).with_name("report_assets") / "timeline.js").read_text()
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>irqlab report: "
             f"{_esc(title)}</title><style>{STYLE}</style></head><body>",
             f"<h1>irqlab report: {_esc(title)}</h1>",
             *(banner(r, b) for r, b in zip(runs, bounds, strict=True)),
             "<p class='note'>Times in us/ms for reading; each cell's raw value (ns, bytes, "
             "fractions as in metrics.json, docs/metrics.md) is in its data-value.</p>",
             _summary(runs),
             "<h2>Schedule</h2>", *(timeline_section(r, i, window) for i, r in enumerate(runs)),
             breakdown_section(runs),
             "<h2>Analysis</h2>",
             *(_analysis(r, b) for r, b in zip(runs, bounds, strict=True)),
             _side_by_side(runs, "tasks", TASK_FIELDS),
             _side_by_side(runs, "devices", DEVICE_FIELDS) if any(
                 r.metrics["devices"] for r in runs) else "",
             _side_by_side(runs, "servers", SERVER_FIELDS),
             _side_by_side(runs, "virqs", VIRQ_FIELDS) if any(
                 r.metrics["virqs"] for r in runs) else "",
             _responses(runs, bounds), _io_latency(runs, bounds), _share(runs),
             f"<script>{script}</script></body></html>"]
    return "\n".join(p for p in parts if p)


def write_report(run_dirs: Sequence[Path | str], out: Path | str, *,
                 window: tuple[int, int] | None = None,
                 names: Sequence[str] | None = None) -> Path:
    """Load the run directories and write the report to ``out`` (an HTML
    file); ``window`` ``(start_ns, end_ns)`` is the timeline's first view
    (default: the whole run; the page can always zoom out to it)."""
    if window is not None and not 0 <= window[0] < window[1]:
        raise ValueError(f"window: {window}: need 0 <= start < end (ns)")
    dirs = [Path(d) for d in run_dirs]
    labels = list(names) if names else [d.name or str(d) for d in dirs]
    if len(set(labels)) != len(labels):
        labels = [str(d) for d in dirs]
    runs = [Run.load(d, n, window) for d, n in zip(dirs, labels, strict=True)]
    p = Path(out)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(render(runs, window=window))
    return p
