"""Latency measurement: the Latencies IP driver and the shared statistics (docs/measure.md).

* :mod:`~irqlab.measure.regmap`  register map of ``hdl/latency_ip``;
* :mod:`~irqlab.measure.driver`  ``LatencyIP`` / ``AsyncLatencyIP`` with mmap
  and cocotb back ends;
* :mod:`~irqlab.measure.ipmodel` cycle-level reference model of the IP;
* :mod:`~irqlab.measure.stats`   average, median, max, min, jitter, deviation
  (LATENCY-IP Eq. 4), sample size (Eq. 3), histograms;
* :mod:`~irqlab.measure.readers` IP dumps, CSV, cyclictest histograms,
  recorder JSON;
* :mod:`~irqlab.measure.report`  the Table-4-style report (Markdown, CSV, PNG);
* :mod:`~irqlab.measure.table4`  LATENCY-IP Table 4 and matching synthetic samples.

Design principles: one definition of every statistic for hardware and
software measurements; the driver's register sequences are written once and
run unchanged in simulation and on hardware; bad input is rejected with an
error naming the file, field, value and rule.
"""

from irqlab.measure.driver import AsyncLatencyIP, BusError, CocotbBackend, LatencyIP, MmapBackend
from irqlab.measure.ipmodel import LatencyIPModel
from irqlab.measure.readers import Dataset, load
from irqlab.measure.stats import LatencyStats, histogram, sample_size, summarize

__all__ = [
    "AsyncLatencyIP",
    "BusError",
    "CocotbBackend",
    "Dataset",
    "LatencyIP",
    "LatencyIPModel",
    "LatencyStats",
    "MmapBackend",
    "histogram",
    "load",
    "sample_size",
    "summarize",
]
