"""Register map of the irqlab Latencies IP (``hdl/latency_ip``).

The single source of truth for offsets and bit positions on the Python side;
``hdl/latency_ip/README.md`` documents the same map for hardware users and the
VHDL (``hdl/latency_ip/src/latency_ip.vhd``) implements it. The IP follows
LATENCY-IP Table 2: a sample RAM behind AXI-Lite slave ``s00`` and the
``we``/``alarm_lat``/``last``/``max``/``min``/``num``/alarm data behind
``s01``.
"""

from __future__ import annotations

from dataclasses import dataclass

# s01 byte offsets
CTRL = 0x00  # RW: bit0 we, bit1 clear (write 1: restart statistics; reads 0)
ALARM_LAT = 0x04  # RW: alarm threshold in cycles (reset: all ones = never)
LAST = 0x08  # RO
MAX = 0x0C  # RO (reset 0)
MIN = 0x10  # RO (reset all ones)
NUM = 0x14  # RO, 32 bits, saturating
STATUS = 0x18  # RO / write-1-to-clear for the sticky bits
INFO = 0x1C  # RO: [7:0] counter width, [31:8] RAM depth
ID = 0x20  # RO: 0x4C415431 ("LAT1")

S01_SPAN = 0x40  # bytes decoded by s01 (S01_ADDR_WIDTH = 6)

CTRL_WE = 1 << 0
CTRL_CLEAR = 1 << 1

ST_ALARM = 1 << 0
ST_FULL = 1 << 1
ST_SATURATED = 1 << 2
ST_ORPHAN_ACK = 1 << 3
ST_OVERRUN = 1 << 4
ST_PENDING = 1 << 5
W1C_MASK = ST_ALARM | ST_SATURATED | ST_ORPHAN_ACK | ST_OVERRUN

IP_ID = 0x4C415431

DEFAULT_CNT_WIDTH = 16  # LATENCY-IP Table 2
DEFAULT_DEPTH = 512  # LATENCY-IP Table 2
DEFAULT_CLOCK_HZ = 100_000_000  # LATENCY-IP §5: the PL runs at 100 MHz

REG_NAMES = {
    "ctrl": CTRL,
    "alarm_lat": ALARM_LAT,
    "last": LAST,
    "max": MAX,
    "min": MIN,
    "num": NUM,
    "status": STATUS,
    "info": INFO,
    "id": ID,
}


def ram_span(depth: int) -> int:
    """Bytes decoded by s00 for a RAM of ``depth`` entries (next power of two x 4)."""
    span = 4
    while span < 4 * depth:
        span *= 2
    return span


@dataclass(frozen=True)
class Status:
    """Decoded STATUS register."""

    alarm: bool
    full: bool
    saturated: bool
    orphan_ack: bool
    overrun: bool
    pending: bool

    @classmethod
    def decode(cls, word: int) -> Status:
        return cls(
            alarm=bool(word & ST_ALARM),
            full=bool(word & ST_FULL),
            saturated=bool(word & ST_SATURATED),
            orphan_ack=bool(word & ST_ORPHAN_ACK),
            overrun=bool(word & ST_OVERRUN),
            pending=bool(word & ST_PENDING),
        )

    def encode(self) -> int:
        return (
            (ST_ALARM if self.alarm else 0)
            | (ST_FULL if self.full else 0)
            | (ST_SATURATED if self.saturated else 0)
            | (ST_ORPHAN_ACK if self.orphan_ack else 0)
            | (ST_OVERRUN if self.overrun else 0)
            | (ST_PENDING if self.pending else 0)
        )


@dataclass(frozen=True)
class Snapshot:
    """All s01 registers read in one pass."""

    we: bool
    alarm_lat: int
    last: int
    max: int
    min: int
    num: int
    status: Status

    def as_dict(self) -> dict[str, object]:
        return {
            "we": self.we,
            "alarm_lat": self.alarm_lat,
            "last": self.last,
            "max": self.max,
            "min": self.min,
            "num": self.num,
            "status": self.status.__dict__.copy(),
        }
