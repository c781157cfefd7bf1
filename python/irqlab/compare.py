"""Bound | simulation | real run of one system model, side by side
(``irqlab compare``; DESIGN §10; docs/runtime.md, "irqlab compare MODEL.yaml").

:func:`compare` analyzes the model (``irqlab.analysis.model_bounds``),
simulates it (``irqlab.sim.simulate``, the same duration and seed) and runs
it on real threads (``irqlab.runtime.run_model``), then lines the three up
per task (jobs, misses, response p50/p99/max), per device (read latency
p50/p99/max, throughput, drops) and per server (CPU share), and flags

* every simulated or real value above a bound the analysis calls safe (a
  real one naming the run's largest timer stall -- a release served late
  by the host -- when there was one), and every server whose real CPU share
  exceeds its budget (C/T, or U for PIBS) by more than the enforcement
  tolerance;
* every sim-vs-real difference beyond the tolerance stated in the output
  (:class:`Tolerance`; with a ``costs:`` section, the tighter one it justifies:
  :meth:`Tolerance.calibrated`).

The simulator uses whatever costs the model states (a ``costs:`` section
included, once the model has one); the real run pays this machine's own.

Design principles: the three sources are computed by their own modules and
never re-derived here; every flag names the row, the values and the rule
it broke; tolerances are data, printed with the table and kept in the JSON.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from irqlab.analysis import model_bounds
from irqlab.model import load
from irqlab.runtime import check_model, model_path, run_model
from irqlab.sim import simulate, write_outputs


@dataclass(frozen=True)
class Tolerance:
    """How far the real run may be from the simulation before it is flagged.

    * ``rel`` + ``abs_ns`` for response and latency medians: the real value
      may differ by ``rel`` of the simulated one plus ``abs_ns``. The
      absolute part covers what the model does not hold: a thread's wake-up
      on this host (timer and futex wake-up, the supervisor's dispatch: a
      release delay of 50-150 us at p50 was measured here under load) and
      the runtime's own top half, which an uncalibrated model leaves out
      (the model's ``top_half`` itself is spent by the real run);
    * ``miss_ratio``: misses over released jobs may differ by this much
      (0 vs 0 agrees; a starved task misses "most" in both);
    * ``share``: a server's CPU share may differ by this much (absolute);
    * ``throughput_rel``: a device's throughput, relative;
    * ``enforcement``: a server's real share may exceed its budget
      fraction by this much before it is flagged (the supervisor's overrun,
      2-5 us per exhaustion, DESIGN §7, is far below it).
    """

    rel: float = 0.25
    abs_ns: int = 250_000
    miss_ratio: float = 0.10
    share: float = 0.03
    throughput_rel: float = 0.25
    enforcement: float = 0.01
    #: Where ``rel`` and ``abs_ns`` come from (printed with the table).
    derivation: str = "host wake-up and real top half"

    @classmethod
    def calibrated(cls, costs: dict[str, Any]) -> Tolerance:
        """The tolerance a model with measured ``costs:`` justifies.

        The simulation then charges every mechanism the real run pays --
        timer wake-ups, dispatch, context and priority switches, top
        halves -- at the costs' statistic (``use``, the mean by default).
        What is left at the median is (a) the tails of the two wake-ups a
        job's response contains, which the charged statistic does not hold:
        its release timer and one dispatch of a woken thread, each up to
        its measured p99 (``timer_wakeup``; ``runtime_dispatch``, else
        ``thread_wakeup``) -> ``abs_ns``; and (b) the job's phase against
        its server's budget periods, fixed by the simulation's seed and
        drawn by the real run: ``rel`` = 5 %, three times the run-to-run
        spread of the control task's real p50 measured here (2.195 to
        2.228 ms over three 2 s runs, 1.5 %; docs/runtime.md)."""
        from irqlab.calibrate import stat_ns

        timer = stat_ns(costs.get("timer_wakeup"), "p99")
        disp = stat_ns(costs.get("runtime_dispatch") or costs.get("thread_wakeup"), "p99")
        return cls(rel=0.05, abs_ns=timer + disp,
                   derivation=f"calibrated: the measured p99 of the release timer "
                              f"({timer / 1e3:.0f} us) + of one dispatch ({disp / 1e3:.0f} us); "
                              "5% for the budget phase")

    def describe(self) -> str:
        """The tolerances as one sentence (percentages, microseconds)."""
        return (f"tolerance: response/latency p50 within {self.rel:.0%} of the simulation + "
                f"{self.abs_ns / 1000:.0f} us ({self.derivation}); misses within "
                f"{self.miss_ratio:.0%} of released jobs; CPU share within "
                f"{self.share:.0%} (absolute); throughput within {self.throughput_rel:.0%}; "
                f"a server's real share may exceed its budget by {self.enforcement:.0%}")


@dataclass
class Row:
    """One line of the comparison: ``kind`` (task, device, server), the
    item, the metric, and the three values (``None``: not available)."""

    kind: str
    name: str
    metric: str
    unit: str
    bound: float | None
    sim: float | None
    real: float | None
    flags: list[str] = field(default_factory=list)


@dataclass
class Comparison:
    model: str
    path: str
    duration_ns: int
    seed: int
    tolerance: Tolerance
    rows: list[Row]
    real: dict[str, Any]
    sim_dir: Path | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def flags(self) -> list[str]:
        """Every flag as ``"<kind> <name> <metric>: <why>"``."""
        return [f"{r.kind} {r.name} {r.metric}: {f}" for r in self.rows for f in r.flags]

    def to_json(self) -> dict[str, Any]:
        """The comparison as the ``compare.json`` dict (times in integer
        ns, as in metrics.json)."""
        return {
            "model": self.model, "path": self.path, "duration_ns": self.duration_ns,
            "seed": self.seed, "tolerance": asdict(self.tolerance),
            "tolerance_text": self.tolerance.describe(),
            "rows": [asdict(r) for r in self.rows], "flags": self.flags, "notes": self.notes,
            "stalls": {"max_release_delay_ns": self.real.get("max_release_delay_ns"),
                       "max_supervisor_timer_ns": self.real.get("max_supervisor_timer_ns")},
            "real_mode": self.real.get("mode"), "real_cpus": self.real.get("cpus"),
            "warnings": self.real.get("warnings", []),
        }

    def table(self, rows: list[Row] | None = None) -> str:
        """The side-by-side table as text (of ``rows``, default all)."""
        def fmt(v: float | None, unit: str) -> str:
            if v is None:
                return "-"
            if unit == "ns":
                return f"{v / 1e6:.3f}ms" if v >= 1e6 else f"{v / 1e3:.1f}us"
            if unit == "fraction":
                return f"{100 * v:.2f}%"
            if unit == "B/s":
                return f"{v:,.0f}"
            return f"{v:.0f}"
        lines = [f"{'':8}{'name':<12}{'metric':<16}{'bound':>11}{'simulation':>12}{'real':>12}"
                 "  flags"]
        for r in self.rows if rows is None else rows:
            lines.append(f"{r.kind:<8}{r.name:<12}{r.metric:<16}{fmt(r.bound, r.unit):>11}"
                         f"{fmt(r.sim, r.unit):>12}{fmt(r.real, r.unit):>12}  "
                         + "; ".join(r.flags))
        return "\n".join(lines)


def _ratio(n: float | None, d: float | None) -> float | None:
    return None if n is None or not d else n / d


def _by_name(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in rows}


def _stall_note(real: dict[str, Any]) -> str:
    d = real.get("max_release_delay_ns") or 0
    s = real.get("max_supervisor_timer_ns") or 0
    worst = max(d, s)
    if worst >= 1_000_000:
        return (f" (host timer stall: a release served {d / 1e6:.2f} ms late, the supervisor's "
                f"timer {s / 1e6:.2f} ms late)")
    return " (no host stall above 1 ms recorded)"


def _check_gap(r: Row, tol: Tolerance) -> None:
    if r.sim is None or r.real is None:
        return
    if r.unit == "ns" and r.metric.endswith("p50"):
        limit = tol.rel * r.sim + tol.abs_ns
        if abs(r.real - r.sim) > limit:
            r.flags.append(f"sim-vs-real gap {abs(r.real - r.sim) / 1e3:.0f} us > "
                           f"{limit / 1e3:.0f} us")
    elif r.metric == "miss ratio" and abs(r.real - r.sim) > tol.miss_ratio:
        r.flags.append(f"sim-vs-real gap {abs(r.real - r.sim):.0%} > {tol.miss_ratio:.0%} of jobs")
    elif r.metric == "share" and abs(r.real - r.sim) > tol.share:
        r.flags.append(f"sim-vs-real gap {abs(r.real - r.sim):.1%} > {tol.share:.0%}")
    elif (r.metric == "throughput" and r.sim > 0
          and abs(r.real - r.sim) > tol.throughput_rel * r.sim):
        r.flags.append(f"sim-vs-real gap > {tol.throughput_rel:.0%}")


def _server_bound(s: dict[str, Any] | None) -> float | None:
    """A server's CPU share bound: C/T, or U for PIBS; None without one."""
    if s is None:
        return None
    if s.get("budget") and s.get("period"):
        return s["budget"] / s["period"]
    note = s.get("note") or ""
    if s.get("policy") == "pibs" and "U = " in note:
        num, _, den = note.split("U = ", 1)[1].partition("/")
        try:
            return int(num) / int(den)
        except ValueError:
            return None
    return None


