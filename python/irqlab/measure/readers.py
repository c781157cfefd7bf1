"""Readers for latency sample files; every reader returns :class:`Dataset` objects in ns.

Formats (``docs/measure.md`` is the user reference):

``ipdump``  (``*.json`` with ``"format": "latency-ip-dump"``) what
    :meth:`irqlab.measure.LatencyIP.dump` writes: ``samples_cycles`` (RAM
    words) and ``clock_hz``; optional ``scenario``/``name``.
``iptext``  a text dump of the IP RAM: one sample in cycles per line, decimal
    or ``0x`` hex; ``#`` starts a comment; a ``# clock_hz: 100000000`` line
    sets the clock (default 100 MHz, LATENCY-IP §5).
``csv``     a header row, then one sample per row. The latency column is
    ``latency_ns``, ``latency_us`` or ``latency_cycles`` (cycles use
    ``clock_hz``); an optional ``scenario`` (or ``name``) column splits the file
    into one dataset per value, in order of first appearance.
``cyclictest`` the histogram that ``cyclictest -h N`` (or ``--histfile``)
    prints: ``bucket count...`` rows, one count column per thread, buckets in
    µs, and ``# Histogram Overflows:`` per thread. Samples are the bucket
    values (1 µs resolution). Overflowed samples have no value: a file with
    overflows is rejected unless ``allow_overflow`` (then they are dropped and
    the dataset carries a note).
``recorder`` JSON ``{"samples_ns": [...], "name": "..."}`` (the simulator's
    and the runtime's latency recorder), or ``{"runs": [{...}, ...]}`` for
    several.

Design principles: formats are explicit and small; guessing is limited to the
file extension plus, for text, the cyclictest header; every rejection names
the file, the line or field, the offending value and the rule it breaks.
"""

from __future__ import annotations

import csv
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from irqlab.measure import regmap

FORMATS = ("auto", "ipdump", "iptext", "csv", "cyclictest", "recorder")


@dataclass
class Dataset:
    """One named set of latency samples in ns."""

    name: str
    samples_ns: np.ndarray
    source: str = ""
    notes: list[str] = field(default_factory=list)


def _number(text: str, where: str, what: str) -> float:
    try:
        v = float(int(text, 0)) if re.fullmatch(r"0[xX][0-9a-fA-F]+", text) else float(text)
    except ValueError:
        raise ValueError(f"{where}: {what} {text!r} is not a number") from None
    if not math.isfinite(v) or v < 0:
        raise ValueError(f"{where}: {what} {text!r} must be a finite non-negative number")
    return v


def _clock(value: Any, where: str) -> float:
    try:
        hz = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: clock_hz {value!r} is not a number") from None
    if not (math.isfinite(hz) and hz > 0):
        raise ValueError(f"{where}: clock_hz {value!r} must be a positive frequency in Hz")
    return hz


def _nonempty(ds: Dataset, where: str) -> Dataset:
    if ds.samples_ns.size == 0:
        raise ValueError(f"{where}: no samples")
    return ds


