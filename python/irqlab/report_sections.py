"""The run-level sections of ``irqlab report`` (docs/report.md): the
verdict banner, the interactive timeline (its HTML, legend, data and the
Perfetto note; the drawing is ``report_assets/timeline.js``, the data
``irqlab.timeline``) and where each CPU's time went; and the HTML helpers
the report's other sections share. ``irqlab.report`` puts them on the page.

Design principles: the numbers shown come from the run's ``metrics.json``
(totals) and its trace (splits), and carry their raw value in data
attributes for the tests; colours from ``irqlab.palette``.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from irqlab import palette, timeline

if TYPE_CHECKING:
    from irqlab.report import Run

TOP_N = 12
#: servers that get a timeline row (and a budget row) on demand
MAX_SERVER_ROWS = 64


# ---- HTML helpers ------------------------------------------------------------

def esc(x: Any) -> str:
    """``x`` as HTML text."""
    return html.escape(str(x))


def us(ns: float | None) -> str:
    """A time in ns as "12.3 us" or "4.567 ms" ("-" for ``None``)."""
    if ns is None:
        return "-"
    return f"{ns / 1e6:.3f} ms" if ns >= 1e6 else f"{ns / 1e3:.1f} us"


def cell(value: Any, key: str, text: str | None = None) -> str:
    """A table cell with its raw value for checks (``data-value``)."""
    raw = "" if value is None else json.dumps(value)
    shown = text if text is not None else ("-" if value is None else str(value))
    return f'<td data-key="{esc(key)}" data-value="{esc(raw)}">{esc(shown)}</td>'


# ---- the verdict banner ------------------------------------------------------

def na(what: str, why: str) -> str:
    """A "not applicable" note (``what``: not applicable: ``why``) in place
    of a plot or table."""
    return (f'<p class="na" data-na="{esc(what)}">{esc(what)}: not applicable: '
            f"{esc(why)}</p>")


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
        from irqlab.analysis import hypervisor_failures

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


def banner(run: Run, b: dict[str, Any]) -> str:
    """The run's verdict banner (see :func:`verdict`)."""
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
    # a real run's directory may leave misses or drops out (irqlab vmm --out)
    missed = (f"{nmiss} deadline miss{'es' if nmiss != 1 else ''}"
              if all("deadline_misses" in t for t in m["tasks"])
              else "deadline misses not measured")
    dropped = (f"{ndrop} dropped event{'s' if ndrop != 1 else ''}"
               if all("dropped" in d for d in m["devices"]) else "drops not measured")
    sim = f"{what} {us(m['duration_ns'])}: {missed} in {jobs} released jobs, {dropped}"
    if v["lost_interrupts"]:
        sim += f", {v['lost_interrupts']} lost interrupts"
    items = [f"<li>analysis: {esc(f)}</li>" for f in an["failures"][:TOP_N]]
    if len(an["failures"]) > TOP_N:
        items.append(f"<li>... and {len(an['failures']) - TOP_N} more analysis items</li>")
    items += [f"<li>task {esc(n)}: {c} deadline miss{'es' if c != 1 else ''}</li>"
              for n, c in list(v["misses"].items())[:TOP_N]]
    items += [f"<li>device {esc(n)}: {c} dropped (buffer full)</li>"
              for n, c in list(v["drops"].items())[:TOP_N]]
    items += [f"<li>server {esc(n)}: {c} periods without its budget</li>"
              for n, c in list(v["budget_misses"].items())[:TOP_N]]
    if v["partial"]:
        items.append("<li>the run was stopped early (partial)</li>")
    if v["trace_truncated"]:
        items.append("<li>the trace was cut at trace_max_events: the timeline and the "
                     "per-thread times cover its start only</li>")
    elif run.traced()[1]:
        items.append(f"<li>{esc(run.traced()[1])}: the timeline covers that part only</li>")
    eq1 = ""
    if v["eq1"]:
        parts = [f"CPU {c['cpu']}: demand {100 * c['demand']:.1f} % vs bound "
                 f"{100 * c['bound']:.1f} %, {'met' if c['passes'] else 'not met'}"
                 for c in v["eq1"]]
        eq1 = ("<p class='note eq1'>QUEST-VCPU Eq. 1, a sufficient utilization test (not part "
               "of the verdict; not meeting it does not mean a deadline can be missed, the "
               f"response-time analysis decides): {esc('; '.join(parts))}.</p>")
    mark = {"ok": "\u2714", "warn": "\u26a0", "fail": "\u2716"}[v["status"]]
    return (f'<div class="verdict {v["status"]}" data-run="{esc(run.name)}" '
            f'data-status="{v["status"]}" data-analysis-ok="{esc(json.dumps(an["ok"]))}" '
            f'data-misses="{nmiss}" data-drops="{ndrop}">'
            f"<div class='head'>{mark} <b>{esc(run.name)}</b> \u2014 {esc(head)}; "
            f"{esc(sim)}</div>"
            + (f"<ul>{''.join(items)}</ul>" if items else "")
            + f"<p class='note'>verdict from {esc(an['source'])}.</p>{eq1}</div>")


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
    items = [f'<span class="sw" data-name="{esc(n)}" data-kind="{k}" '
             f'data-color="{colour[(n, k)]}"><i style="background:{colour[(n, k)]}"></i>'
             f"{esc(n)} <small>{'guest ISR' if n in guest else words.get(k, k)}</small>"
             "</span>" for n, k in order[:60]]
    if len(order) > 60:
        items.append(f"<span>... and {len(order) - 60} more (hover the timeline)</span>")
    idle_tasks = [n for n in tasks if n not in seen]
    items += [f'<span class="sw" data-name="{esc(n)}" data-kind="task" '
              f'data-color="{palette.color_of(n)}"><i style="background:{palette.color_of(n)}">'
              f"</i>{esc(n)} <small>task, never ran</small></span>" for n in idle_tasks[:20]]
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
    return (f"<details class='perfetto'><summary>Open <code>{esc(f.name)}</code> "
            f"({size / 1e6:.1f} MB) in Perfetto for every event and the flow arrows"
            "</summary><ol><li>In Chrome, Chromium, Firefox or Edge, go to "
            "<code>ui.perfetto.dev</code> (Perfetto's trace viewer; it runs in the browser "
            "page and does not upload the file).</li><li>Choose <i>Open trace file</i> in "
            f"the left menu (or drag the file onto the page) and pick <code>{esc(f)}</code>."
            "</li><li>Tracks: <i>CPU N</i> (what runs: threads, <code>irq ...</code> top "
            "halves, <code>softirq ...</code>; VCPU switches), <i>servers on CPU N</i> (one "
            "track per server, budget counters). Select a slice and follow its flow "
            "arrows: interrupt \u2192 bottom half \u2192 woken task. Keys: W/S zoom, A/D "
            "pan.</li></ol><p class='note'>Offline, <code>chrome://tracing</code> "
            f"(<i>Load</i>) reads <code>trace.json</code> too.{big}</p></details>")