def rows_of(bounds: dict[str, Any], sim: dict[str, Any], real: dict[str, Any],
            tol: Tolerance) -> list[Row]:
    """The comparison rows of one model: bounds (``model_bounds``), the
    simulator's metrics and the real run's result; flags set."""
    tb = {t["name"]: t for t in bounds.get("tasks", [])}
    sb = {s["name"]: s for c in bounds.get("cpus", []) for s in c.get("servers", [])}
    st, rt = _by_name(sim["tasks"]), _by_name(real["tasks"])
    rows: list[Row] = []
    stall = _stall_note(real)
    for name, r in rt.items():
        s = st.get(name, {})
        b = tb.get(name, {})
        bound = b.get("response") if b.get("schedulable") else None
        rows.append(Row("task", name, "released", "count", None, s.get("released"),
                        r["released"]))
        rows.append(Row("task", name, "misses", "count", 0 if bound is not None else None,
                        s.get("deadline_misses"), r["deadline_misses"]))
        rows.append(Row("task", name, "miss ratio", "fraction", None,
                        _ratio(s.get("deadline_misses"), s.get("released")),
                        _ratio(r["deadline_misses"], r["released"])))
        for q in ("p50", "p99", "max"):
            rows.append(Row("task", name, f"response {q}", "ns",
                            bound, (s.get("response") or {}).get(f"{q}_ns"),
                            r["response"].get(f"{q}_ns")))
        if bound is not None:
            for row in rows[-5:]:
                if row.metric == "misses":
                    if row.sim:
                        row.flags.append(f"simulation misses a deadline the analysis calls "
                                         f"safe ({row.sim:.0f})")
                    if row.real:
                        row.flags.append(f"real run misses a deadline the analysis calls safe "
                                         f"({row.real:.0f}){stall}")
                if row.metric.startswith("response") and row.bound is not None:
                    if row.sim is not None and row.sim > row.bound:
                        row.flags.append("simulation above the safe bound")
                    if row.real is not None and row.real > row.bound:
                        row.flags.append(f"real above the safe bound{stall}")
    sd, rd = _by_name(sim["devices"]), _by_name(real["devices"])
    for name, r in rd.items():
        s = sd.get(name, {})
        for q in ("p50", "p99", "max"):
            rows.append(Row("device", name, f"latency {q}", "ns", None,
                            (s.get("latency") or {}).get(f"{q}_ns"), r["latency"].get(f"{q}_ns")))
        rows.append(Row("device", name, "throughput", "B/s", None,
                        s.get("throughput_bytes_per_s"), r["throughput_bytes_per_s"]))
        rows.append(Row("device", name, "drops", "count", None, s.get("dropped"), r["dropped"]))
    ss, rs = _by_name(sim["servers"]), _by_name(real["servers"])
    for name, r in rs.items():
        s = ss.get(name, {})
        bound = _server_bound(sb.get(name))
        row = Row("server", name, "share", "fraction", bound, s.get("share_fraction"),
                  r["share_fraction"])
        if bound is not None and row.real is not None and row.real > bound + tol.enforcement:
            row.flags.append(f"real share above the budget {bound:.2%} + {tol.enforcement:.0%}")
        rows.append(row)
    # A row with nothing to show (a once-released task that never finished
    # in either run) is left out.
    rows = [r for r in rows if not (r.bound is None and r.sim is None and r.real is None)]
    for row in rows:
        _check_gap(row, tol)
    return rows


