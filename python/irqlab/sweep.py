"""Parameter sweeps (``irqlab sweep GRID.yaml``; docs/sweep.md; guide:
docs/sweep.md).

A grid names a base model, model fields to vary (lists, linear or log
ranges; any model path such as ``vcpus[iovcpu.high].utilization``), seeds,
and what to record; every point runs ``simulate``, ``analyze`` or both and
becomes one row: the varied values as columns next to the recorded ones.

Design principles:

* A point is pure data (the base model, its overrides, the seed): a worker
  process rebuilds it, so points run anywhere -- local processes or a Dask
  cluster -- and give the same row (the simulator is deterministic per
  seed). Rows are sorted by grid index, so every back end gives the same
  table.
* Each point is keyed by a hash of its model (base model, overrides, seed,
  duration, mode and record list). Finished rows are appended to
  ``points.jsonl`` as they arrive; a resumed sweep skips every hash already
  there, and Ctrl-C keeps them (exit 130).
* Points travel in chunks so per-task overhead stays small at 10^5-10^7
  points; the grid is expanded lazily, never held as configurations.
* Memory does not grow with the rows: each finished row goes straight to
  ``points.jsonl``; the sweep keeps only its byte offset (8 bytes a point),
  and the Parquet and CSV tables are written from the log a batch at a time
  (Parquet row groups, CSV appends), equal to the table built in one piece.
* ``mode: vint`` sweeps the VINT Table II generator instead of a model
  (VINT Figures 4-9): the grid's ``vint`` mapping holds ``sets`` per point
  and the generator's parameters, ``vary`` names parameters, and each
  point records the percentages of schedulable and serviceable sets per
  scheme (``irqlab.analysis.vint_sweep``, one thread per point, so points
  spread over processes or a Dask cluster like any other).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import re
import signal
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from irqlab.model import ModelError, from_dict, parse_duration, scenario_path

MODES = ("simulate", "analyze", "both", "vint")
GRID_KEYS = {"model", "vary", "seeds", "mode", "duration", "record", "chunk", "vint"}
# VINT Table II generator parameters given as durations (single or [lo, hi])
_VINT_DURATIONS = {"vcpu_period", "irq_interarrival", "task_period", "isr_wcet",
                   "virt_isr_wcet", "dsr_wcet"}

_TOKEN = re.compile(r"\[([^\]]*)\]|([^.\[\]]+)")
_NUMBER = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(.*?)\s*$")


# ---- model paths -------------------------------------------------------------

def parse_path(path: str) -> list[str | int]:
    """``vcpus[iovcpu.high].utilization`` -> ``["vcpus", "iovcpu.high",
    "utilization"]``; ``tasks[0]`` -> ``["tasks", 0]`` (an index)."""
    out: list[str | int] = []
    pos = 0
    for m in _TOKEN.finditer(path):
        sep = path[pos:m.start()]
        if sep != ("." if m.group(2) is not None and out else ""):
            raise ValueError(f"{path}: not a model path (e.g. vcpus[V0].budget)")
        key = m.group(1) if m.group(1) is not None else m.group(2)
        out.append(int(key) if m.group(1) is not None and key.isdigit() else key)
        pos = m.end()
    if not out or pos != len(path):
        raise ValueError(f"{path}: not a model path (e.g. vcpus[V0].budget)")
    return out


def _child(node: Any, key: str | int, where: str, create: bool) -> Any:
    if isinstance(node, list):
        if isinstance(key, int):
            if key >= len(node):
                raise IndexError(f"{where}: index {key} out of range ({len(node)} items)")
            return node[key]
        for item in node:
            if isinstance(item, dict) and item.get("name") == key:
                return item
        names = ", ".join(str(i.get("name")) for i in node if isinstance(i, dict))
        raise KeyError(f"{where}: no item named {key!r} (names: {names})")
    if isinstance(node, dict):
        if key not in node:
            if not create:
                raise KeyError(f"{where}: no field {key!r}")
            node[key] = {}
        return node[key]
    raise KeyError(f"{where}: {type(node).__name__} has no field {key!r}")


def set_path(model: dict[str, Any], path: str, value: Any) -> None:
    """Set the field at ``path`` (see :func:`parse_path`) in ``model``;
    missing mapping keys on the way are created (the model's validation
    then judges them)."""
    keys = parse_path(path)
    node: Any = model
    for i, k in enumerate(keys[:-1]):
        node = _child(node, k, ".".join(map(str, keys[:i + 1])), create=True)
    last = keys[-1]
    if isinstance(node, list):
        if not isinstance(last, int) or last >= len(node):
            raise KeyError(f"{path}: not an index of a list of {len(node)}")
        node[last] = value
    elif isinstance(node, dict):
        node[last] = value
    else:
        raise KeyError(f"{path}: {type(node).__name__} has no field {last!r}")


def get_path(data: Any, path: str) -> Any:
    """The value at ``path`` (see :func:`parse_path`); list items are found
    by ``name`` (or ``task`` for analysis rows) or index."""
    node = data
    for i, k in enumerate(parse_path(path)):
        where = f"{path} (at {k!r})"
        if isinstance(node, list) and isinstance(k, str):
            match = [x for x in node if isinstance(x, dict) and k in (x.get("name"), x.get("task"))]
            if not match:
                raise KeyError(f"{where}: no item named {k!r}")
            node = match[0]
        else:
            node = _child(node, k, where if i else path, create=False)
    return node


# ---- value lists -------------------------------------------------------------

def _split(v: Any, where: str) -> tuple[float, str]:
    m = _NUMBER.match(str(v))
    if not m:
        raise ValueError(f"{where}: {v!r} is not a number with an optional unit")
    return float(m.group(1)), m.group(2)


def _fmt(x: float, unit: str) -> Any:
    if not unit:
        return int(x) if float(x).is_integer() else x
    if float(x).is_integer():
        return f"{int(x)}{unit}"
    return f"{x:.6g}{unit}"


def values(spec: Any, where: str) -> list[Any]:
    """Expand one ``vary`` entry: a list (as is), ``{range: [start, stop,
    step]}`` (stop included) or ``{logrange: [start, stop, n]}`` (n points,
    geometric). Bounds may carry a unit (``1ms``, ``5%``); both ends the
    same unit."""
    if isinstance(spec, list):
        if not spec:
            raise ValueError(f"{where}: an empty list")
        return list(spec)
    if not isinstance(spec, dict) or len(spec) != 1 or next(iter(spec)) not in ("range",
                                                                            "logrange"):
        raise ValueError(f"{where}: {spec!r}: give a list, {{range: [start, stop, step]}} "
                         "or {logrange: [start, stop, n]}")
    kind, args = next(iter(spec.items()))
    if not isinstance(args, list) or len(args) != 3:
        raise ValueError(f"{where}.{kind}: {args!r} needs three items")
    (a, ua), (b, ub) = _split(args[0], f"{where}.{kind}[0]"), _split(args[1], f"{where}.{kind}[1]")
    step_arg = args[2]
    if ua != ub:  # durations in different units: go through integer ns
        try:
            a, b = parse_duration(str(args[0])), parse_duration(str(args[1]))
            if kind == "range":
                step_arg = f"{parse_duration(str(step_arg))}ns"
        except ValueError:
            raise ValueError(f"{where}.{kind}: {args[0]!r} and {args[1]!r} need the same unit "
                             "(or both durations)") from None
        ua = "ns"
    if kind == "range":
        step, us = _split(step_arg, f"{where}.range[2]")
        if us not in ("", ua) or step <= 0 or b < a:
            raise ValueError(f"{where}.range: {args!r}: need start <= stop and a positive step "
                             "in the same unit")
        n = int(math.floor((b - a) / step + 1e-9)) + 1
        return [_fmt(round(a + i * step, 12), ua) for i in range(n)]
    n = args[2]
    if not isinstance(n, int) or n < 2 or a <= 0 or b <= 0:
        raise ValueError(f"{where}.logrange: {args!r}: need positive bounds and n >= 2 points")
    xs = [float(f"{a * (b / a) ** (i / (n - 1)):.6g}") for i in range(n)]
    return [_fmt(round(x) if ua == "ns" else x, ua) for x in xs]


# ---- the grid ----------------------------------------------------------------

@dataclass
class Grid:
    """A parsed grid file: the base model (dict), the varied paths and their
    values, the seeds, the mode, an optional duration override (text with
    its unit: ns, us, ms or s, e.g. ``"1s"``) and the metrics/analysis paths to record
    (empty: every scalar)."""

    model: dict[str, Any]
    vary: dict[str, list[Any]]
    seeds: list[int]
    mode: str = "simulate"
    duration: str | None = None
    record: list[str] = field(default_factory=list)
    chunk: int | None = None

    @property
    def size(self) -> int:
        """Number of points: the product of the value counts times the
        seeds."""
        return math.prod(len(v) for v in self.vary.values()) * len(self.seeds)

    def points(self) -> Iterator[dict[str, Any]]:
        """The points in grid order: ``{path: value, ..., "seed": s}``."""
        names = list(self.vary)
        for combo in itertools.product(*self.vary.values(), self.seeds):
            yield dict(zip([*names, "seed"], combo, strict=True))

    def base_hash(self) -> str:
        """SHA-256 (hex) of the base model, mode, duration and record list:
        the part of every point key shared by all points."""
        return _hash({"model": self.model, "mode": self.mode, "duration": self.duration,
                      "record": self.record})

    def point_model(self, point: Mapping[str, Any]) -> dict[str, Any]:
        """The model dict of one point: a copy of the base model with the
        point's values set at their paths (values keep the units they are
        written with, e.g. ``"10%"``, ``"500us"``), its seed and the grid's
        duration."""
        m = json.loads(json.dumps(self.model))
        for path, v in point.items():
            if path != "seed":
                set_path(m, path, v)
        if self.mode == "vint":
            return m
        sim = m.setdefault("simulation", {})
        sim["seed"] = point["seed"]
        if self.duration is not None:
            sim["duration"] = self.duration
        return m


def _hash(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()
                          ).hexdigest()


def point_key(base_hash: str, point: Mapping[str, Any]) -> str:
    """The point's key: a hash of its model (base model hash + overrides)."""
    return _hash([base_hash, sorted(point.items())])[:20]


