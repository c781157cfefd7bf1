"""The Latencies IP driver over a file-backed mmap (the same code maps /dev/mem or UIO)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from irqlab.measure import readers, regmap
from irqlab.measure.driver import BusError, LatencyIP, MmapBackend

REGS_AT = 0x1000 + 0x40  # not page aligned on purpose
RAM_AT = 0x3000


def word(path: Path, offset: int) -> int:
    with path.open("rb") as fh:
        fh.seek(offset)
        return struct.unpack("<I", fh.read(4))[0]


def put(path: Path, offset: int, value: int) -> None:
    with path.open("r+b") as fh:
        fh.seek(offset)
        fh.write(struct.pack("<I", value))


@pytest.fixture()
def board(tmp_path: Path) -> Path:
    p = tmp_path / "mem.bin"
    p.write_bytes(bytes(0x4000))
    regs = {
        regmap.CTRL: 1, regmap.ALARM_LAT: 200, regmap.LAST: 77, regmap.MAX: 91,
        regmap.MIN: 12, regmap.NUM: 3, regmap.STATUS: regmap.ST_ALARM | regmap.ST_OVERRUN,
        regmap.INFO: (512 << 8) | 16, regmap.ID: regmap.IP_ID,
    }
    for off, v in regs.items():
        put(p, REGS_AT + off, v)
    for i, v in enumerate([12, 91, 77, 5555]):  # the 4th entry is beyond num
        put(p, RAM_AT + 4 * i, v)
    return p


def test_reads_registers_and_samples(board: Path) -> None:
    with MmapBackend(board, REGS_AT, RAM_AT) as be:
        ip = LatencyIP(be)
        assert ip.probe() == (16, 512)
        snap = ip.snapshot()
        assert (snap.we, snap.alarm_lat, snap.last, snap.max, snap.min, snap.num) == (
            True, 200, 77, 91, 12, 3)
        assert snap.status.alarm and snap.status.overrun and not snap.status.full
        assert ip.read_samples() == [12, 91, 77]
        assert ip.read_samples(4) == [12, 91, 77, 5555]
        with pytest.raises(ValueError, match="count: 513"):
            ip.read_samples(513)


def test_writes_land_at_the_documented_offsets(board: Path) -> None:
    with MmapBackend(board, REGS_AT, RAM_AT) as be:
        ip = LatencyIP(be)
        ip.enable(clear=True)
        assert word(board, REGS_AT + regmap.CTRL) == 0b11
        ip.disable()
        assert word(board, REGS_AT + regmap.CTRL) == 0
        ip.set_alarm_lat(1234)
        assert word(board, REGS_AT + regmap.ALARM_LAT) == 1234
        with pytest.raises(ValueError, match="alarm_lat: 65536"):
            ip.set_alarm_lat(65536)
        ip.clear_flags(alarm=True, saturated=False, orphan_ack=True, overrun=False)
        assert word(board, REGS_AT + regmap.STATUS) == regmap.ST_ALARM | regmap.ST_ORPHAN_ACK
        put(board, REGS_AT + regmap.CTRL, 1)
        ip.clear()  # keeps we
        assert word(board, REGS_AT + regmap.CTRL) == 0b11


def test_dump_round_trips_through_the_reader(board: Path, tmp_path: Path) -> None:
    with MmapBackend(board, REGS_AT, RAM_AT) as be:
        doc = LatencyIP(be, clock_hz=100e6).dump()
    assert doc["samples_cycles"] == [12, 91, 77] and doc["registers"]["num"] == 3
    out = tmp_path / "board.ipdump.json"
    out.write_text(json.dumps(doc))
    (d,) = readers.load(out)
    assert list(d.samples_ns) == [120.0, 910.0, 770.0]


def test_wrong_id_and_bad_offsets(board: Path) -> None:
    put(board, REGS_AT + regmap.ID, 0xDEADBEEF)
    with MmapBackend(board, REGS_AT, RAM_AT) as be:
        with pytest.raises(BusError, match="ID reads 0xdeadbeef"):
            LatencyIP(be).probe()
        with pytest.raises(BusError, match="outside the window"):
            be.read32("s01", regmap.S01_SPAN)
        with pytest.raises(BusError, match="not word aligned"):
            be.read32("s00", 2)
    with pytest.raises(ValueError, match="multiple of 4"):
        MmapBackend(board, REGS_AT + 2, RAM_AT)


def test_uio_layout(tmp_path: Path) -> None:
    import mmap

    p = tmp_path / "uio0"
    p.write_bytes(bytes(2 * mmap.PAGESIZE + 4096))
    put(p, mmap.PAGESIZE + regmap.ID, regmap.IP_ID)
    put(p, mmap.PAGESIZE + regmap.INFO, (8 << 8) | 10)
    with MmapBackend.uio(p, regs_map=1, ram_map=0, depth=8) as be:
        assert LatencyIP(be).probe() == (10, 8)