def real_metrics(real: dict[str, Any]) -> dict[str, Any]:
    """The real run in the shape of the simulator's ``metrics.json`` (what
    ``irqlab report`` reads); what a real run does not measure is absent."""
    def dist(d: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in d.items()}
    return {
        "path": real["path"], "duration_ns": real["duration_ns"], "seed": real["seed"],
        "window_ns": real["duration_ns"], "events": 0,
        "cpus": [{} for _ in real["cpus"]], "virqs": [],
        "tasks": [{"name": t["name"], "released": t["released"], "completed": t["completed"],
                   "deadline_misses": t["deadline_misses"], "aborted": 0,
                   "unfinished_past_deadline": t["unfinished_past_deadline"],
                   "response": dist(t["response"]), "completions_ns": []}
                  for t in real["tasks"]],
        "devices": [{"name": d["name"], "interrupts": d["sent"], "handled": d["handled"],
                     "dropped": d["dropped"], "bytes": d["bytes"],
                     "latency": dist(d["latency"]),
                     "throughput_bytes_per_s": d["throughput_bytes_per_s"],
                     "throughput_windows_bytes_per_s": [d["throughput_bytes_per_s"]]}
                    for d in real["devices"]],
        "servers": [_share_metrics(s["name"], s["cpu"], s["kind"], s["share_fraction"])
                    for s in real["servers"]],
    }


