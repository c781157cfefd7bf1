"""Latency statistics shared by hardware (Latencies IP) and software measurements.

One definition of each figure, used for IP RAM dumps, cyclictest histograms,
the simulator's and the runtime's recorders alike (docs/measure.md):

* average, median, max, min;
* jitter: the larger distance of max or min from the average (LATENCY-IP §5.3);
* deviation: the sample standard deviation, divisor n - 1 (LATENCY-IP Eq. 4);
* the sample-size rule n = z^2 p (1 - p) / e^2, rounded up (LATENCY-IP Eq. 3;
  385 for 95 % confidence and 5 % error);
* fixed-width histograms.

Design principles: samples are nanoseconds as float64 (integer cycles and
integer ns convert exactly); an empty sample set is an error, never a NaN
table; with a single sample the deviation is undefined and reported as None.
Mean and deviation use a two-pass algorithm in float64, so they equal the
textbook formulas to rounding.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from statistics import NormalDist

import numpy as np


@dataclass(frozen=True)
class LatencyStats:
    """Summary of one set of latency samples, in ns."""

    n: int
    average: float
    median: float
    max: float
    min: float
    jitter: float
    dev: float | None  # None when n == 1 (Eq. 4 divides by n - 1)

    def as_dict(self) -> dict[str, float | int | None]:
        return asdict(self)


def as_array(samples: Iterable[float] | np.ndarray) -> np.ndarray:
    arr = np.asarray(list(samples) if not isinstance(samples, np.ndarray) else samples,
                     dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"samples: expected a flat sequence, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError("samples: no samples (statistics need at least one)")
    bad = np.flatnonzero(~np.isfinite(arr) | (arr < 0))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"samples[{i}]: {float(arr[i])!r} is not a finite non-negative latency")
    return arr


def summarize(samples: Iterable[float] | np.ndarray) -> LatencyStats:
    """Average, median, max, min, jitter (§5.3) and deviation (Eq. 4)."""
    x = as_array(samples)
    n = int(x.size)
    avg = float(np.mean(x))
    hi = float(np.max(x))
    lo = float(np.min(x))
    dev = float(math.sqrt(float(np.sum((x - avg) ** 2)) / (n - 1))) if n > 1 else None
    return LatencyStats(
        n=n,
        average=avg,
        median=float(np.median(x)),
        max=hi,
        min=lo,
        jitter=max(hi - avg, avg - lo),
        dev=dev,
    )


def z_value(confidence: float) -> float:
    """Two-sided standard normal quantile (1.96 for 95 %)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence: {confidence} must be strictly between 0 and 1")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def sample_size(confidence: float = 0.95, error: float = 0.05, proportion: float = 0.5) -> int:
    """LATENCY-IP Eq. 3 for an infinite population, rounded up: 385 for 95 %/5 %."""
    if not 0.0 < error < 1.0:
        raise ValueError(f"error: {error} must be strictly between 0 and 1")
    if not 0.0 < proportion < 1.0:
        raise ValueError(f"proportion: {proportion} must be strictly between 0 and 1")
    z = z_value(confidence)
    n = z * z * proportion * (1.0 - proportion) / (error * error)
    # guard against 384.00000000001-style float noise before rounding up
    return max(1, math.ceil(round(n, 9)))


@dataclass(frozen=True)
class Histogram:
    """Counts of samples in [edges[i], edges[i+1]); the last bin includes its right edge."""

    edges: list[float]
    counts: list[int]

    def rows(self) -> list[tuple[float, float, int]]:
        return [(self.edges[i], self.edges[i + 1], c) for i, c in enumerate(self.counts)]


def histogram(samples: Iterable[float] | np.ndarray, bin_ns: float | None = None,
              bins: int = 20) -> Histogram:
    """Fixed-width histogram; ``bin_ns`` sets the width (bins aligned to multiples of it)."""
    x = as_array(samples)
    lo, hi = float(np.min(x)), float(np.max(x))
    if bin_ns is not None:
        if not (bin_ns > 0 and math.isfinite(bin_ns)):
            raise ValueError(f"bin width: {bin_ns} must be a positive number of ns")
        start = math.floor(lo / bin_ns) * bin_ns
        nbins = max(1, math.floor((hi - start) / bin_ns) + 1)
        if nbins > 1_000_000:
            raise ValueError(f"bin width: {bin_ns} ns gives {nbins} bins (limit 1000000)")
        edges = [start + i * bin_ns for i in range(nbins + 1)]
    else:
        if bins < 1:
            raise ValueError(f"bins: {bins} must be at least 1")
        if hi == lo:
            edges = [lo, lo + 1.0]
        else:
            edges = list(np.linspace(lo, hi, bins + 1))
    counts, _ = np.histogram(x, bins=np.asarray(edges))
    return Histogram(edges=[float(e) for e in edges], counts=[int(c) for c in counts])
