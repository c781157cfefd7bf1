"""Self-contained HTML report of one or more simulation runs (``irqlab
report RUN_DIR...``, ``irqlab simulate --report``; DESIGN.md §12,
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
import html
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

TOP_N = 12
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
        if sched is not None and sched.truncated:
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

def _esc(x: Any) -> str:
    return html.escape(str(x))


def _us(ns: float | None) -> str:
    if ns is None:
        return "-"
    return f"{ns / 1e6:.3f} ms" if ns >= 1e6 else f"{ns / 1e3:.1f} us"


def _cell(value: Any, key: str, text: str | None = None) -> str:
    """A table cell with its raw value for checks (``data-value``)."""
    raw = "" if value is None else json.dumps(value)
    shown = text if text is not None else ("-" if value is None else str(value))
    return f'<td data-key="{_esc(key)}" data-value="{_esc(raw)}">{_esc(shown)}</td>'


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
        verdict = ok if isinstance(ok, str) else "-" if ok is None else (
            "holds" if ok else "FAILS")
        body.append(f"<tr><td>{_esc(eq)}</td><td>{_esc(item)}</td>"
                    + _cell(bound, f"{run.name}.bound.{key}",
                            _us(bound) if bound else (why or "-"))
                    + _cell(sim, f"{run.name}.simulated_max.{key}", _us(sim))
                    + f"<td>{within}</td><td>{verdict}</td></tr>")
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


# ---- the verdict banner ------------------------------------------------------

def _na(what: str, why: str) -> str:
    """A "not applicable" note in place of a plot or table."""
    return (f'<p class="na" data-na="{_esc(what)}">{_esc(what)}: not applicable: '
            f"{_esc(why)}</p>")


def verdict(run: Run, b: dict[str, Any]) -> dict[str, Any]:
    """What the run's banner says: ``analysis`` (``ok`` True / False /
    None when there is no analysis, ``failures``, ``source``), ``eq1``
    (QUEST-VCPU Eq. 1 per CPU: sufficient only, not part of the verdict),
    the simulation's ``misses`` per task, ``drops`` per device,
    ``lost_interrupts``, ``budget_misses`` per server, ``partial``,
    ``trace_truncated`` and the banner's ``status`` (``ok``, ``warn`` or
    ``fail``)."""
    m = run.metrics
    an: dict[str, Any]
    if run.analysis and isinstance(run.analysis.get("verdict"), dict):
        v = run.analysis["verdict"]
        an = {"ok": bool(v.get("ok")), "failures": list(v.get("failures", [])),
              "source": "analysis.json (irqlab analyze --json)"}
    elif "error" in b:
        an = {"ok": None, "failures": [], "source": b["error"]}
    elif "hypervisor" in b:
        from irqlab.commands.analyze import hypervisor_failures

        f = hypervisor_failures(b["hypervisor"])
        an = {"ok": not f, "failures": f, "source": "config.json (VINT §VI)"}
    else:
        model = b.get("model", {})
        an = {"ok": bool(model.get("ok", not model.get("failures"))),
              "failures": list(model.get("failures", [])),
              "source": f"config.json ({m.get('path')} path)"}
    misses = {t["name"]: t["deadline_misses"] for t in m["tasks"]
              if t.get("deadline_misses")}
    drops = {d["name"]: d["dropped"] for d in m["devices"] if d.get("dropped")}
    lost = sum(c.get("lost_interrupts") or 0 for c in m["cpus"])
    bmiss = {s["name"]: s["budget_misses"] for s in m["servers"] if s.get("budget_misses")}
    status = "ok"
    if drops or lost or bmiss or an["ok"] is None or m.get("partial") \
            or m.get("trace_truncated"):
        status = "warn"
    if misses or an["ok"] is False:
        status = "fail"
    return {"analysis": an, "eq1": list(b.get("cpus", [])) if "error" not in b else [],
            "misses": misses, "drops": drops, "lost_interrupts": lost,
            "budget_misses": bmiss, "partial": bool(m.get("partial")),
            "trace_truncated": bool(m.get("trace_truncated")), "status": status}


def _banner(run: Run, b: dict[str, Any]) -> str:
    v = verdict(run, b)
    an = v["analysis"]
    m = run.metrics
    real = not m.get("events")
    if an["ok"] is None:
        head = f"analysis: not available ({an['source']})"
    elif an["ok"]:
        head = "analysis: every server, task and flow is bounded within its deadline"
    else:
        head = (f"analysis: FAILS ({len(an['failures'])} item(s) without a bound within "
                "the deadline)")
    jobs = sum(t.get("released", 0) for t in m["tasks"])
    what = "measured" if real else "simulated"
    nmiss = sum(v["misses"].values())
    ndrop = sum(v["drops"].values())
    sim = (f"{what} {_us(m['duration_ns'])}: {nmiss} deadline miss{'es' if nmiss != 1 else ''} "
           f"in {jobs} released jobs, {ndrop} dropped event{'s' if ndrop != 1 else ''}")
    if v["lost_interrupts"]:
        sim += f", {v['lost_interrupts']} lost interrupts"
    items = [f"<li>analysis: {_esc(f)}</li>" for f in an["failures"][:TOP_N]]
    if len(an["failures"]) > TOP_N:
        items.append(f"<li>... and {len(an['failures']) - TOP_N} more analysis items</li>")
    items += [f"<li>task {_esc(n)}: {c} deadline miss{'es' if c != 1 else ''}</li>"
              for n, c in list(v["misses"].items())[:TOP_N]]
    items += [f"<li>device {_esc(n)}: {c} dropped (buffer full)</li>"
              for n, c in list(v["drops"].items())[:TOP_N]]
    items += [f"<li>server {_esc(n)}: {c} periods without its budget</li>"
              for n, c in list(v["budget_misses"].items())[:TOP_N]]
    if v["partial"]:
        items.append("<li>the run was stopped early (partial)</li>")
    if v["trace_truncated"]:
        items.append("<li>the trace was cut at trace_max_events: the timeline and the "
                     "per-thread times cover its start only</li>")
    elif run.traced()[1]:
        items.append(f"<li>{_esc(run.traced()[1])}: the timeline covers that part only</li>")
    eq1 = ""
    if v["eq1"]:
        parts = [f"CPU {c['cpu']}: demand {100 * c['demand']:.1f} % vs bound "
                 f"{100 * c['bound']:.1f} %, {'met' if c['passes'] else 'not met'}"
                 for c in v["eq1"]]
        eq1 = ("<p class='note eq1'>QUEST-VCPU Eq. 1, a sufficient utilization test (not part "
               "of the verdict; not meeting it does not mean a deadline can be missed, the "
               f"response-time analysis decides): {_esc('; '.join(parts))}.</p>")
    mark = {"ok": "\u2714", "warn": "\u26a0", "fail": "\u2716"}[v["status"]]
    return (f'<div class="verdict {v["status"]}" data-run="{_esc(run.name)}" '
            f'data-status="{v["status"]}" data-analysis-ok="{_esc(json.dumps(an["ok"]))}" '
            f'data-misses="{nmiss}" data-drops="{ndrop}">'
            f"<div class='head'>{mark} <b>{_esc(run.name)}</b> \u2014 {_esc(head)}; "
            f"{_esc(sim)}</div>"
            + (f"<ul>{''.join(items)}</ul>" if items else "")
            + f"<p class='note'>verdict from {_esc(an['source'])}.</p>{eq1}</div>")


# ---- the timeline ------------------------------------------------------------

_ASSETS = Path(__file__).with_name("report_assets")


def _budget_scale(s: dict[str, Any], cfg_srv: dict[str, Any] | None,
                  counter: timeline.Counter | None) -> tuple[int | None, str | None]:
    """A server's budget row: the top of its scale (ns: the configured
    budget, else the largest value of its counter, as for a PIBS I/O VCPU
    whose budget follows the inherited period), or why there is none."""
    kind = s.get("kind")
    if kind == "unbounded":
        return None, "a FIFO server (unbounded) has no budget"
    if counter is None or not len(counter.values):
        return None, f"the trace has no budget counter for this {kind} server"
    top = (cfg_srv or {}).get("budget") or int(counter.values.max())
    if top <= 0:
        return None, f"the trace's budget counter of this {kind} server is never positive"
    return int(top), None


def _legend(sched: timeline.Schedule, tasks: Sequence[str] = ()) -> str:
    seen: dict[str, tuple[str, str]] = {}
    guest: set[str] = set()
    for lab in sched.labels:
        if lab.kind == "switch":
            continue
        key = lab.name if lab.kind in ("task", "thread") else f"{lab.kind}:{lab.name}"
        seen.setdefault(key, (lab.name, lab.kind))
        if lab.kind == "isr" and lab.server is not None:
            guest.add(lab.name)
    order = sorted(seen.values(), key=lambda x: ({"task": 0, "thread": 1, "isr": 2,
                                                  "softirq": 3}.get(x[1], 4), x[0]))
    words = {"task": "task", "thread": "thread", "isr": "top half", "softirq": "softirq"}
    colour = {(lab.name, lab.kind): lab.color for lab in sched.labels}
    items = [f'<span class="sw" data-name="{_esc(n)}" data-kind="{k}" '
             f'data-color="{colour[(n, k)]}"><i style="background:{colour[(n, k)]}"></i>'
             f"{_esc(n)} <small>{'guest ISR' if n in guest else words.get(k, k)}</small>"
             "</span>" for n, k in order[:60]]
    if len(order) > 60:
        items.append(f"<span>... and {len(order) - 60} more (hover the timeline)</span>")
    idle_tasks = [n for n in tasks if n not in seen]
    items += [f'<span class="sw" data-name="{_esc(n)}" data-kind="task" '
              f'data-color="{palette.color_of(n)}"><i style="background:{palette.color_of(n)}">'
              f"</i>{_esc(n)} <small>task, never ran</small></span>" for n in idle_tasks[:20]]
    items.append(f'<span class="sw" data-kind="idle"><i style="background:{palette.IDLE}">'
                 "</i>idle</span>")
    if any(t.kind == "switch" for t in sched.tracks):
        items.append(f'<span class="sw" data-kind="switch"><i style="background:'
                     f'{palette.SWITCH}"></i>VCPU switch</span>')
    return f"<div class='tl-legend'>{''.join(items)}</div>"


def _perfetto(run: Run) -> str:
    f = run.trace_file()
    if f is None:
        return ""
    size = f.stat().st_size
    big = (" For a trace this large, <code>--trace-format perfetto</code> writes "
           "<code>trace.pftrace</code>, a few times smaller and quicker to open."
           if f.suffix == ".json" and size > 50e6 else "")
    return (f"<details class='perfetto'><summary>Open <code>{_esc(f.name)}</code> "
            f"({size / 1e6:.1f} MB) in Perfetto for every event and the flow arrows"
            "</summary><ol><li>In Chrome, Chromium, Firefox or Edge, go to "
            "<code>ui.perfetto.dev</code> (Perfetto's trace viewer; it runs in the browser "
            "page and does not upload the file).</li><li>Choose <i>Open trace file</i> in "
            f"the left menu (or drag the file onto the page) and pick <code>{_esc(f)}</code>."
            "</li><li>Tracks: <i>CPU N</i> (what runs: threads, <code>irq ...</code> top "
            "halves, <code>softirq ...</code>; VCPU switches), <i>servers on CPU N</i> (one "
            "track per server, budget counters). Select a slice and follow its flow "
            "arrows: interrupt \u2192 bottom half \u2192 woken task. Keys: W/S zoom, A/D "
            "pan.</li></ol><p class='note'>Offline, <code>chrome://tracing</code> "
            f"(<i>Load</i>) reads <code>trace.json</code> too.{big}</p></details>")


def _timeline(run: Run, index: int, window: tuple[int, int] | None) -> str:
    title = f"<h3>{_esc(run.name)}: schedule of the whole run</h3>"
    sched = run.schedule
    if sched is None:
        return title + _na("timeline", "no trace in the run directory (simulate with "
                           "--trace, or --report)") + _perfetto(run)
    m = run.metrics
    meta, blob = timeline.encode(sched)
    cfg_srv = {s["name"]: s for s in (run.config or {}).get("servers", [])}
    counters = {(c.cpu, c.server): c for c in sched.counters}
    servers = []
    for s in m["servers"]:
        top, why = _budget_scale(s, cfg_srv.get(s["name"]),
                                 counters.get((s.get("cpu", 0), s["name"])))
        servers.append({"name": s["name"], "cpu": s.get("cpu", 0), "kind": s.get("kind"),
                        "color": palette.color_of(s["name"]), "budget_ns": top,
                        "no_budget": why})
    meta.update({"duration_ns": m["duration_ns"], "cpus": list(range(len(m["cpus"]))),
                 "servers": servers, "idle_color": palette.IDLE})
    span, why = run.traced()
    meta["trace_end_ns"] = span
    if window is not None:
        meta["initial"] = [window[0], min(window[1], m["duration_ns"])]
    elif why:
        meta["initial"] = [0, span]
    notes = []
    if why:
        notes.append(f"Only [0, {_us(span)}) of the {_us(m['duration_ns'])} run is drawn: "
                     f"{why}; the first view is that part, and the rest is hatched "
                     "(not traced).")
    size = len(blob) + len(json.dumps(meta))
    notes.append(f"{sched.slices:,} slices, {size / 1e3:,.0f} kB of page.")
    return (title + f'<section class="timeline" id="timeline-{index}" '
            f'data-run="{_esc(run.name)}" data-duration-ns="{m["duration_ns"]}" '
            f'data-slices="{sched.slices}" data-bytes="{size}">'
            "<div class='tl-bar'><button data-act='all'>whole run</button>"
            "<button data-act='out'>\u2212</button><button data-act='in'>+</button>"
            "<button data-act='left'>\u25c0</button><button data-act='right'>\u25b6</button>"
            "<label><input type='checkbox' class='tl-servers'> servers and budgets</label>"
            "<span class='tl-range'></span><span class='tl-status'>drawing...</span></div>"
            "<div class='tl-wrap'><canvas tabindex='0'></canvas><div class='tl-tip'></div>"
            "</div>"
            f"<script type='application/json' class='tl-meta'>{_script_json(meta)}</script>"
            f"<script type='application/octet-stream' class='tl-blob'>{blob}</script>"
            "</section>" + _legend(sched, [t["name"] for t in m["tasks"]])
            + "<p class='note'>Wheel: zoom around the pointer; drag: pan; double-click: the "
            "whole run; keys + - \u2190 \u2192 0. Slices narrower than a pixel add up to a "
            "bar in their pixel column, stacked by who ran (its height: the column's busy "
            "share, at least a quarter of the track); a tick on a CPU track's top edge "
            "marks each top half, even one that took no time. Grey: idle. "
            f"{' '.join(_esc(n) for n in notes)}</p>" + _perfetto(run))


def _script_json(x: Any) -> str:
    return json.dumps(x, separators=(",", ":")).replace("</", "<\\/")


# ---- where each CPU's time went -----------------------------------------------

def breakdown(run: Run) -> dict[int, list[dict[str, Any]]]:
    """Per CPU, the rows of the time breakdown: ``part`` ``top`` (top
    halves, softirq, each server, idle: they add up to the run's duration)
    or ``sub`` (a top-level row's split by device or thread, from the
    trace), with ``what``, ``kind``, ``ns`` and ``source`` (``metrics`` or
    ``trace``). Top-level values come from ``metrics.json`` (``isr_ns``,
    ``softirq_ns``, ``idle_ns``, each server's ``busy_ns + background_ns``);
    where a real run leaves them out, from the trace."""
    m = run.metrics
    sched = run.schedule
    per = timeline.cpu_time(sched) if sched is not None else {}
    dur = m["duration_ns"]
    out: dict[int, list[dict[str, Any]]] = {}
    for cpu, c in enumerate(m["cpus"]):
        acc = per.get(cpu, {})
        rows: list[dict[str, Any]] = []

        def total(kind: str, acc: dict[tuple[str, str, str | None], int] = acc) -> int:
            return sum(ns for (k, _, srv), ns in acc.items() if k == kind and srv is None)

        def subs(kind: str, prefix: str, acc: dict[tuple[str, str, str | None], int] = acc
                 ) -> list[dict[str, Any]]:
            return [{"part": "sub", "what": n.removeprefix(prefix).strip() or n, "kind": kind,
                     "ns": ns, "source": "trace"}
                    for (k, n, srv), ns in sorted(acc.items()) if k == kind and srv is None]

        src = "metrics" if "isr_ns" in c else "trace"
        have = src == "metrics" or sched is not None
        if not have:
            continue
        isr = c["isr_ns"] if src == "metrics" else total("isr")
        rows.append({"part": "top", "what": "top halves (ISRs)", "kind": "isr", "ns": isr,
                     "source": src})
        rows += subs("isr", "irq")
        soft = c.get("softirq_ns") if src == "metrics" else total("softirq")
        if soft or m.get("path") == "linux":
            rows.append({"part": "top", "what": "softirq (bottom halves at IRQ exit)",
                         "kind": "softirq", "ns": soft or 0, "source": src})
            rows += subs("softirq", "softirq")
        busy = 0
        for s in m["servers"]:
            if s.get("cpu", 0) != cpu:
                continue
            threads = sorted(((n, ns, k) for (k, n, srv), ns in acc.items()
                              if srv == s["name"]), key=lambda x: -x[1])
            if "busy_ns" in s:
                ns, ssrc = s["busy_ns"] + (s.get("background_ns") or 0), "metrics"
            else:
                ns, ssrc = sum(x for _, x, _ in threads), "trace"
            busy += ns
            kind = "FIFO (unbounded)" if s.get("kind") == "unbounded" else s.get("kind", "")
            rows.append({"part": "top", "what": f"server {s['name']}", "kind": kind,
                         "ns": ns, "source": ssrc, "server": s["name"]})
            tasks = {t["name"] for t in m["tasks"]}
            rows += [{"part": "sub", "what": n,
                      "kind": "guest ISR" if k == "isr" else "task" if n in tasks else "thread",
                      "ns": x, "source": "trace", "server": s["name"]} for n, x, k in threads]
        if "idle_ns" in c:
            idle, isrc = c["idle_ns"], "metrics"
        else:
            idle, isrc = dur - isr - (soft or 0) - busy, "trace"
        rows.append({"part": "top", "what": "idle", "kind": "idle", "ns": idle,
                     "source": isrc})
        out[cpu] = rows
    return out


def _breakdown(runs: Sequence[Run]) -> str:
    out = ["<h2>Where each CPU's time went</h2><p>Per CPU: the top halves, softirq, "
           "each server (with its threads below it) and idle add up to the run's duration. "
           "Totals are the metrics' (<code>isr_ns</code>, <code>softirq_ns</code>, "
           "<code>idle_ns</code>, each server's <code>busy_ns + background_ns</code>); the "
           "split by device and by thread is summed from the trace.</p>"]
    for r in runs:
        rows_by_cpu = breakdown(r)
        if not rows_by_cpu:
            out.append(_na(f"{r.name}: CPU time breakdown", "the run directory has neither "
                           "per-CPU metrics nor a trace"))
            continue
        dur = r.metrics["duration_ns"]
        for cpu, rows in rows_by_cpu.items():
            c = r.metrics["cpus"][cpu]
            body = []
            for i, row in enumerate(rows):
                pct = 100 * row["ns"] / dur if dur else 0.0
                swatch = ""
                if row["kind"] == "guest ISR":
                    swatch = palette.isr_color(row["what"])
                elif row["kind"] == "isr":
                    swatch = palette.ISR_PALETTE[0] if row["part"] == "top" else \
                        palette.isr_color(row["what"])
                elif row["kind"] == "softirq":
                    swatch = palette.SOFTIRQ_PALETTE[0] if row["part"] == "top" else \
                        palette.softirq_color(row["what"])
                elif row["kind"] == "idle":
                    swatch = palette.IDLE
                else:
                    swatch = palette.color_of(row.get("server") if row["part"] == "top"
                                              else row["what"])
                what = row["what"] if row["part"] == "top" else "\u2003" + row["what"]
                src = "" if row["source"] == "metrics" else " <small>(trace)</small>"
                body.append(
                    f'<tr class="{row["part"]}" data-cpu="{cpu}" data-part="{row["part"]}" '
                    f'data-kind="{_esc(row["kind"])}" data-ns="{row["ns"]}">'
                    f'<td><i class="swatch" style="background:{swatch}"></i>{_esc(what)}</td>'
                    f"<td>{_esc(row['kind'])}</td>"
                    + _cell(row["ns"], f"{r.name}.cpu{cpu}.{i}.ns", _us(row["ns"]))
                    + f"<td>{pct:.2f} %{src}</td></tr>")
            tot = sum(row["ns"] for row in rows if row["part"] == "top")
            body.append('<tr class="total"><td>total</td><td></td>'
                        + _cell(tot, f"{r.name}.cpu{cpu}.total_ns", _us(tot))
                        + f"<td>{100 * tot / dur if dur else 0:.2f} %</td></tr>")
            notes = []
            if tot != dur:
                notes.append(f"The rows add up to {_us(tot)}, not the run's {_us(dur)}: "
                             "the metrics do not account for every nanosecond of this run.")
            if c.get("switch_ns"):
                notes.append(f"Of the servers' time, {_us(c['switch_ns'])} is VCPU switch "
                             "overhead (charged to the incoming VCPU).")
            if r.metrics.get("path") == "linux":
                notes.append("On the linux path a bottom half runs in softirq context at IRQ "
                             "exit (the softirq row, charged to no thread); ksoftirqd/N runs "
                             "only the work deferred to it (softirq's restart and 2 ms "
                             "limits).")
            sched = r.schedule
            span, why = r.traced()
            if sched is not None and why:
                notes.append(f"The split by device and thread (trace) covers [0, {_us(span)}) "
                             f"only: {why}. The totals are the whole run's.")
            elif sched is None:
                notes.append("No trace: no split by thread or device.")
            out.append(f"<h3>{_esc(r.name)}: CPU {cpu}</h3><table class='breakdown' "
                       f"data-run='{_esc(r.name)}' data-cpu='{cpu}' data-duration-ns='{dur}'>"
                       "<tr><th>what</th><th>kind</th><th>time</th><th>of the run</th></tr>"
                       f"{''.join(body)}</table>"
                       + "".join(f"<p class='note'>{_esc(n)}</p>" for n in notes))
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
    script = (_ASSETS / "timeline.js").read_text()
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>irqlab report: "
             f"{_esc(title)}</title><style>{STYLE}</style></head><body>",
             f"<h1>irqlab report: {_esc(title)}</h1>",
             *(_banner(r, b) for r, b in zip(runs, bounds, strict=True)),
             "<p class='note'>Times in us/ms for reading; each cell's raw value (ns, bytes, "
             "fractions as in metrics.json, docs/metrics.md) is in its data-value.</p>",
             _summary(runs),
             "<h2>Schedule</h2>", *(_timeline(r, i, window) for i, r in enumerate(runs)),
             _breakdown(runs),
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