def _share_metrics(name: str, cpu: int, kind: str, share: float) -> dict[str, Any]:
    """A real server's CPU share as the simulator's ``ServerMetrics`` (one
    window: the whole run)."""
    return {"name": name, "cpu": cpu, "kind": kind, "share_fraction": share,
            "share_windows_fraction": [share]}


#: What ``irqlab vmm --out`` leaves out of ``metrics.json`` because the VMM
#: does not measure it, per ``$defs`` entry of the metrics schema (``""``:
#: the top level): ``seed`` (the VMM's UDP senders draw their jitter from a
#: fixed seed of their own, not ``simulation.seed``), the simulator's event
#: count and per-CPU accounting, a device's bytes, throughput and request
#: latency, a virtual interrupt's delayed injections (the VMM counts those
#: held at the stop, not those delayed), serviceable flows and
#: handled-within curve, a task's misses and completion times, a server's
#: busy and queue figures. Distributions are whole, histograms included.
VMM_LEFT_OUT: dict[str, tuple[str, ...]] = {
    "": ("seed", "events"),
    "CpuMetrics": ("schedule_calls", "lost_interrupts", "wakeups", "server_switches",
                   "replenishment_ops", "isr_ns", "softirq_ns", "idle_ns", "vcpu_switches",
                   "switch_ns", "overhead_percent", "overhead_windows_percent"),
    "DeviceMetrics": ("bytes", "throughput_bytes_per_s", "throughput_windows_bytes_per_s",
                      "latency"),
    "VirqMetrics": ("delayed_injections", "serviceable", "handled_within"),
    "TaskMetrics": ("deadline_misses", "unfinished_past_deadline", "aborted", "completions_ns"),
    "ServerMetrics": ("busy_ns", "background_ns", "max_queue", "mean_queue"),
}


