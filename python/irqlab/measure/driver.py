"""Register driver for the Latencies IP (docs/measure.md).

``LatencyIP`` (blocking) and ``AsyncLatencyIP`` (awaitable) speak the register
map of :mod:`irqlab.measure.regmap` over a pluggable back end:

* :class:`MmapBackend` maps the two AXI-Lite windows of a real board, through
  ``/dev/mem`` (physical addresses) or a UIO device (``/dev/uioN``, maps by
  index); any file works, which is how the tests check it;
* :class:`CocotbBackend` drives two cocotbext-axi ``AxiLiteMaster`` objects in
  simulation.

Design: every high-level operation is written once, as a generator that
yields bus operations and receives read data (a "sans-I/O" protocol). The
blocking and the async front ends only differ in how they execute those
operations, so simulation and hardware run the very same register sequences.
Bus errors (SLVERR/DECERR) raise :class:`BusError` naming window and offset.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, Protocol

from irqlab.measure import regmap

RAM = "s00"
REGS = "s01"


class BusError(RuntimeError):
    """A bus access that the IP answered with an error response."""


@dataclass(frozen=True)
class Op:
    """One bus access: a 32-bit read, or a 32-bit write of ``value``."""

    write: bool
    window: str
    offset: int
    value: int = 0


OpGen = Generator[Op, int, Any]


class SyncBackend(Protocol):
    def read32(self, window: str, offset: int) -> int: ...

    def write32(self, window: str, offset: int, value: int) -> None: ...


class AsyncBackend(Protocol):
    async def read32(self, window: str, offset: int) -> int: ...

    async def write32(self, window: str, offset: int, value: int) -> None: ...


# ---------------------------------------------------------------------------
# operations (shared by both front ends)
# ---------------------------------------------------------------------------


def _op_info() -> OpGen:
    ident = yield Op(False, REGS, regmap.ID)
    if ident != regmap.IP_ID:
        raise BusError(
            f"s01+0x{regmap.ID:02x}: ID reads 0x{ident:08x}, expected 0x{regmap.IP_ID:08x}"
        )
    info = yield Op(False, REGS, regmap.INFO)
    return info & 0xFF, info >> 8


def _op_snapshot() -> OpGen:
    words = {}
    for name in ("ctrl", "alarm_lat", "last", "max", "min", "num", "status"):
        words[name] = yield Op(False, REGS, regmap.REG_NAMES[name])
    return regmap.Snapshot(
        we=bool(words["ctrl"] & regmap.CTRL_WE),
        alarm_lat=words["alarm_lat"],
        last=words["last"],
        max=words["max"],
        min=words["min"],
        num=words["num"],
        status=regmap.Status.decode(words["status"]),
    )


def _op_write(offset: int, value: int) -> OpGen:
    yield Op(True, REGS, offset, value & 0xFFFF_FFFF)


def _op_read(offset: int) -> OpGen:
    return (yield Op(False, REGS, offset))


def _op_samples(count: int | None, depth: int) -> OpGen:
    if count is None:
        num = yield Op(False, REGS, regmap.NUM)
        count = min(num, depth)
    if not 0 <= count <= depth:
        raise ValueError(f"count: {count} outside 0..{depth} (RAM depth)")
    out = []
    for i in range(count):
        out.append((yield Op(False, RAM, 4 * i)))
    return out


# ---------------------------------------------------------------------------
# front ends
# ---------------------------------------------------------------------------


def _check_alarm_lat(cycles: int, width: int) -> int:
    if not 0 <= cycles <= (1 << width) - 1:
        raise ValueError(f"alarm_lat: {cycles} cycles outside 0..{(1 << width) - 1}")
    return cycles


def _status_bits(alarm: bool, saturated: bool, orphan_ack: bool, overrun: bool) -> int:
    return (
        (regmap.ST_ALARM if alarm else 0)
        | (regmap.ST_SATURATED if saturated else 0)
        | (regmap.ST_ORPHAN_ACK if orphan_ack else 0)
        | (regmap.ST_OVERRUN if overrun else 0)
    )


class LatencyIP:
    """Blocking driver (``mmap`` back end, or any :class:`SyncBackend`)."""

    def __init__(
        self,
        backend: SyncBackend,
        *,
        cnt_width: int = regmap.DEFAULT_CNT_WIDTH,
        depth: int = regmap.DEFAULT_DEPTH,
        clock_hz: float = regmap.DEFAULT_CLOCK_HZ,
    ) -> None:
        self.backend = backend
        self.cnt_width = cnt_width
        self.depth = depth
        self.clock_hz = clock_hz

    def _run(self, gen: OpGen) -> Any:
        try:
            op = next(gen)
            while True:
                if op.write:
                    self.backend.write32(op.window, op.offset, op.value)
                    op = gen.send(0)
                else:
                    op = gen.send(self.backend.read32(op.window, op.offset))
        except StopIteration as stop:
            return stop.value

    def probe(self) -> tuple[int, int]:
        """Check the ID register; read and adopt (cnt_width, depth) from INFO."""
        self.cnt_width, self.depth = self._run(_op_info())
        return self.cnt_width, self.depth

    def snapshot(self) -> regmap.Snapshot:
        return self._run(_op_snapshot())

    def enable(self, clear: bool = False) -> None:
        """Set we = 1 (LATENCY-IP Table 2); ``clear`` restarts the statistics too."""
        self._run(_op_write(regmap.CTRL, regmap.CTRL_WE | (regmap.CTRL_CLEAR if clear else 0)))

    def disable(self) -> None:
        self._run(_op_write(regmap.CTRL, 0))

    def clear(self) -> None:
        """Restart statistics and the RAM write pointer, keeping ``we`` as it is."""
        we = self._run(_op_read(regmap.CTRL)) & regmap.CTRL_WE
        self._run(_op_write(regmap.CTRL, we | regmap.CTRL_CLEAR))

    def set_alarm_lat(self, cycles: int) -> None:
        self._run(_op_write(regmap.ALARM_LAT, _check_alarm_lat(cycles, self.cnt_width)))

    def clear_flags(
        self, alarm: bool = True, saturated: bool = True, orphan_ack: bool = True,
        overrun: bool = True,
    ) -> None:
        self._run(_op_write(regmap.STATUS, _status_bits(alarm, saturated, orphan_ack, overrun)))

    def read_samples(self, count: int | None = None) -> list[int]:
        """RAM entries 0..count-1 in cycles (default: the min(num, depth) valid ones)."""
        return self._run(_op_samples(count, self.depth))

    def dump(self) -> dict[str, Any]:
        """Registers and valid samples as the ``latency-ip-dump`` JSON document."""
        snap = self.snapshot()
        samples = self.read_samples(min(snap.num, self.depth))
        return make_dump(snap, samples, self.clock_hz, self.cnt_width, self.depth)


class AsyncLatencyIP(LatencyIP):
    """Awaitable driver for an :class:`AsyncBackend` (the cocotb bus)."""

    backend: Any

    def __init__(self, backend: AsyncBackend, **kwargs: Any) -> None:
        super().__init__(backend, **kwargs)  # type: ignore[arg-type]

    async def _arun(self, gen: OpGen) -> Any:
        try:
            op = next(gen)
            while True:
                if op.write:
                    await self.backend.write32(op.window, op.offset, op.value)
                    op = gen.send(0)
                else:
                    op = gen.send(await self.backend.read32(op.window, op.offset))
        except StopIteration as stop:
            return stop.value

    async def probe(self) -> tuple[int, int]:  # type: ignore[override]
        self.cnt_width, self.depth = await self._arun(_op_info())
        return self.cnt_width, self.depth

    async def snapshot(self) -> regmap.Snapshot:  # type: ignore[override]
        return await self._arun(_op_snapshot())

    async def enable(self, clear: bool = False) -> None:  # type: ignore[override]
        flags = regmap.CTRL_WE | (regmap.CTRL_CLEAR if clear else 0)
        await self._arun(_op_write(regmap.CTRL, flags))

    async def disable(self) -> None:  # type: ignore[override]
        await self._arun(_op_write(regmap.CTRL, 0))

    async def clear(self) -> None:  # type: ignore[override]
        we = await self._arun(_op_read(regmap.CTRL)) & regmap.CTRL_WE
        await self._arun(_op_write(regmap.CTRL, we | regmap.CTRL_CLEAR))

    async def set_alarm_lat(self, cycles: int) -> None:  # type: ignore[override]
        await self._arun(_op_write(regmap.ALARM_LAT, _check_alarm_lat(cycles, self.cnt_width)))

    async def clear_flags(  # type: ignore[override]
        self, alarm: bool = True, saturated: bool = True, orphan_ack: bool = True,
        overrun: bool = True,
    ) -> None:
        bits = _status_bits(alarm, saturated, orphan_ack, overrun)
        await self._arun(_op_write(regmap.STATUS, bits))

    async def read_samples(self, count: int | None = None) -> list[int]:  # type: ignore[override]
        return await self._arun(_op_samples(count, self.depth))

    async def dump(self) -> dict[str, Any]:  # type: ignore[override]
        snap = await self.snapshot()
        samples = await self.read_samples(min(snap.num, self.depth))
        return make_dump(snap, samples, self.clock_hz, self.cnt_width, self.depth)


def make_dump(
    snap: regmap.Snapshot, samples: list[int], clock_hz: float, cnt_width: int, depth: int
) -> dict[str, Any]:
    """The JSON RAM-dump document read back by :func:`irqlab.measure.readers.load`."""
    return {
        "format": "latency-ip-dump",
        "clock_hz": clock_hz,
        "cnt_width": cnt_width,
        "depth": depth,
        "registers": snap.as_dict(),
        "samples_cycles": list(samples),
    }


# ---------------------------------------------------------------------------
# back ends
# ---------------------------------------------------------------------------


class MmapBackend:
    """Both AXI-Lite windows mapped from a file: ``/dev/mem``, ``/dev/uioN`` or a test file.

    ``regs_offset``/``ram_offset`` are file offsets (physical addresses for
    ``/dev/mem``; ``N * page_size`` for UIO map N). Offsets need not be page
    aligned. Accesses are single aligned 32-bit loads/stores through a
    memoryview cast, as AXI-Lite requires.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        regs_offset: int,
        ram_offset: int,
        *,
        depth: int = regmap.DEFAULT_DEPTH,
    ) -> None:
        self.path = os.fspath(path)
        self._fd = os.open(self.path, os.O_RDWR | os.O_SYNC)
        self._maps: list[mmap.mmap] = []
        self._views: dict[str, tuple[memoryview, int, int]] = {}
        try:
            self._views[REGS] = self._map(regs_offset, regmap.S01_SPAN)
            self._views[RAM] = self._map(ram_offset, regmap.ram_span(depth))
        except BaseException:
            self.close()
            raise

    @classmethod
    def uio(
        cls, path: str | os.PathLike[str], regs_map: int = 1, ram_map: int = 0,
        depth: int = regmap.DEFAULT_DEPTH,
    ) -> MmapBackend:
        """A UIO device whose maps are the two windows (map N at offset N * page size)."""
        page = mmap.PAGESIZE
        return cls(path, regs_map * page, ram_map * page, depth=depth)

    def _map(self, offset: int, span: int) -> tuple[memoryview, int, int]:
        if offset < 0 or offset % 4:
            raise ValueError(f"window offset: 0x{offset:x} must be a non-negative multiple of 4")
        base = offset - offset % mmap.ALLOCATIONGRANULARITY
        delta = offset - base
        mm = mmap.mmap(self._fd, delta + span, mmap.MAP_SHARED,
                       mmap.PROT_READ | mmap.PROT_WRITE, offset=base)
        self._maps.append(mm)
        return memoryview(mm).cast("I"), delta // 4, span

    def _index(self, window: str, offset: int) -> tuple[memoryview, int]:
        view, first, span = self._views[window]
        if offset % 4 or not 0 <= offset < span:
            raise BusError(f"{window}+0x{offset:x}: outside the window or not word aligned")
        return view, first + offset // 4

    def read32(self, window: str, offset: int) -> int:
        view, i = self._index(window, offset)
        return int(view[i])

    def write32(self, window: str, offset: int, value: int) -> None:
        view, i = self._index(window, offset)
        view[i] = value & 0xFFFF_FFFF

    def close(self) -> None:
        for _, (view, _, _) in self._views.items():
            view.release()
        self._views.clear()
        for mm in self._maps:
            mm.close()
        self._maps.clear()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> MmapBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class CocotbBackend:
    """The IP's two AXI-Lite slaves driven by cocotbext-axi ``AxiLiteMaster`` objects."""

    def __init__(self, s00: Any, s01: Any) -> None:
        self.masters = {RAM: s00, REGS: s01}

    async def read32(self, window: str, offset: int) -> int:
        resp = await self.masters[window].read(offset, 4)
        if int(resp.resp) != 0:
            raise BusError(f"{window}+0x{offset:x}: read answered {resp.resp!r}")
        return int.from_bytes(resp.data, "little")

    async def write32(self, window: str, offset: int, value: int) -> None:
        resp = await self.masters[window].write(offset, value.to_bytes(4, "little"))
        if int(resp.resp) != 0:
            raise BusError(f"{window}+0x{offset:x}: write answered {resp.resp!r}")
