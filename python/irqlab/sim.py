"""Run the simulator from Python (``irqlab._native.sim``; walkthrough:
docs/python.md; every metric: docs/metrics.md).

``simulate(config)`` takes a :class:`irqlab.model.LoadedModel` or its
resolved configuration (a dict in the shape of ``irqlab_sim::SimConfig``:
servers, tasks, classes, devices, times in integer ns) and returns a
:class:`SimResult`: the metrics (``metrics.json``) and the Perfetto trace
as dicts, plus tables per task, server, device, CPU, virtual interrupt and
job with ``.to_pandas()``. Errors raise ``ValueError`` naming the field
path, the value and the rule.

Design principles: the dicts stay the source of truth (byte-identical
``metrics.json`` for a model and seed); tables are flat views with the
unit in every column name (``response_max_ns``); pandas is optional and
only imported by ``to_pandas()``; plots cost a bounded time whatever the
model's size (top-N and an "others" bar, stated in the title).
"""

from __future__ import annotations

import gc
import json
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from irqlab._native import sim as _sim

if TYPE_CHECKING:
    import pandas

    from irqlab.model import LoadedModel

#: Bars drawn per plot at most; the rest is aggregated into one bar.
PLOT_TOP_N = 20


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:
        raise ImportError("to_pandas() needs pandas: pip install pandas (the dicts and "
                          "to_records() work without it)") from None
    return pandas


def flatten(row: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """One flat dict per row: nested dicts (distributions) become
    ``outer_inner`` columns; lists (per-window series, histograms,
    completion times) are left out (see :meth:`SimResult.windows`,
    :meth:`SimResult.jobs`)."""
    out: dict[str, Any] = {}
    for k, v in row.items():
        if isinstance(v, Mapping):
            out |= flatten(v, f"{prefix}{k}_")
        elif not isinstance(v, list):
            out[f"{prefix}{k}"] = v
    return out


class Table:
    """Rows of one kind (the dicts of ``metrics.json``), addressable by name
    or position; ``to_records()`` flattens them, ``to_pandas()`` makes a
    DataFrame (indexed by ``name`` when the rows have one)."""

    def __init__(self, kind: str, rows: list[dict[str, Any]]) -> None:
        self.kind = kind
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.rows)

    def __getitem__(self, key: str | int) -> dict[str, Any]:
        if isinstance(key, int):
            return self.rows[key]
        for row in self.rows:
            if row.get("name") == key:
                return row
        names = ", ".join(str(r.get("name")) for r in self.rows[:20])
        raise KeyError(f"no {key!r} among the {self.kind} ({names})")

    def __repr__(self) -> str:
        return f"<{len(self.rows)} {self.kind}>"

    def names(self) -> list[str]:
        """The rows' ``name`` fields, in order."""
        return [r["name"] for r in self.rows if "name" in r]

    def to_records(self) -> list[dict[str, Any]]:
        """One flat dict per row (:func:`flatten`): nested distributions
        become ``response_max_ns``-style columns, units as in
        docs/metrics.md (integer ns, bytes per second, fractions)."""
        return [flatten(r) for r in self.rows]

    def to_pandas(self) -> pandas.DataFrame:
        """:meth:`to_records` as a DataFrame indexed by ``name`` (columns
        keep their unit suffix: ``_ns``, ``_bytes_per_s``, ``_fraction``);
        ImportError naming the fix when pandas is not installed."""
        df = _pandas().DataFrame.from_records(self.to_records())
        return df.set_index("name") if "name" in df.columns else df


