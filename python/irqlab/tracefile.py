"""Read back a trace that ``irqlab simulate`` wrote, in either of its two
formats, as trace-event dicts (``{"traceEvents": [...]}``, the shape of
``trace.json``): what ``irqlab report`` draws its timeline from.

* ``trace.json`` (trace-event JSON) is loaded as it is.
* ``trace.pftrace`` (Perfetto's protobuf format, written by
  ``crates/irqlab-sim/src/trace/perfetto.rs``) is decoded here: a stream of
  length-delimited ``TracePacket`` messages, with the track uuids, field
  numbers and slice order that writer documents. A slice (a begin and an
  end event on one track) becomes one ``"X"`` event, a counter value a
  ``"C"`` event, a server's track descriptor a ``thread_name`` metadata
  event; CPU tracks get ``pid`` = CPU and ``tid`` 0 (what runs) or 1 (VCPU
  switches), server tracks ``pid`` = 1000 + CPU and ``tid`` = server index,
  exactly as in the JSON form.

Design principles: no protobuf library (the writer uses a handful of
fields; a few lines of varint decoding read them); the cost is bounded by
the window asked for, not the file's size: packets are in time order, so
decoding stops once the window is passed and no slice begun inside it is
still open; malformed input raises ``ValueError`` naming the file and the
byte offset.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: Track uuid layout of the writer: a tag in the bits above 40, an index below.
_TAG_SHIFT = 40
_CPU_TRACK, _SERVER_TRACK, _BUDGET_TRACK = 2, 4, 5
_SLICE_BEGIN, _SLICE_END, _INSTANT, _COUNTER = 1, 2, 3, 4


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        if b < 0x80:
            return v, i
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")


def _fields(buf: bytes) -> Iterator[tuple[int, int | bytes]]:
    """``(field number, value)`` of one message: an int for varint and
    fixed64 fields, bytes for length-delimited ones."""
    i, n = 0, len(buf)
    while i < n:
        key, i = _varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _varint(buf, i)
            yield field, v
        elif wire == 1:
            yield field, int.from_bytes(buf[i:i + 8], "little")
            i += 8
        elif wire == 2:
            ln, i = _varint(buf, i)
            yield field, buf[i:i + ln]
            i += ln
        elif wire == 5:
            i += 4
        else:
            raise ValueError(f"wire type {wire} of field {field}")
    if i != n:
        raise ValueError("message runs past its end")


def _packets(data: bytes, path: Path) -> Iterator[bytes]:
    i = 0
    while i < len(data):
        try:
            key, j = _varint(data, i)
            if key != (1 << 3 | 2):
                raise ValueError(f"expected a TracePacket (field 1), found key {key}")
            ln, j = _varint(data, j)
        except (IndexError, ValueError) as e:
            raise ValueError(f"{path}: not a Perfetto trace at byte {i}: {e}") from None
        if j + ln > len(data):
            raise ValueError(f"{path}: packet at byte {i} runs past the end of the file")
        yield data[j:j + ln]
        i = j + ln


def _track_ids(uuid: int) -> tuple[int, int]:
    return uuid >> _TAG_SHIFT, uuid & ((1 << _TAG_SHIFT) - 1)


def read_perfetto(path: Path | str, *, start_ns: int | None = None,
                  end_ns: int | None = None, span_ns: int | None = None) -> dict[str, Any]:
    """The trace-event dicts of a ``trace.pftrace`` written by the
    simulator, keeping the slices and counter values that overlap
    ``[start_ns, end_ns]`` (the whole trace by default). ``span_ns`` with
    no ``start_ns`` means the window ``span_ns`` long from the first
    event. Track metadata (server names) is always kept."""
    path = Path(path)
    data = path.read_bytes()
    events: list[dict[str, Any]] = []
    parent_pid: dict[int, int] = {}  # process track uuid -> pid of the JSON form
    track_pid: dict[int, int] = {}  # child track uuid -> pid of the JSON form
    names: dict[int, str] = {}
    open_slices: dict[int, list[tuple[int, str, str]]] = {}
    open_in = 0  # open slices begun inside the window
    lo, hi = start_ns, end_ns
    first = True
    for pkt in _packets(data, path):
        ts = 0
        event = desc = None
        try:
            for f, v in _fields(pkt):
                if f == 8:
                    ts = int(v)  # type: ignore[arg-type]
                elif f == 11:
                    event = v
                elif f == 60:
                    desc = v
        except (IndexError, ValueError) as e:
            raise ValueError(f"{path}: malformed packet: {e}") from None
        if desc is not None:
            _descriptor(bytes(desc), parent_pid, track_pid, names, events)
            continue
        if event is None:
            continue
        if first:
            first = False
            if lo is None:
                lo = ts if span_ns is not None else 0
            if hi is None and span_ns is not None:
                hi = lo + span_ns
        if hi is not None and ts > hi and not open_in:
            break
        kind = track = 0
        cat = name = ""
        value = 0
        for f, v in _fields(bytes(event)):  # type: ignore[arg-type]
            if f == 9:
                kind = int(v)  # type: ignore[arg-type]
            elif f == 11:
                track = int(v)  # type: ignore[arg-type]
            elif f == 22:
                cat = bytes(v).decode()  # type: ignore[arg-type]
            elif f == 23:
                name = bytes(v).decode()  # type: ignore[arg-type]
            elif f == 44:
                value = int(v)  # type: ignore[arg-type]
        tag, idx = _track_ids(track)
        if kind == _SLICE_BEGIN:
            open_slices.setdefault(track, []).append((ts, cat, name))
            if hi is None or ts <= hi:
                open_in += 1
        elif kind == _SLICE_END:
            stack = open_slices.get(track)
            if not stack:
                raise ValueError(f"{path}: a slice ends at {ts} ns on track {track:#x} "
                                 "where none is open")
            start, cat, name = stack.pop()
            if hi is not None and start > hi:
                continue
            open_in -= 1
            if lo is not None and ts < lo:
                continue
            pid, tid = (idx // 2, idx % 2) if tag == _CPU_TRACK else \
                (track_pid.get(track, 1000), idx)
            events.append({"ph": "X", "name": name, "cat": cat, "pid": pid, "tid": tid,
                           "ts": start / 1e3, "dur": (ts - start) / 1e3})
        elif kind == _COUNTER and tag == _BUDGET_TRACK:
            if (lo is None or ts >= lo) and (hi is None or ts <= hi):
                budget = struct.unpack("<d", value.to_bytes(8, "little"))[0]
                events.append({"ph": "C", "name": names.get(track, f"budget {idx}"),
                               "pid": track_pid.get(track, 1000), "ts": ts / 1e3,
                               "args": {"budget": budget}})
    events.sort(key=lambda e: (e.get("ts", -1.0), -e.get("dur", 0.0)))
    return {"traceEvents": events}


def _descriptor(desc: bytes, parent_pid: dict[int, int], track_pid: dict[int, int],
                names: dict[int, str], events: list[dict[str, Any]]) -> None:
    uuid = parent = pid = 0
    name = ""
    for f, v in _fields(desc):
        if f == 1:
            uuid = int(v)  # type: ignore[arg-type]
        elif f == 2:
            name = bytes(v).decode()  # type: ignore[arg-type]
        elif f == 3:
            for pf, pv in _fields(bytes(v)):  # type: ignore[arg-type]
                if pf == 1:
                    pid = int(pv)  # type: ignore[arg-type]
        elif f == 5:
            parent = int(v)  # type: ignore[arg-type]
    names[uuid] = name
    if pid:
        # the writer's pids: 1,000,000 + CPU (CPU n), 2,000,000 + CPU (its servers)
        parent_pid[uuid] = pid - 1_000_000 if pid < 2_000_000 else 1000 + pid - 2_000_000
        return
    track_pid[uuid] = parent_pid.get(parent, 1000)
    tag, idx = _track_ids(uuid)
    if tag == _SERVER_TRACK:
        events.append({"ph": "M", "name": "thread_name", "pid": track_pid[uuid], "tid": idx,
                       "args": {"name": name}})


def load_trace(run_dir: Path, *, start_ns: int | None = None, end_ns: int | None = None,
               span_ns: int | None = None) -> dict[str, Any]:
    """The trace of a run directory: ``trace.json`` if there is one, else
    ``trace.pftrace`` decoded by :func:`read_perfetto` (window as there),
    else ``{}``."""
    if (run_dir / "trace.json").exists():
        return dict(json.loads((run_dir / "trace.json").read_text()))
    if (run_dir / "trace.pftrace").exists():
        return read_perfetto(run_dir / "trace.pftrace", start_ns=start_ns, end_ns=end_ns,
                             span_ns=span_ns)
    return {}