def vmm_metrics_schema() -> dict[str, Any]:
    """The metrics schema with :data:`VMM_LEFT_OUT` no longer required:
    what ``irqlab vmm --out`` writes validates against it."""
    from irqlab.schemas import metrics_schema

    s = metrics_schema()
    for name, fields in VMM_LEFT_OUT.items():
        d = s["$defs"][name] if name else s
        d["required"] = [f for f in d["required"] if f not in fields]
    return s


def vmm_metrics(report: dict[str, Any], cfg: dict[str, Any]) -> dict[str, Any]:
    """The real VMM's report (``irqlab-vmm model``) in the shape of the
    simulator's ``metrics.json`` for the model whose simulator
    configuration is ``cfg`` (its servers named as the simulator names
    them: the VCPU by the model, a pseudo-VCPU ``VIRQ.pseudo``).

    Per physical interrupt (``devices``) and virtual interrupt (``virqs``):
    the events the top half received, those the guest's DSR completed,
    those dropped, and the handling time (host event -> end of the guest
    DSR, VINT Def. 2); per guest task its jobs, completions and response
    time; per server its CPU share. What the VMM does not measure is left
    out (:data:`VMM_LEFT_OUT`)."""
    def dist(d: dict[str, Any]) -> dict[str, Any]:
        out = {"count": d["count"], **{f"{k}_ns": d[k] for k in
                                      ("min", "mean", "p50", "p99", "max", "std_dev")}}
        # irqlab-rt's histogram: the same [lo_ns, hi_ns, count] bins, empty ones
        # left out (and the whole list when there is no sample).
        if d["count"] and "histogram" not in d:
            raise ValueError("VMM report: a distribution without its histogram (an "
                             "irqlab-vmm binary older than this irqlab? see $IRQLAB_VMM)")
        out["histogram_ns"] = d.get("histogram", [])
        return out

    dur = round(report["seconds"] * 1e9)
    srv = cfg["servers"]
    virq = {v["name"]: v for v in cfg["virqs"]}

    def server(s: dict[str, Any]) -> dict[str, Any]:
        name = s["name"]
        if name.startswith("pseudo-") and name[7:] in virq:
            v = virq[name[7:]]
            name, cpu = f"{v['name']}.pseudo", srv[v["vcpu"]]["cpu"]
        elif name.startswith("vcpu") and name[4:].isdigit() and int(name[4:]) < len(srv):
            name, cpu = srv[int(name[4:])]["name"], srv[int(name[4:])]["cpu"]
        else:
            raise ValueError(f"VMM report: server {name!r} is not in the model")
        return _share_metrics(name, cpu, s["kind"], s["share"])

    devs = report["devices"]
    return {
        "path": "hypervisor", "duration_ns": dur, "window_ns": dur,
        "cpus": [{} for _ in range(cfg["cpus"])],
        "devices": [{"name": src["physical"], "interrupts": d["received"],
                     "handled": d["completed"], "dropped": d["dropped"],
                     "handling": dist(d["to_dsr_end"])}
                    for src in report["sources"] for d in [devs[src["device"]]]],
        "virqs": [{"name": d["name"], "arrivals": d["received"], "injected": d["injected"],
                   "handled": d["completed"], "handling": dist(d["to_dsr_end"])}
                  for d in devs],
        "tasks": [{"name": t["name"], "released": t["releases"], "completed": t["completed"],
                   "response": dist(t["response"])} for t in report["tasks"]],
        "servers": [server(s) for s in report["servers"] or []],
    }