class SimResult:
    """One simulation run: ``metrics`` (the ``metrics.json`` dict),
    ``trace`` (Perfetto trace-event dict; empty unless tracing was on) and
    ``config`` (the configuration that ran, every default filled in).

    The simulator keeps the metrics and the configuration as Rust values
    until they are first read: then they become Python objects (the same
    objects ``json.loads`` gives for their JSON text), kept here, and the
    Rust values are freed. A run
    whose metrics or configuration are never read does not pay for them
    (issue 20)."""

    def __init__(self, metrics: dict[str, Any] | None = None,
                 trace: dict[str, Any] | None = None, *,
                 config: dict[str, Any] | None = None, trace_file: Path | None = None,
                 records: dict[str, dict[str, Any]] | None = None,
                 outcome: Any = None) -> None:
        if metrics is None and outcome is None:
            raise TypeError("SimResult needs the metrics (or the simulator's outcome)")
        self._metrics = metrics
        self._config = config
        self._outcome = outcome
        self.trace: dict[str, Any] = trace or {}
        #: Where the trace was streamed (``simulate(trace_file=...)``); the
        #: ``trace`` dict is then empty.
        self.trace_file = trace_file
        #: Per-job and per-request columns (``records`` in the configuration):
        #: ``{"jobs": {...}, "requests": {...}}`` of NumPy arrays.
        self.records: dict[str, dict[str, Any]] = records or {}

    def __repr__(self) -> str:
        if self._metrics is None:  # not built just to be shown
            return "<SimResult>"
        return f"<SimResult of {self._metrics.get('duration_ns')} ns>"

    @property
    def metrics(self) -> dict[str, Any]:
        """The ``metrics.json`` dict (built from the simulator's values on
        first use)."""
        if self._metrics is None:
            # thousands of new dicts and lists at once: the cyclic GC would
            # scan them again and again while they are built
            gc_was_on = gc.isenabled()
            gc.disable()
            try:
                self._metrics = self._outcome.take_metrics()
            finally:
                if gc_was_on:
                    gc.enable()
        return self._metrics

    @property
    def config(self) -> dict[str, Any] | None:
        """The configuration that ran (every default filled in), or None."""
        if self._config is None and self._outcome is not None:
            self._config = self._outcome.take_config()
        return self._config

    @property
    def partial(self) -> bool:
        """True when the run stopped before its configured duration."""
        return bool(self.metrics.get("partial", False))

    @property
    def tasks(self) -> Table:
        """The ``metrics.json`` rows per task: released, completed,
        deadline misses, the response distribution in ns."""
        return Table("tasks", self.metrics["tasks"])

    @property
    def servers(self) -> Table:
        """The ``metrics.json`` rows per server (VCPU, I/O VCPU, thread):
        busy time in ns, share as a fraction."""
        return Table("servers", self.metrics["servers"])

    @property
    def devices(self) -> Table:
        """The ``metrics.json`` rows per device: handled and dropped
        counts, bytes per second, latency in ns."""
        return Table("devices", self.metrics["devices"])

    @property
    def virqs(self) -> Table:
        """The ``metrics.json`` rows per virtual interrupt (hypervisor
        path): counts, handling time in ns."""
        return Table("virtual interrupts", self.metrics["virqs"])

    @property
    def cpus(self) -> Table:
        """The rows per CPU (``cpu`` index added): ISR, softirq and idle
        time in ns, overhead in percent, event counts."""
        return Table("cpus", [{"cpu": i, **c} for i, c in enumerate(self.metrics["cpus"])])

    def task(self, name: str) -> dict[str, Any]:
        """The ``metrics.json`` row of task ``name`` (times in ns);
        KeyError listing the names when there is none."""
        return self.tasks[name]

    def server(self, name: str) -> dict[str, Any]:
        """The ``metrics.json`` row of server ``name`` (times in ns);
        KeyError listing the names when there is none."""
        return self.servers[name]

    def device(self, name: str) -> dict[str, Any]:
        """The ``metrics.json`` row of device ``name`` (times in ns);
        KeyError listing the names when there is none."""
        return self.devices[name]

    def jobs(self) -> Table:
        """One row per recorded job completion: ``task``, ``job`` (0-based)
        and ``completion_ns`` (the first 10,000 jobs of each task)."""
        rows = [{"task": t["name"], "job": j, "completion_ns": c}
                for t in self.metrics["tasks"] for j, c in enumerate(t["completions_ns"])]
        return Table("jobs", rows)

    def job_records(self) -> dict[str, Any]:
        """Every finished job (``records={"jobs": True}``; never capped), as
        NumPy columns: ``task`` (index), ``task_name``, ``release_ns``,
        ``completion_ns``, ``response_ns`` and ``late`` (bool). Empty
        columns when the jobs were not recorded."""
        import numpy as np

        j = self.records.get("jobs", {})
        names = np.array([t["name"] for t in self.metrics["tasks"]] or [""], dtype=object)
        task = j.get("task", np.zeros(0, np.uint32))
        rel = j.get("release_ns", np.zeros(0, np.uint64))
        done = j.get("completion_ns", np.zeros(0, np.uint64))
        return {"task": task, "task_name": names[task], "release_ns": rel,
                "completion_ns": done, "response_ns": done - rel,
                "late": j.get("late", np.zeros(0, np.uint8)).astype(bool)}

    def request_records(self) -> dict[str, Any]:
        """Every finished I/O request (``records={"requests": True}``), as
        NumPy columns: ``device`` (index), ``device_name``, ``start_ns``
        (submission or arrival), ``end_ns`` (return to the task) and
        ``latency_ns``."""
        import numpy as np

        r = self.records.get("requests", {})
        names = np.array([d["name"] for d in self.metrics["devices"]] or [""], dtype=object)
        dev = r.get("device", np.zeros(0, np.uint32))
        start = r.get("start_ns", np.zeros(0, np.uint64))
        end = r.get("end_ns", np.zeros(0, np.uint64))
        return {"device": dev, "device_name": names[dev], "start_ns": start, "end_ns": end,
                "latency_ns": end - start}

    def windows(self) -> Table:
        """Per-window series in long form: one row per (``kind``, ``name``,
        ``window``) with ``start_ns`` and the value columns
        ``share_fraction`` (servers), ``throughput_bytes_per_s`` (devices)
        or ``overhead_percent`` (CPUs)."""
        w = self.metrics["window_ns"]
        rows: list[dict[str, Any]] = []
        series = [("server", s["name"], "share_fraction", s["share_windows_fraction"])
                  for s in self.metrics["servers"]]
        series += [("device", d["name"], "throughput_bytes_per_s",
                    d["throughput_windows_bytes_per_s"]) for d in self.metrics["devices"]]
        series += [("cpu", f"cpu {i}", "overhead_percent", c["overhead_windows_percent"])
                   for i, c in enumerate(self.metrics["cpus"])]
        for kind, name, col, values in series:
            rows += [{"kind": kind, "name": name, "window": i, "start_ns": i * w, col: v}
                     for i, v in enumerate(values)]
        return Table("windows", rows)

    def to_pandas(self, kind: str = "tasks") -> pandas.DataFrame:
        """``self.<kind>.to_pandas()`` for kind in tasks, servers, devices,
        virqs, cpus, jobs, windows; ``job_records`` and ``request_records``
        give a DataFrame of those columns."""
        if kind in ("job_records", "request_records"):
            return _pandas().DataFrame(getattr(self, kind)())
        tables = {"tasks": lambda: self.tasks, "servers": lambda: self.servers,
                  "devices": lambda: self.devices, "virqs": lambda: self.virqs,
                  "cpus": lambda: self.cpus, "jobs": self.jobs, "windows": self.windows}
        if kind not in tables:
            raise ValueError(f"kind: {kind!r} is not one of {', '.join(tables)}, job_records, "
                         "request_records")
        return tables[kind]().to_pandas()

    def write(self, out_dir: Path | str, *, title: str = "irqlab simulation",
              plots: bool = True) -> list[Path]:
        """:func:`write_outputs` for this result."""
        return write_outputs(self, Path(out_dir), title=title, plots=plots)


