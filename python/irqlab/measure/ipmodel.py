"""Cycle-level reference model of the Latencies IP.

An independent Python description of what ``hdl/latency_ip`` must do, one
clock edge at a time, used by the cocotb test bench to predict the IP's
registers and RAM exactly, and usable on its own as a software twin of the
IP. It implements LATENCY-IP Eq. 2 (latency = ack_in edge - irq_in edge, in
cycles) and the corner cases that ``hdl/latency_ip/README.md`` defines:

* an ``ack_in`` edge with nothing pending is ignored and sets ``orphan_ack``;
* an ``irq_in`` edge while a measurement is pending is ignored (the interval
  keeps running from the first edge) and sets ``overrun``;
* ``ack_in`` and ``irq_in`` edges on the same clock: close the pending
  interval and start a new one; with nothing pending record a latency of 0;
* the counter saturates at ``2**width - 1``; such a sample is recorded as that
  value and sets ``saturated``;
* once the RAM is full, later samples still update last/max/min/num but are not
  stored, and ``full`` is set;
* ``we = 0`` ignores both inputs and abandons an interval in progress;
* reset: ``min`` is all ones, ``max``/``last``/``num`` are 0, lines that are
  high when reset is released do not count as edges;
* the alarm (latency > ``alarm_lat``) is sticky until written 1 to clear.

The model works on the levels the IP samples after its input synchronizers;
the synchronizers delay both inputs equally and do not change latencies.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from irqlab.measure import regmap


@dataclass
class LatencyIPModel:
    """Software twin of the IP's measurement core (no bus timing)."""

    cnt_width: int = regmap.DEFAULT_CNT_WIDTH
    depth: int = regmap.DEFAULT_DEPTH
    we: bool = False
    alarm_lat: int = -1  # -1: reset value, all ones
    pending: bool = False
    cnt: int = 0
    last: int = 0
    max: int = 0
    min: int = -1
    num: int = 0
    ram: list[int] = field(default_factory=list)
    full: bool = False
    alarm: bool = False
    saturated: bool = False
    orphan_ack: bool = False
    overrun: bool = False
    _irq_prev: bool = True
    _ack_prev: bool = True

    def __post_init__(self) -> None:
        if not 2 <= self.cnt_width <= 24:
            raise ValueError(f"cnt_width: {self.cnt_width} outside 2..24")
        if self.depth < 1:
            raise ValueError(f"depth: {self.depth} must be at least 1")
        if self.alarm_lat < 0:
            self.alarm_lat = self.cnt_max
        if self.min < 0:
            self.min = self.cnt_max

    @property
    def cnt_max(self) -> int:
        return (1 << self.cnt_width) - 1

    def clear(self) -> None:
        """CTRL.clear: restart statistics, RAM write pointer and flags."""
        self.pending = False
        self.cnt = 0
        self.last = 0
        self.max = 0
        self.min = self.cnt_max
        self.num = 0
        self.ram = []
        self.full = False
        self.alarm = self.saturated = self.orphan_ack = self.overrun = False

    def write_status(self, word: int) -> None:
        """Write-1-to-clear of the sticky STATUS bits."""
        if word & regmap.ST_ALARM:
            self.alarm = False
        if word & regmap.ST_SATURATED:
            self.saturated = False
        if word & regmap.ST_ORPHAN_ACK:
            self.orphan_ack = False
        if word & regmap.ST_OVERRUN:
            self.overrun = False

    def status(self) -> regmap.Status:
        return regmap.Status(
            alarm=self.alarm,
            full=self.full,
            saturated=self.saturated,
            orphan_ack=self.orphan_ack,
            overrun=self.overrun,
            pending=self.pending,
        )

    def step(self, irq: bool, ack: bool) -> int | None:
        """Advance one clock edge with the sampled input levels.

        Returns the latency recorded on this edge, or None.
        """
        irq_rise = irq and not self._irq_prev
        ack_rise = ack and not self._ack_prev
        self._irq_prev, self._ack_prev = irq, ack
        if not self.we:
            self.pending = False
            return None
        value: int | None = None
        if self.pending:
            if ack_rise:
                value = self.cnt
                if irq_rise:
                    self.cnt = 1
                else:
                    self.pending = False
            else:
                if irq_rise:
                    self.overrun = True
                self.cnt = min(self.cnt + 1, self.cnt_max)
        elif irq_rise and ack_rise:
            value = 0
        elif irq_rise:
            self.pending = True
            self.cnt = 1
        elif ack_rise:
            self.orphan_ack = True
        if value is not None:
            self._record(value)
        return value

    def idle(self, cycles: int, irq: bool = False, ack: bool = False) -> None:
        """Advance ``cycles`` edges with constant input levels."""
        for _ in range(cycles):
            self.step(irq, ack)

    def _record(self, value: int) -> None:
        self.last = value
        self.max = max(self.max, value)
        self.min = min(self.min, value)
        self.num = min(self.num + 1, 0xFFFF_FFFF)
        if not self.full:
            self.ram.append(value)
            if len(self.ram) == self.depth:
                self.full = True
        if value > self.alarm_lat:
            self.alarm = True
        if value == self.cnt_max:
            self.saturated = True

    def run(self, levels: list[tuple[bool, bool]]) -> list[int]:
        """Feed a per-cycle list of (irq, ack) levels; return recorded latencies."""
        out = []
        for irq, ack in levels:
            v = self.step(irq, ack)
            if v is not None:
                out.append(v)
        return out