def compare(model: str | Path, *, duration_ns: int | None = None, seed: int | None = None,
            out: Path | None = None, tolerance: Tolerance | None = None) -> Comparison:
    """Analyze, simulate and run ``model`` (a file, or a shipped model by
    name); with ``out``, write ``compare.json``, the simulation's and the
    real run's directories (``sim/``, ``real/``) and one CDF plot per task."""
    path = model_path(model)
    check_model(path)  # what cannot run for real is refused before any work
    loaded = load(path)
    if tolerance is None:
        try:
            from irqlab.calibrate import load_costs

            tolerance = Tolerance.calibrated(load_costs(path))
        except KeyError:  # no costs: section: the uncalibrated tolerance
            tolerance = Tolerance()
    tol = tolerance
    dur = duration_ns if duration_ns is not None else loaded.sim_config["duration"]
    sd = seed if seed is not None else loaded.sim_config.get("seed", 0)
    bounds = model_bounds(loaded.sim_config)
    sim = simulate(loaded, seed=sd, duration_ns=dur)
    real = run_model(path, duration_ns=dur, seed=sd)
    rows = rows_of(bounds, sim.metrics, real, tol)
    c = Comparison(path.name, real["path"], dur, sd, tol, rows, real, notes=real["notes"])
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        c.sim_dir = out / "simulation"
        write_outputs(sim, c.sim_dir, title=f"{path.name}: simulation")
        rdir = out / "real"
        rdir.mkdir(parents=True, exist_ok=True)
        (rdir / "run.json").write_text(json.dumps(real, indent=1))
        (rdir / "metrics.json").write_text(json.dumps(real_metrics(real), indent=1))
        (rdir / "config.json").write_text(json.dumps(loaded.sim_config, indent=1))
        (out / "compare.json").write_text(json.dumps(c.to_json(), indent=1))
        plot_cdfs(c, sim.metrics, out, {t["name"]: t.get("response") for t in
                                        bounds.get("tasks", []) if t.get("schedulable")},
                  loaded.sim_config)
    return c


def plot_cdfs(c: Comparison, sim: dict[str, Any], out: Path, bounds: dict[str, int | None],
              cfg: dict[str, Any]) -> list[Path]:
    """One PNG per task with jobs: the simulated (histogram) and real
    (samples) response-time CDFs, the deadline and the bound."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from irqlab.report import deadline_ns

    paths = []
    st = _by_name(sim["tasks"])
    for t in c.real["tasks"]:
        samples = t.get("response_samples_ns") or []
        hist = (st.get(t["name"], {}).get("response") or {}).get("histogram_ns") or []
        if t["period_ns"] is None and not samples and not hist:
            continue  # a task released once that never finished: nothing to draw
        fig, ax = plt.subplots(figsize=(6, 3.5))
        if not samples and not hist:
            ax.text(0.5, 0.5, f"no job finished ({t['deadline_misses']} of {t['released']} "
                    "missed in the real run)", ha="center", transform=ax.transAxes)
        if hist:
            xs = [h[1] / 1e3 for h in hist]
            ys = np.cumsum([h[2] for h in hist]) / max(sum(h[2] for h in hist), 1)
            ax.step(xs, ys, where="post", label="simulation")
        if samples:
            xs = np.sort(np.asarray(samples)) / 1e3
            ax.step(xs, np.arange(1, len(xs) + 1) / len(xs), where="post", label="real run")
        dl = deadline_ns(cfg, t["name"])
        if dl:
            ax.axvline(dl / 1e3, color="red", ls="--", label="deadline")
        b = bounds.get(t["name"])
        if b:
            ax.axvline(b / 1e3, color="black", ls=":", label="bound")
        ax.set_xlabel("response time (us)")
        ax.set_ylabel("fraction of jobs")
        ax.set_title(f"{c.model}: task {t['name']}")
        ax.legend(loc="lower right")
        p = out / f"cdf-{t['name']}.png"
        fig.tight_layout()
        fig.savefig(p)
        plt.close(fig)
        paths.append(p)
    return paths