def timeline_section(run: Run, index: int, window: tuple[int, int] | None) -> str:
    title = f"<h3>{esc(run.name)}: schedule of the whole run</h3>"
    sched = run.schedule
    if sched is None:
        return title + na("timeline", "no trace in the run directory (simulate with "
                           "--trace, or --report)") + _perfetto(run)
    m = run.metrics
    meta, blob = timeline.encode(sched)
    cfg_srv = {s["name"]: s for s in (run.config or {}).get("servers", [])}
    counters = {(c.cpu, c.server): c for c in sched.counters}
    # rows on demand for the busiest MAX_SERVER_ROWS servers (a canvas has a
    # size limit; the breakdown lists them all)
    busy = sorted(m["servers"], key=lambda s: -(s.get("busy_ns")
                                                or s.get("share_fraction", 0) or 0))
    rows = {s["name"] for s in busy[:MAX_SERVER_ROWS]}
    servers = []
    for s in m["servers"]:
        top, why = _budget_scale(s, cfg_srv.get(s["name"]),
                                 counters.get((s.get("cpu", 0), s["name"])))
        servers.append({"name": s["name"], "cpu": s.get("cpu", 0), "kind": s.get("kind"),
                        "color": palette.color_of(s["name"]), "budget_ns": top,
                        "no_budget": why, "row": s["name"] in rows})
    cut = (f" (the busiest {MAX_SERVER_ROWS} of {len(servers)})"
           if len(servers) > MAX_SERVER_ROWS else "")
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
        notes.append(f"Only [0, {us(span)}) of the {us(m['duration_ns'])} run is drawn: "
                     f"{why}; the first view is that part, and the rest is hatched "
                     "(not traced).")
    size = len(blob) + len(json.dumps(meta))
    notes.append(f"{sched.slices:,} slices, {size / 1e3:,.0f} kB of page.")
    return (title + f'<section class="timeline" id="timeline-{index}" '
            f'data-run="{esc(run.name)}" data-duration-ns="{m["duration_ns"]}" '
            f'data-slices="{sched.slices}" data-bytes="{size}">'
            "<div class='tl-bar'><button data-act='all'>whole run</button>"
            "<button data-act='out'>\u2212</button><button data-act='in'>+</button>"
            "<button data-act='left'>\u25c0</button><button data-act='right'>\u25b6</button>"
            f"<label><input type='checkbox' class='tl-servers'> servers and budgets{cut}"
            "</label>"
            "<label class='tl-link-label' style='display:none'><input type='checkbox' "
            "class='tl-link' checked> same view in every timeline</label>"
            "<span class='tl-range'></span><span class='tl-status'>drawing...</span></div>"
            "<div class='tl-wrap'><canvas tabindex='0'></canvas><div class='tl-tip'></div>"
            "<noscript>The timeline is drawn by the page's script: allow JavaScript for "
            "this file (it loads nothing).</noscript></div>"
            f"<script type='application/json' class='tl-meta'>{script_json(meta)}</script>"
            f"<script type='application/octet-stream' class='tl-blob'>{blob}</script>"
            "</section>" + _legend(sched, [t["name"] for t in m["tasks"]])
            + "<p class='note'>Wheel: zoom around the pointer; drag: pan; double-click: the "
            "whole run; keys + - \u2190 \u2192 0. Slices narrower than a pixel add up to a "
            "bar in their pixel column, stacked by who ran (its height: the column's busy "
            "share, at least a quarter of the track); a tick on a CPU track's top edge "
            "marks each top half, even one that took no time. Grey: idle. "
            f"{' '.join(esc(n) for n in notes)}</p>" + _perfetto(run))