def load_grid(path: Path | str) -> Grid:
    """Read and check a grid file. ``model`` is a path relative to the grid
    file or a shipped scenario name."""
    p = Path(path)
    try:
        raw = yaml.safe_load(p.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(f"{p}: no such grid file") from None
    except yaml.YAMLError as e:
        raise ValueError(f"{p}: not YAML: {e}") from None
    return grid_from_dict(raw, p.parent)


def grid_from_dict(raw: Any, base: Path = Path(".")) -> Grid:
    """A :class:`Grid` from the dict of a grid file (see :func:`load_grid`)."""
    if not isinstance(raw, dict):
        raise ValueError("grid: expected a mapping with model, vary, seeds, ...")
    unknown = sorted(set(raw) - GRID_KEYS)
    if unknown:
        raise ValueError(f"grid: unknown field {unknown[0]!r} (fields: "
                         f"{', '.join(sorted(GRID_KEYS))})")
    ref = raw.get("model")
    if raw.get("mode") == "vint":
        if ref is not None or "vint" not in raw:
            raise ValueError("mode vint: give the generator's parameters in vint: (sets and "
                             "VINT Table II overrides), not a model")
        if not isinstance(raw["vint"], dict):
            raise ValueError("vint: expected a mapping (sets, vcpu_period, irq_interarrival, "
                             "...)")
        model = dict(raw["vint"])
    elif "vint" in raw:
        raise ValueError("vint: only with mode: vint")
    elif isinstance(ref, dict):
        model = ref
    elif isinstance(ref, str):
        mp = base / ref
        if not mp.exists():
            try:
                mp = scenario_path(ref.removesuffix(".yaml"))
            except ValueError:
                raise FileNotFoundError(f"model: {ref}: no such file or shipped scenario") \
                    from None
        model = yaml.safe_load(mp.read_text())
    else:
        raise ValueError("model: required (a model file, a scenario name or a mapping)")
    vary_raw = raw.get("vary") or {}
    if not isinstance(vary_raw, dict):
        raise ValueError("vary: expected a mapping of model path -> values")
    vary = {k: values(v, f"vary.{k}") for k, v in vary_raw.items()}
    seeds_raw = raw.get("seeds", [0] if mode_of(raw) == "vint" else
                        [model.get("simulation", {}).get("seed", 0)])
    if isinstance(seeds_raw, int) and not isinstance(seeds_raw, bool):
        seeds = list(range(seeds_raw))
    elif isinstance(seeds_raw, dict):
        seeds = [int(x) for x in values(seeds_raw, "seeds")]
    else:
        seeds = seeds_raw
    if not isinstance(seeds, list) or not seeds or not all(
            isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds):
        raise ValueError(f"seeds: {seeds_raw!r}: give a count, a list of non-negative "
                         "integers or a range")
    mode = raw.get("mode", "simulate")
    if mode not in MODES:
        raise ValueError(f"mode: {mode!r} is not one of {', '.join(MODES)}")
    record = raw.get("record") or []
    if not isinstance(record, list) or not all(isinstance(r, str) for r in record):
        raise ValueError("record: expected a list of paths like sim.tasks[high].response.max_ns")
    for r in record:
        if not r.startswith(("sim.", "analysis.", "vint.")):
            raise ValueError(f"record: {r}: start with sim. (metrics.json), analysis. "
                             "(irqlab analyze) or vint. (mode vint)")
        parse_path(r)
    chunk = raw.get("chunk")
    if chunk is not None and (not isinstance(chunk, int) or chunk <= 0):
        raise ValueError(f"chunk: {chunk!r} must be a positive integer")
    g = Grid(model, vary, seeds, mode, raw.get("duration"), record, chunk)
    # Fail before running anything when a path or value does not fit.
    for path in vary:
        try:
            set_path(json.loads(json.dumps(model)), path, vary[path][0])
        except (KeyError, IndexError, ValueError) as e:
            raise ValueError(f"vary.{path}: {e.args[0] if e.args else e}") from None
    for point in itertools.islice(g.points(), 1):
        if mode == "vint":
            from irqlab.analysis import MAX_SETS

            n = model.get("sets")
            if isinstance(n, bool) or not isinstance(n, int) or not 0 < n <= MAX_SETS:
                raise ValueError(f"vint.sets: {n!r} must be an integer in 1..{MAX_SETS} "
                                 "(task sets per point)")
            try:
                vint_point(g.point_model(point), point["seed"], sets=1)
            except (TypeError, ValueError) as e:
                raise ValueError(f"the grid's first point: vint: {e}") from None
            continue
        try:
            from_dict(g.point_model(point))
        except ModelError as e:
            raise ValueError(f"the grid's first point is not a valid model: {e}") from None
    return g


def mode_of(raw: Mapping[str, Any]) -> str:
    """The grid's ``mode`` (default ``simulate``)."""
    return str(raw.get("mode", "simulate"))


def vint_point(spec: Mapping[str, Any], seed: int, *, sets: int | None = None) \
        -> dict[str, Any]:
    """One point of a ``mode: vint`` grid: ``vint_sweep`` of the generator
    parameters in ``spec`` (durations with units, a pair ``[lo, hi]`` for a
    range) over ``spec["sets"]`` sets (or ``sets``), on one thread."""
    from irqlab.analysis import vint_sweep

    def ns(x: Any) -> Any:
        return parse_duration(x) if isinstance(x, str) else x

    params: dict[str, Any] = {}
    for k, v in spec.items():
        if k in ("sets", "pseudo_ratio"):
            continue
        if k in _VINT_DURATIONS:
            v = tuple(ns(x) for x in v) if isinstance(v, list) else ns(v)
        params[k] = v
    n = sets if sets is not None else spec.get("sets")
    if isinstance(n, bool) or not isinstance(n, int):
        raise ValueError(f"sets: {n!r} must be an integer (task sets per point)")
    ratio = spec.get("pseudo_ratio", [1, 1])
    if not (isinstance(ratio, list) and len(ratio) == 2):
        raise ValueError(f"pseudo_ratio: {ratio!r} must be [numerator, denominator]")
    return vint_sweep(params, n, seed=seed, threads=1, pseudo_ratio=(ratio[0], ratio[1]))


# ---- running one point -------------------------------------------------------

def flatten(data: Any, prefix: str) -> dict[str, Any]:
    """Every scalar leaf of ``data`` as ``prefix.a[name].b``; lists of named
    rows are keyed by name, other lists of scalars are left out."""
    out: dict[str, Any] = {}
    if isinstance(data, dict):
        for k, v in data.items():
            out |= flatten(v, f"{prefix}.{k}")
    elif isinstance(data, list):
        for i, v in enumerate(data):
            if isinstance(v, dict):
                key = v.get("name") or (f"{v['task']}/{v['device']}" if "task" in v and
                                         "device" in v else None) or str(i)
                out |= flatten(v, f"{prefix}[{key}]")
    else:
        out[prefix] = data
    return out


def run_point(grid: Grid, point: Mapping[str, Any]) -> dict[str, Any]:
    """Run one point; returns its recorded values (no point columns).
    An invalid point gives ``error`` instead of raising."""
    from irqlab.analysis import analyze
    from irqlab.sim import simulate

    data: dict[str, Any] = {}
    if grid.mode == "vint":
        try:
            data["vint"] = vint_point(grid.point_model(point), point["seed"])
        except (TypeError, ValueError) as e:
            return {"error": str(e)}
        return _recorded(grid, data)
    try:
        m = from_dict(grid.point_model(point))
    except ModelError as e:
        return {"error": str(e).replace("\n", "; ")}
    if grid.mode in ("simulate", "both"):
        data["sim"] = simulate(m).metrics
    if grid.mode in ("analyze", "both"):
        data["analysis"] = analyze(m)
    return _recorded(grid, data)


def _recorded(grid: Grid, data: dict[str, Any]) -> dict[str, Any]:
    """The row of a point's results: every scalar, or the record paths."""
    if not grid.record:
        out: dict[str, Any] = {}
        for k, v in data.items():
            out |= flatten(v, k)
        return out | {"error": None}
    rec: dict[str, Any] = {"error": None}
    for r in grid.record:
        try:
            rec[r] = get_path(data, r)
        except (KeyError, IndexError) as e:
            rec[r] = None
            rec["error"] = str(e.args[0] if e.args else e)
    return rec


def run_chunk(grid: Grid, items: Sequence[tuple[int, str, dict[str, Any]]]) \
        -> list[dict[str, Any]]:
    """Run the points ``(index, key, point)`` of one chunk; returns rows."""
    return [{"index": i, "point": key, **p, **run_point(grid, p)} for i, key, p in items]


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


# ---- back ends ---------------------------------------------------------------

Chunk = list[tuple[int, str, dict[str, Any]]]


class LocalBackend:
    """Local processes (all cores by default); workers ignore Ctrl-C, the
    parent stops submitting and keeps what finished."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = max(1, workers or os.cpu_count() or 1)

    def run(self, grid: Grid, chunks: Iterator[Chunk]) -> Iterator[list[dict[str, Any]]]:
        """Run the chunks on the process pool (at most two per worker in
        flight); yields each chunk's rows as it finishes."""
        with ProcessPoolExecutor(self.workers, initializer=_ignore_sigint) as pool:
            pending: set[Future[list[dict[str, Any]]]] = set()
            try:
                for chunk in itertools.chain(chunks, [None]):
                    if chunk is not None:
                        pending.add(pool.submit(run_chunk, grid, chunk))
                    while pending and (chunk is None or len(pending) >= 2 * self.workers):
                        done, pending = wait(pending, return_when=FIRST_COMPLETED)
                        for f in done:
                            yield f.result()
            finally:
                pool.shutdown(wait=True, cancel_futures=True)


class DaskBackend:
    """Dask distributed: a scheduler address (``tcp://host:port``) or a
    ``LocalCluster`` of ``local_workers`` single-threaded processes."""

    def __init__(self, address: str | None = None, local_workers: int | None = None) -> None:
        self.address = address
        self.local_workers = local_workers

    def run(self, grid: Grid, chunks: Iterator[Chunk]) -> Iterator[list[dict[str, Any]]]:
        """Run the chunks on the Dask cluster (the grid scattered once, four
        chunks per worker in flight); yields each chunk's rows as it
        finishes. ImportError naming the fix without dask[distributed]."""
        try:
            from distributed import Client, LocalCluster, as_completed
        except ImportError:
            raise ImportError("the Dask back end needs dask[distributed]: "
                              "pip install 'dask[distributed]'") from None
        cluster = None
        if self.address is None:
            cluster = LocalCluster(n_workers=self.local_workers or 2, threads_per_worker=1,
                                   processes=True, dashboard_address=None)
        client = Client(cluster if cluster is not None else self.address)
        try:
            grid_f = client.scatter(grid, broadcast=True)
            window = 4 * max(1, len(client.scheduler_info().get("workers", {})) or 1)
            ac = as_completed()
            it = iter(chunks)
            for chunk in itertools.islice(it, window):
                ac.add(client.submit(run_chunk, grid_f, chunk, pure=False))
            for f in ac:
                yield f.result()
                nxt = next(it, None)
                if nxt is not None:
                    ac.add(client.submit(run_chunk, grid_f, nxt, pure=False))
        finally:
            client.close()
            if cluster is not None:
                cluster.close()


# ---- the sweep ---------------------------------------------------------------

class Progress:
    """A one-line progress report on stderr (points, rate, ETA), redrawn at
    most a few times a second."""

    def __init__(self, total: int, enabled: bool, label: str = "points") -> None:
        self.total, self.enabled, self.label = total, enabled, label
        self.t0 = self.last = time.monotonic()
        self.done = 0

    def update(self, n: int, force: bool = False) -> None:
        """Count ``n`` more points done; redraw (at most every 0.2 s of
        wall time unless ``force``) with the rate in points per second and
        the ETA as HH:MM:SS."""
        self.done += n
        now = time.monotonic()
        if not self.enabled or (now - self.last < 0.2 and not force):
            return
        self.last = now
        rate = self.done / max(now - self.t0, 1e-9)
        left = (self.total - self.done) / rate if rate > 0 else float("inf")
        eta = time.strftime("%H:%M:%S", time.gmtime(left)) if math.isfinite(left) else "?"
        print(f"\r  {self.done}/{self.total} {self.label} "
              f"({100 * self.done / max(self.total, 1):.0f} %), {rate:.1f}/s, ETA {eta}   ",
              end="", file=sys.stderr, flush=True)

    def close(self) -> None:
        """Draw the final state and end the line."""
        if self.enabled:
            self.update(0, force=True)
            print(file=sys.stderr)


@dataclass
class SweepResult:
    """What :func:`run_sweep` did: the output files, how many points the
    tables hold (``points``; ``errors`` of them invalid), how many ran now
    and how many were reused, and whether Ctrl-C stopped it. ``rows`` reads
    the rows back from ``points.jsonl`` (sorted by grid index) only when
    asked, so a sweep's memory does not grow with its points."""

    computed: int
    reused: int
    interrupted: bool
    files: list[Path]
    points: int = 0
    errors: int = 0
    log: Path | None = None
    offsets: Any = None  # numpy int64: byte offset in ``log`` of each table row

    @property
    def rows(self) -> list[dict[str, Any]]:
        """Every row of the table (grid order), read from ``points.jsonl``."""
        if self.log is None or self.offsets is None:
            return []
        return [r for batch in _row_batches(self.log, self.offsets, 1 << 16) for r in batch]

    def to_pandas(self) -> Any:
        """The rows as a DataFrame (the columns of ``results.parquet``;
        recorded values in the units of their names, e.g. ``_ns``);
        ImportError naming the fix when pandas is not installed."""
        from irqlab.sim import _pandas

        return _pandas().DataFrame.from_records(self.rows)


# Rows per Parquet row group / CSV append when the tables are written.
BATCH = 4096
# A line of points.jsonl as run_sweep writes it starts with its point key.
_LINE_KEY = re.compile(rb'^\{"index": -?\d+, "point": "([0-9a-f]+)"')


def _key_int(key: str | bytes) -> int:
    """The first 64 bits of a point key (hex), for compact lookups."""
    return int(key[:16], 16)


def _scan_log(path: Path) -> tuple[Any, Any]:
    """``(keys, offsets)``: the 64-bit key prefix and byte offset of every
    complete line of ``points.jsonl``, sorted by key, the last line of a key
    winning. 16 bytes per finished point, never the rows themselves."""
    from array import array

    import numpy as np

    keys, offs = array("Q"), array("q")  # 8 bytes each, not Python ints
    if path.exists():
        with path.open("rb") as f:
            off = 0
            for line in f:
                m = _LINE_KEY.match(line) if line.endswith(b"\n") else None
                key: str | bytes | None = m.group(1) if m else None
                if key is None:
                    try:  # a line written another way, or cut short by a kill
                        key = json.loads(line)["point"]
                    except (json.JSONDecodeError, KeyError, TypeError):
                        key = None  # cut short: that point runs again
                if key is not None:
                    keys.append(_key_int(key))
                    offs.append(off)
                off += len(line)
    k = np.frombuffer(keys, dtype=np.uint64)
    o = np.frombuffer(offs, dtype=np.int64)
    order = np.argsort(k, kind="stable")
    k, o = k[order], o[order]
    last = np.ones(len(k), dtype=bool)
    last[:-1] = k[1:] != k[:-1]
    return k[last], o[last]


def _row_batches(log: Path, offsets: Any, batch: int) -> Iterator[list[dict[str, Any]]]:
    """The rows at ``offsets`` (grid order; -1: no row), ``batch`` at a
    time, with ``index`` set to their place in the grid."""
    import numpy as np

    idx = np.flatnonzero(offsets >= 0)
    with log.open("rb") as f:
        for s in range(0, len(idx), batch):
            rows = []
            for i in idx[s:s + batch]:
                f.seek(int(offsets[i]))
                row = json.loads(f.readline())
                row["index"] = int(i)
                rows.append(row)
            yield rows


def _chunks(items: Iterable[tuple[int, str, dict[str, Any]]], size: int) -> Iterator[Chunk]:
    """Consecutive chunks of ``size`` items, taken lazily."""
    it = iter(items)
    while chunk := list(itertools.islice(it, size)):
        yield chunk


def _cell(v: Any) -> Any:
    # a varied value that is itself a list (a VINT range [lo, hi]) is one
    # cell: its JSON text
    return json.dumps(v) if isinstance(v, list | dict) else v


def write_tables(batches: Callable[[], Iterable[list[dict[str, Any]]]],
                 out: Path) -> list[Path]:
    """``results.parquet`` and ``results.csv`` (pyarrow) from the rows,
    ``batches()`` giving them in table order a batch at a time (called
    twice: once for the columns and their types, once to write). Columns in
    order of first appearance; each batch is a Parquet row group and a CSV
    append, so memory is one batch whatever the sweep's size, and the table
    equals the one written in one piece."""
    try:
        import pyarrow as pa
        import pyarrow.csv as pacsv
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError("sweep tables need pyarrow: pip install pyarrow") from None

    def table(rows: list[dict[str, Any]], schema: Any = None) -> Any:
        cols: dict[str, None] = {}
        for r in rows:
            cols |= dict.fromkeys(r)
        names = schema.names if schema is not None else cols
        return pa.Table.from_pylist([{c: _cell(r.get(c)) for c in names} for r in rows],
                                    schema=schema)

    schema = None
    for rows in batches():
        sc = table(rows).schema
        schema = sc if schema is None else pa.unify_schemas([schema, sc],
                                                             promote_options="permissive")
    files = [out / "results.parquet", out / "results.csv"]
    if schema is None:
        return []
    tmp = [f.with_name(f.name + ".part") for f in files]
    with pq.ParquetWriter(tmp[0], schema) as pw, pacsv.CSVWriter(tmp[1], schema) as cw:
        for rows in batches():
            t = table(rows, schema)
            pw.write_table(t)
            cw.write_table(t)
    for t, f in zip(tmp, files, strict=True):
        os.replace(t, f)
    return files


def run_sweep(grid: Grid, out: Path | str, *, backend: LocalBackend | DaskBackend | None = None,
              progress: bool = False, chunk: int | None = None,
              on_chunk: Callable[[int], None] | None = None,
              batch: int = BATCH) -> SweepResult:
    """Run every point of ``grid`` not already in ``out/points.jsonl``;
    write ``results.parquet`` and ``results.csv`` (one row per point, sorted
    by grid index), ``batch`` rows at a time. Ctrl-C stops it keeping the
    finished points (``interrupted``). ``on_chunk`` is called with the
    number of rows of each chunk as it lands.

    Memory does not hold the rows: each finished row goes to
    ``points.jsonl`` as it lands, and the sweep keeps the byte offset of
    each point's row (8 bytes a point; 16 more a logged point while the log
    is scanned for resuming), then writes the tables a batch at a time."""
    import numpy as np

    if batch < 1:
        raise ValueError(f"batch: {batch} must be positive")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "points.jsonl"
    keys, offs = _scan_log(log)
    bh = grid.base_hash()
    where = np.full(grid.size, -1, dtype=np.int64)  # row offset in the log per grid index
    # Two lazy passes over the grid (never all points in memory): find what
    # is already done, then feed the rest.
    if len(keys):
        with log.open("rb") as f:
            for i, p in enumerate(grid.points()):
                k = point_key(bh, p)
                j = int(np.searchsorted(keys, np.uint64(_key_int(k))))
                if j < len(keys) and int(keys[j]) == _key_int(k):
                    f.seek(int(offs[j]))  # the whole key, not only its prefix
                    m = _LINE_KEY.match(f.read(80))
                    if m is None or m.group(1).decode() == k:
                        where[i] = offs[j]
    del keys, offs
    reused = int((where >= 0).sum())
    left = grid.size - reused
    todo = ((i, point_key(bh, p), p) for i, p in enumerate(grid.points()) if where[i] < 0)
    size = chunk or grid.chunk or max(1, min(256, left // (8 * (os.cpu_count() or 1))))
    bar = Progress(left, progress)
    backend = backend or LocalBackend()
    interrupted = False
    computed = 0
    try:
        with log.open("ab") as f:
            if f.tell() and _last_byte(log) != b"\n":
                f.write(b"\n")  # end a line cut short by a kill
            for rows in backend.run(grid, _chunks(todo, size)):
                for r in rows:
                    where[r["index"]] = f.tell()
                    # keys in row order: a resumed sweep's table has the
                    # columns of an uninterrupted one
                    f.write(json.dumps(r).encode() + b"\n")
                f.flush()
                computed += len(rows)
                bar.update(len(rows))
                if on_chunk:
                    on_chunk(len(rows))
    except KeyboardInterrupt:
        interrupted = True
    bar.close()
    errors = 0

    def batches() -> Iterator[list[dict[str, Any]]]:
        nonlocal errors
        errors = 0
        for rows in _row_batches(log, where, batch):
            errors += sum(1 for r in rows if r.get("error"))
            yield rows

    files = [log, *write_tables(batches, out)]
    return SweepResult(computed, reused, interrupted, files, int((where >= 0).sum()), errors,
                       log, where)


def _last_byte(path: Path) -> bytes:
    with path.open("rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1)
