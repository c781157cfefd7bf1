"""Colours of the report (``irqlab report``): fixed per name, the same in
every run, and never shared between threads and interrupt handlers.

* A thread (a task, a bottom-half thread, ``ksoftirqd/N``) or a server gets
  :func:`color_of`: a stable hash of its name (BLAKE2s, not Python's
  salted ``hash``) into :data:`THREAD_PALETTE`, 36 colours of 12 hues
  between orange and blue-violet at three lightnesses. The same name has
  the same colour in every run and model; two names of one run may share a
  colour (the timeline's tooltip and the legends name them).
* Top halves (ISRs) are drawn from :data:`ISR_PALETTE` (reds) and softirq
  bottom halves from :data:`SOFTIRQ_PALETTE` (magentas), chosen by the
  device's name the same way. No thread colour lies within 25 degrees of
  hue of either family (``tests/python/test_report_explore.py`` checks it).
* Idle time is :data:`IDLE` (light grey), VCPU switch overhead
  :data:`SWITCH` (dark grey).

Design principles: one source of colours for the timeline (JavaScript gets
the resolved colours in its data, it hashes nothing) and the matplotlib
plots; plain ``#rrggbb`` strings.
"""

from __future__ import annotations

import colorsys
import hashlib

#: hue of the top-half family (degrees) and of the softirq family
ISR_HUE, SOFTIRQ_HUE = 0, 305
#: the hues threads and servers use: 30..265 degrees, nothing near red or magenta
THREAD_HUES = (30, 48, 66, 90, 118, 145, 168, 188, 206, 224, 244, 262)


def _hsl(h: float, s: float, lightness: float) -> str:
    r, g, b = colorsys.hls_to_rgb((h % 360) / 360, lightness, s)
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"


THREAD_PALETTE: tuple[str, ...] = tuple(
    _hsl(h, s, lightness) for lightness, s in ((0.36, 0.75), (0.50, 0.70), (0.66, 0.70))
    for h in THREAD_HUES)
ISR_PALETTE: tuple[str, ...] = tuple(
    _hsl(ISR_HUE + dh, 0.85, lightness) for lightness in (0.42, 0.55, 0.32)
    for dh in (0, -8, 8))
SOFTIRQ_PALETTE: tuple[str, ...] = tuple(
    _hsl(SOFTIRQ_HUE + dh, 0.65, lightness) for lightness in (0.45, 0.60) for dh in (0, 12))
IDLE = "#e6e6e6"
SWITCH = "#555555"


def _index(name: str, n: int) -> int:
    digest = hashlib.blake2s(name.encode("utf-8"), digest_size=4).digest()
    return int.from_bytes(digest, "big") % n


def color_of(name: str) -> str:
    """The colour of a thread or server ``name``: the same in every run."""
    return THREAD_PALETTE[_index(name, len(THREAD_PALETTE))]


def isr_color(device: str) -> str:
    """The colour of the top half of interrupt source ``device`` (a red)."""
    return ISR_PALETTE[_index(device, len(ISR_PALETTE))]


def softirq_color(device: str) -> str:
    """The colour of the softirq bottom half of ``device`` (a magenta)."""
    return SOFTIRQ_PALETTE[_index(device, len(SOFTIRQ_PALETTE))]


def hue_of(color: str) -> float:
    """The hue of a ``#rrggbb`` colour in degrees (0-360)."""
    r, g, b = (int(color[i:i + 2], 16) / 255 for i in (1, 3, 5))
    return colorsys.rgb_to_hls(r, g, b)[0] * 360