def script_json(x: Any) -> str:
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


def breakdown_section(runs: Sequence[Run]) -> str:
    out = ["<h2>Where each CPU's time went</h2><p>Per CPU: the top halves, softirq, "
           "each server (with its threads below it) and idle add up to the run's duration. "
           "Totals are the metrics' (<code>isr_ns</code>, <code>softirq_ns</code>, "
           "<code>idle_ns</code>, each server's <code>busy_ns + background_ns</code>); the "
           "split by device and by thread is summed from the trace.</p>"]
    for r in runs:
        rows_by_cpu = breakdown(r)
        if not rows_by_cpu:
            out.append(na(f"{r.name}: CPU time breakdown", "the run directory has neither "
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
                    f'data-kind="{esc(row["kind"])}" data-ns="{row["ns"]}">'
                    f'<td><i class="swatch" style="background:{swatch}"></i>{esc(what)}</td>'
                    f"<td>{esc(row['kind'])}</td>"
                    + cell(row["ns"], f"{r.name}.cpu{cpu}.{i}.ns", us(row["ns"]))
                    + f"<td>{pct:.2f} %{src}</td></tr>")
            tot = sum(row["ns"] for row in rows if row["part"] == "top")
            body.append('<tr class="total"><td>total</td><td></td>'
                        + cell(tot, f"{r.name}.cpu{cpu}.total_ns", us(tot))
                        + f"<td>{100 * tot / dur if dur else 0:.2f} %</td></tr>")
            notes = []
            if tot != dur:
                notes.append(f"The rows add up to {us(tot)}, not the run's {us(dur)}: "
                             "the metrics do not account for every nanosecond of this run.")
            if c.get("switch_ns"):
                notes.append(f"Of the servers' time, {us(c['switch_ns'])} is VCPU switch "
                             "overhead (charged to the incoming VCPU).")
            if r.metrics.get("path") == "linux":
                notes.append("On the linux path a bottom half runs in softirq context at IRQ "
                             "exit (the softirq row, charged to no thread); ksoftirqd/N runs "
                             "only the work deferred to it (softirq's restart and 2 ms "
                             "limits).")
            sched = r.schedule
            span, why = r.traced()
            if sched is not None and why:
                notes.append(f"The split by device and thread (trace) covers [0, {us(span)}) "
                             f"only: {why}. The totals are the whole run's.")
            elif sched is None:
                notes.append("No trace: no split by thread or device.")
            out.append(f"<h3>{esc(r.name)}: CPU {cpu}</h3><table class='breakdown' "
                       f"data-run='{esc(r.name)}' data-cpu='{cpu}' data-duration-ns='{dur}'>"
                       "<tr><th>what</th><th>kind</th><th>time</th><th>of the run</th></tr>"
                       f"{''.join(body)}</table>"
                       + "".join(f"<p class='note'>{esc(n)}</p>" for n in notes))
    return "".join(out)