def _config(config: LoadedModel | Mapping[str, Any]) -> dict[str, Any]:
    cfg = getattr(config, "sim_config", config)
    if not isinstance(cfg, Mapping):
        raise TypeError(f"simulate() takes a LoadedModel or its sim_config dict, not "
                        f"{type(config).__name__}")
    # a shallow copy: simulate() only replaces top-level keys, never edits
    # a nested value, so the caller's dict is not modified (a deep copy of
    # a large model cost more than the simulation)
    return dict(cfg)


class SimulationInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a simulation; ``result`` holds the metrics up to the
    time reached (``result.partial`` is True)."""

    def __init__(self, result: SimResult) -> None:
        super().__init__("simulation interrupted")
        self.result = result


class ProgressLine:
    """``progress(now_ns, duration_ns, events)`` printing one line on
    stderr: simulated time / duration (s), speed (simulated s per wall s),
    events processed per wall second, ETA (HH:MM:SS)."""

    def __init__(self) -> None:
        self.t0 = self.last = time.monotonic()
        self.shown = False

    def __call__(self, now_ns: int, duration_ns: int, events: int = 0) -> None:
        t = time.monotonic()
        if t - self.last < 0.2 and now_ns < duration_ns:
            return
        self.last = t
        wall = max(t - self.t0, 1e-9)
        speed = now_ns / 1e9 / wall
        left = (duration_ns - now_ns) / 1e9 / speed if speed > 0 else float("inf")
        eta = time.strftime("%H:%M:%S", time.gmtime(left)) if left < 1e7 else "?"
        print(f"\r  simulated {now_ns / 1e9:.3f} s of {duration_ns / 1e9:g} s "
              f"({100 * now_ns / duration_ns:.0f} %), {speed:.3g} s/s, "
              f"{events / wall:,.0f} events/s, ETA {eta}   ",
              end="", file=sys.stderr, flush=True)
        self.shown = True

    def close(self) -> None:
        """End the progress line (a newline) if one was drawn."""
        if self.shown:
            print(file=sys.stderr)


def simulate(config: LoadedModel | Mapping[str, Any], *, seed: int | None = None,
             duration_ns: int | None = None,
             trace: bool | Mapping[str, Any] | None = None,
             progress: bool | Callable[[int, int], None] = False,
             trace_file: Path | str | None = None, trace_format: str = "json",
             records: bool | Mapping[str, bool] | None = None,
             trace_max_events: int | None = None) -> SimResult:
    """Simulate ``config`` (a :class:`~irqlab.model.LoadedModel` or its
    ``sim_config``; not modified). ``seed`` and ``duration_ns`` (integer ns)
    override the configured ones; ``trace=True`` records a Perfetto trace
    (or a dict ``{"enabled": True, "until": ns, "max_events": n}``);
    ``progress=True`` prints simulated time, speed, events per second and
    ETA on stderr (or give a callable ``f(now_ns, duration_ns)``). ``trace_file`` streams the
    trace to that file instead of returning it as a dict (tracing on;
    ``trace_format`` "json" or "perfetto", Perfetto's protobuf format, for
    large traces). ``records=True`` (or ``{"jobs": True, "requests":
    True}``) keeps every job and I/O request, returned as NumPy columns
    (:meth:`SimResult.job_records`, :meth:`SimResult.request_records`).
    ``trace_max_events`` caps the trace, the rest of its settings kept. A
    :class:`~irqlab.model.LoadedModel` is run from its resolved system in
    Rust (no conversion), its ``sim_config`` if that was taken. The same
    configuration and seed give the same metrics bit for bit.
    Ctrl-C raises :class:`SimulationInterrupted` carrying the partial
    result."""
    for name, value in (("seed", seed), ("duration_ns", duration_ns)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                                  or value < 0):
            raise ValueError(f"{name}: {value!r} must be a non-negative integer")
    if trace_format not in ("json", "perfetto"):
        raise ValueError(f"trace_format: {trace_format!r} is not 'json' or 'perfetto'")
    # the run options, applied by the native run to the resolved system
    over: dict[str, Any] = {}
    if seed is not None:
        over["seed"] = seed
    if duration_ns is not None:
        over["duration"] = duration_ns
    if isinstance(trace, bool):  # shorthand: trace on/off
        over["trace"] = {"enabled": trace}
    elif trace is not None:
        over["trace"] = dict(trace)
    if trace_file is not None:
        over["trace_merge"] = {**over.get("trace_merge", {}), "enabled": True}
    if trace_max_events is not None:
        over["trace_merge"] = {**over.get("trace_merge", {}), "max_events": trace_max_events}
    if records is not None:
        over["records"] = ({"jobs": records, "requests": records}
                           if isinstance(records, bool) else dict(records))
    from irqlab.model import LoadedModel

    if isinstance(config, LoadedModel):
        cfg: Any = config.resolved()
    else:
        cfg = _config(config)
        if isinstance(cfg.get("trace"), bool):  # shorthand: trace on/off
            cfg["trace"] = {"enabled": cfg["trace"]}
    line = ProgressLine() if progress is True else None
    cb: Callable[[int, int, int], None] | None = line
    if line is None and callable(progress):
        user = progress

        def two_args(now_ns: int, duration_ns: int, _events: int) -> None:
            user(now_ns, duration_ns)

        cb = two_args
    try:
        path = None if trace_file is None else str(trace_file)
        outcome, tr, interrupted, cols = _sim.run(cfg, cb, path, trace_format, over or None)
    finally:
        if line:
            line.close()
    result = SimResult(trace=json.loads(tr) if tr else {}, outcome=outcome,
                       trace_file=None if trace_file is None else Path(trace_file),
                       records=_columns(cols))
    if interrupted:
        raise SimulationInterrupted(result)
    return result


def _columns(raw: Mapping[str, Mapping[str, bytes]]) -> dict[str, dict[str, Any]]:
    """The native byte columns as NumPy arrays (no copy); none (and no
    NumPy import) when no records were kept."""
    if not any(v for cols in raw.values() for v in cols.values()):
        return {}
    import numpy as np

    types = {"task": "<u4", "device": "<u4", "late": "u1"}
    return {table: {k: np.frombuffer(v, dtype=types.get(k, "<u8")) for k, v in cols.items()}
            for table, cols in raw.items()}


def top_n(values: Mapping[str, float], n: int = PLOT_TOP_N) -> tuple[dict[str, float], str]:
    """The ``n`` largest values, the rest summed into one ``others`` entry;
    returns them and a note for the plot's title ("" when nothing was cut)."""
    if len(values) <= n:
        return dict(values), ""
    ranked = sorted(values.items(), key=lambda kv: kv[1], reverse=True)
    rest = ranked[n:]
    out = dict(ranked[:n])
    out[f"others ({len(rest)})"] = sum(v for _, v in rest)
    return out, f" (top {n} of {len(values)})"