def detect(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix == ".json":
        return "json"
    if suffix == ".csv":
        return "csv"
    with path.open("r", errors="replace") as fh:
        head = fh.read(4096)
    if re.search(r"^# (Histogram|Min Latencies|Max Latencies|Total:)", head, re.MULTILINE):
        return "cyclictest"
    return "iptext"


def load(
    path: str | Path,
    fmt: str = "auto",
    *,
    clock_hz: float | None = None,
    allow_overflow: bool = False,
    per_thread: bool = False,
) -> list[Dataset]:
    """Read ``path`` and return its datasets (one or more)."""
    p = Path(path)
    if fmt not in FORMATS:
        raise ValueError(f"format: {fmt!r} is not one of {', '.join(FORMATS)}")
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no such file")
    kind = detect(p) if fmt == "auto" else fmt
    if kind in ("json", "ipdump", "recorder"):
        return _load_json(p, kind, clock_hz)
    if kind == "csv":
        return _load_csv(p, clock_hz)
    if kind == "cyclictest":
        return _load_cyclictest(p, allow_overflow, per_thread)
    return [_load_iptext(p, clock_hz)]


def _load_json(p: Path, kind: str, clock_hz: float | None) -> list[Dataset]:
    try:
        doc = json.loads(p.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{p}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{p}: top level must be an object, got {type(doc).__name__}")
    if doc.get("format") == "latency-ip-dump" or kind == "ipdump":
        return [_from_ipdump(doc, p, clock_hz)]
    if "runs" in doc:
        runs = doc["runs"]
        if not isinstance(runs, list) or not runs:
            raise ValueError(f"{p}: runs must be a non-empty list")
        return [_from_recorder(r, p, f"runs[{i}]") for i, r in enumerate(runs)]
    if "samples_ns" in doc:
        return [_from_recorder(doc, p, "")]
    raise ValueError(
        f"{p}: unknown JSON layout (expected samples_ns, runs, or format latency-ip-dump)"
    )


def _samples(values: Any, where: str, field_name: str) -> np.ndarray:
    if not isinstance(values, list):
        raise ValueError(f"{where}: {field_name} must be a list of numbers")
    out = np.empty(len(values), dtype=np.float64)
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
            raise ValueError(
                f"{where}: {field_name}[{i}] = {v!r} is not a finite non-negative number"
            )
        out[i] = v
    return out


def _from_ipdump(doc: dict[str, Any], p: Path, clock_hz: float | None) -> Dataset:
    if "samples_cycles" not in doc:
        raise ValueError(f"{p}: latency-ip-dump without samples_cycles")
    hz = clock_hz
    if hz is None:
        hz = _clock(doc.get("clock_hz", regmap.DEFAULT_CLOCK_HZ), str(p))
    cycles = _samples(doc["samples_cycles"], str(p), "samples_cycles")
    width = doc.get("cnt_width")
    notes = []
    if isinstance(width, int) and cycles.size and cycles.max() >= (1 << width) - 1:
        top = (1 << width) - 1
        notes.append(f"some samples saturated the {width}-bit counter (>= {top} cycles)")
    name = str(doc.get("scenario") or doc.get("name") or p.stem.removesuffix(".ipdump"))
    return _nonempty(Dataset(name, cycles * (1e9 / hz), str(p), notes), str(p))


def _from_recorder(doc: Any, p: Path, where: str) -> Dataset:
    loc = f"{p}{':' + where if where else ''}"
    if not isinstance(doc, dict) or "samples_ns" not in doc:
        raise ValueError(f"{loc}: expected an object with samples_ns")
    name = doc.get("name", doc.get("scenario"))
    if name is None:
        name = p.stem if not where else f"{p.stem}[{where}]"
    samples = _samples(doc["samples_ns"], loc, "samples_ns")
    return _nonempty(Dataset(str(name), samples, str(p)), loc)


def _load_iptext(p: Path, clock_hz: float | None) -> Dataset:
    hz = clock_hz
    vals: list[float] = []
    for lineno, raw in enumerate(p.read_text(errors="replace").splitlines(), 1):
        line = raw.strip()
        m = re.fullmatch(r"#\s*clock_hz\s*[:=]\s*(\S+)", line)
        if m and clock_hz is None:
            hz = _clock(m.group(1), f"{p}:{lineno}")
            continue
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        v = _number(line, f"{p}:{lineno}", "sample")
        if v != int(v):
            raise ValueError(f"{p}:{lineno}: sample {line!r} must be a whole number of cycles")
        vals.append(v)
    hz = hz if hz is not None else regmap.DEFAULT_CLOCK_HZ
    return _nonempty(Dataset(p.stem, np.asarray(vals) * (1e9 / hz), str(p)), str(p))


_CSV_UNITS = {"latency_ns": 1.0, "latency_us": 1e3, "latency_cycles": None}


def _load_csv(p: Path, clock_hz: float | None) -> list[Dataset]:
    with p.open(newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None:
            raise ValueError(f"{p}: empty file (expected a header row)")
        cols = [h.strip().lower() for h in header]
        found = [c for c in cols if c in _CSV_UNITS]
        if len(found) != 1:
            raise ValueError(
                f"{p}:1: header {header!r} must have exactly one of latency_ns, latency_us, "
                "latency_cycles"
            )
        col = cols.index(found[0])
        scale = _CSV_UNITS[found[0]]
        if scale is None:
            scale = 1e9 / (clock_hz if clock_hz is not None else regmap.DEFAULT_CLOCK_HZ)
        group = next((cols.index(g) for g in ("scenario", "name") if g in cols), None)
        groups: dict[str, list[float]] = {}
        for lineno, row in enumerate(reader, 2):
            if not row or all(not c.strip() for c in row):
                continue
            if len(row) != len(cols):
                raise ValueError(f"{p}:{lineno}: {len(row)} fields, header has {len(cols)}")
            v = _number(row[col].strip(), f"{p}:{lineno}", found[0])
            key = row[group].strip() if group is not None else p.stem
            if not key:
                raise ValueError(f"{p}:{lineno}: empty {cols[group or 0]}")
            groups.setdefault(key, []).append(v * scale)
    if not groups:
        raise ValueError(f"{p}: no samples")
    return [Dataset(k, np.asarray(v), str(p)) for k, v in groups.items()]


def _load_cyclictest(p: Path, allow_overflow: bool, per_thread: bool) -> list[Dataset]:
    counts: list[list[int]] = []
    buckets: list[int] = []
    overflows: list[int] | None = None
    nthreads: int | None = None
    for lineno, raw in enumerate(p.read_text(errors="replace").splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            m = re.match(r"#\s*Histogram Overflows:\s*(.*)$", line)
            if m:
                overflows = [int(_number(t, f"{p}:{lineno}", "overflow count"))
                             for t in m.group(1).split()]
            continue
        fields = line.split()
        where = f"{p}:{lineno}"
        bucket = _number(fields[0], where, "bucket")
        if bucket != int(bucket):
            raise ValueError(f"{where}: bucket {fields[0]!r} must be a whole number of µs")
        row = [_number(t, where, "count") for t in fields[1:]]
        if not row:
            raise ValueError(f"{where}: bucket {fields[0]} has no count columns")
        if nthreads is None:
            nthreads = len(row)
        elif len(row) != nthreads:
            raise ValueError(f"{where}: {len(row)} count columns, earlier rows have {nthreads}")
        if any(c != int(c) for c in row):
            raise ValueError(f"{where}: counts must be whole numbers")
        buckets.append(int(bucket))
        counts.append([int(c) for c in row])
    if nthreads is None:
        raise ValueError(f"{p}: no histogram rows (expected 'bucket count...' lines)")
    notes: list[str] = []
    if overflows and any(overflows):
        total = sum(overflows)
        if not allow_overflow:
            raise ValueError(
                f"{p}: {total} samples overflowed the histogram (# Histogram Overflows: "
                f"{' '.join(map(str, overflows))}); rerun cyclictest with a larger -h, or allow "
                "overflow to drop them"
            )
        notes.append(f"{total} overflowed samples (above the histogram range) dropped")
    b = np.asarray(buckets, dtype=np.float64) * 1e3
    c = np.asarray(counts, dtype=np.int64)
    if per_thread:
        out = []
        for t in range(nthreads):
            ds = Dataset(f"{p.stem}:T{t}", np.repeat(b, c[:, t]), str(p), list(notes))
            out.append(_nonempty(ds, f"{p}: thread {t}"))
        return out
    return [_nonempty(Dataset(p.stem, np.repeat(b, c.sum(axis=1)), str(p), notes), str(p))]
