"""Statistics shared by hardware and software latency measurements (irqlab.measure.stats)."""

from __future__ import annotations

import math
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from irqlab.measure import stats, table4


def test_summary_hand_checked() -> None:
    s = stats.summarize([10, 20, 30, 40, 100])
    assert (s.n, s.average, s.median, s.max, s.min) == (5, 40.0, 30.0, 100.0, 10.0)
    assert s.jitter == 60.0  # max - avg (60) > avg - min (30)
    # Eq. 4: sqrt(((-30)^2 + (-20)^2 + (-10)^2 + 0 + 60^2) / 4) = sqrt(1250)
    assert s.dev == pytest.approx(math.sqrt(1250.0))


def test_jitter_takes_the_larger_side() -> None:
    s = stats.summarize([100, 100, 100, 10])
    assert s.average == 77.5 and s.jitter == pytest.approx(67.5)  # avg - min


def test_even_median_and_single_sample() -> None:
    assert stats.summarize([4, 1, 3, 2]).median == 2.5
    one = stats.summarize([7])
    assert one.dev is None and one.jitter == 0.0 and one.median == 7.0


@pytest.mark.parametrize("bad, msg", [
    ([], "no samples"),
    ([1.0, float("nan")], r"samples\[1\]"),
    ([1.0, -2.0], r"samples\[1\]: -2.0"),
    ([float("inf")], r"samples\[0\]"),
])
def test_bad_samples_rejected(bad: list[float], msg: str) -> None:
    with pytest.raises(ValueError, match=msg):
        stats.summarize(bad)


@given(st.lists(st.integers(min_value=0, max_value=10**7), min_size=2, max_size=200))
def test_matches_statistics_module(xs: list[int]) -> None:
    s = stats.summarize(xs)
    assert s.average == pytest.approx(statistics.fmean(xs))
    assert s.median == pytest.approx(statistics.median(xs))
    assert s.dev == pytest.approx(statistics.stdev(xs), rel=1e-9, abs=1e-6)
    assert s.jitter == pytest.approx(max(max(xs) - s.average, s.average - min(xs)))


def test_sample_size_eq3() -> None:
    assert stats.sample_size(0.95, 0.05) == 385  # LATENCY-IP §5.3
    assert stats.z_value(0.95) == pytest.approx(1.959964, abs=1e-6)
    # 90 %: z = 1.6449 -> 270.55 -> 271; 99 % / 1 %: 16587.24 -> 16588
    assert stats.sample_size(0.90, 0.05) == 271
    assert stats.sample_size(0.99, 0.01) == 16588
    assert stats.sample_size(0.95, 0.05, proportion=0.1) == 139  # 1.96^2*.09/.0025 = 138.3


@pytest.mark.parametrize("kw, msg", [
    ({"confidence": 1.0}, "confidence"), ({"confidence": 0}, "confidence"),
    ({"error": 0}, "error"), ({"error": 1.2}, "error"), ({"proportion": 1}, "proportion"),
])
def test_sample_size_rejects(kw: dict[str, float], msg: str) -> None:
    with pytest.raises(ValueError, match=msg):
        stats.sample_size(**kw)


def test_histogram_fixed_width() -> None:
    h = stats.histogram([0, 5, 9.99, 10, 25, 30], bin_ns=10)
    assert h.edges == [0, 10, 20, 30, 40]
    assert h.counts == [3, 1, 1, 1]
    h2 = stats.histogram([5, 5, 5], bins=4)
    assert sum(h2.counts) == 3
    with pytest.raises(ValueError, match="bin width"):
        stats.histogram([1, 2], bin_ns=0)


@pytest.mark.parametrize("r", table4.TABLE4, ids=lambda r: r.scenario)
def test_table4_synthetic_samples_match_the_row(r: table4.Row) -> None:
    cycles = table4.synthesize(r)
    assert cycles == table4.synthesize(r)  # deterministic
    s = stats.summarize([10 * c for c in cycles])
    assert s.n == 400
    assert s.median == r.median and s.max == r.max
    assert abs(s.average - r.avg) <= 0.0125 + 1e-9
    assert s.dev == pytest.approx(r.dev, rel=table4.DEV_TOLERANCE)
    if r.scenario != "OpenAMP":  # the paper's row contradicts its own jitter definition
        assert s.jitter == pytest.approx(r.jitter, abs=0.0225)
    else:
        assert s.jitter == pytest.approx(r.max - s.average)
    assert s.min >= r.avg - r.jitter - 1e-9


def test_table4_row_lookup() -> None:
    assert table4.row("xen stress").max == 3330.0
    with pytest.raises(ValueError, match="not a Table 4 row"):
        table4.row("Linux")