def write_outputs(result: SimResult, out_dir: Path, *, title: str = "irqlab simulation",
                  plots: bool = True) -> list[Path]:
    """Write ``metrics.json``, ``trace.json`` when tracing was on (open in
    ui.perfetto.dev), ``config.json`` (the configuration that ran; ``irqlab
    report`` reads it) and, unless ``plots`` is False, PNG plots (CPU share per server; I/O latency
    per device; at most ``PLOT_TOP_N`` bars each) into ``out_dir``; returns
    the paths. JSON is written with sorted keys so the same run gives
    byte-identical files."""
    out_dir.mkdir(parents=True, exist_ok=True)
    files = [out_dir / "metrics.json"]
    files[0].write_text(json.dumps(result.metrics, indent=1, sort_keys=True) + "\n")
    if result.trace_file is not None and result.trace_file.exists():
        files.append(result.trace_file)
    elif result.trace.get("traceEvents"):  # tracing was on
        files.append(out_dir / "trace.json")
        files[-1].write_text(json.dumps(result.trace, sort_keys=True) + "\n")
    if result.config is not None:
        files.append(out_dir / "config.json")
        files[-1].write_text(json.dumps(result.config, indent=1, sort_keys=True) + "\n")
    if not plots:
        return files
    from irqlab import plots as p

    m = result.metrics
    shares, note = top_n({s["name"]: 100.0 * s["share_fraction"] for s in m["servers"]})
    if shares:
        files.append(p.bars(out_dir / "cpu_share.png", {k: {"CPU share %": v}
                                                       for k, v in shares.items()},
                            title=f"{title}: CPU share{note}", ylabel="% CPU"))
    devs = {d["name"]: d["latency"] for d in m["devices"] if d["latency"]["count"]}
    worst, note = top_n({k: v["max_ns"] for k, v in devs.items()})
    lat = {k: {"mean": devs[k]["mean_ns"] / 1e3, "max": devs[k]["max_ns"] / 1e3}
           for k in worst if k in devs}
    if lat:
        files.append(p.bars(out_dir / "io_latency.png", lat,
                            title=f"{title}: I/O latency{note}", ylabel="us"))
    return files
