"""pytest entry point of the Latencies IP test bench (cocotb 2.x + GHDL).

Builds ``../src/latency_ip.vhd`` once with GHDL into a pytest temporary
directory and runs the cocotb tests of ``latency_ip_tb.py`` on two
configurations of the generics: the default (16-bit counter, 512 samples,
LATENCY-IP Table 2) and a small one (6-bit counter, 8 samples, no input
synchronizer, a RAM window larger than the RAM) that makes saturation, a full
RAM and out-of-range reads cheap to reach. A third run feeds 400 samples per
LATENCY-IP Table 4 scenario through the IP and checks the statistics of what
the IP stored against the injected samples and the paper's row.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
from pathlib import Path

import pytest

from irqlab.measure import readers, report, stats, table4

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src" / "latency_ip.vhd"

pytestmark = pytest.mark.skipif(shutil.which("ghdl") is None, reason="GHDL not installed")

SMALL = {"CNT_WIDTH": 6, "DEPTH": 8, "SYNC_STAGES": 0, "S00_ADDR_WIDTH": 6}


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory):
    from cocotb_tools.runner import get_runner

    build = tmp_path_factory.mktemp("sim_build")
    r = get_runner("ghdl")
    r.build(
        sources=[SRC],
        hdl_toplevel="latency_ip",
        build_args=["--std=08"],
        build_dir=build,
        always=True,
    )
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    return r, build


def run_tb(runner, name: str, tests: list[str] | None, parameters: dict[str, int], env=None):
    from cocotb_tools.check_results import get_results

    r, build = runner
    results = build / f"{name}.xml"
    try:
        r.test(
            hdl_toplevel="latency_ip",
            test_module="latency_ip_tb",
            testcase=tests,
            test_args=["--std=08"],
            parameters=parameters,
            build_dir=build,
            test_dir=build,
            results_xml=str(results),
            extra_env=env or {},
        )
    except SystemExit as exc:  # the cocotb runner exits on failing cocotb tests
        pytest.fail(f"cocotb run {name} failed (exit {exc.code}); see the log above")
    n, failed = get_results(results)
    assert failed == 0, f"{failed} of {n} cocotb tests failed"
    return n


DIRECTED = [
    "reset_values", "random_pulse_trains", "ack_without_irq", "second_irq_before_ack",
    "simultaneous_edges", "write_enable_low", "alarm_sticky", "saturation_and_full",
    "axi_backpressure",
]


def test_default_generics(runner) -> None:
    assert run_tb(runner, "default", DIRECTED, {}) == len(DIRECTED)


def test_small_generics(runner) -> None:
    assert run_tb(runner, "small", DIRECTED, SMALL) == len(DIRECTED)


def test_table4_scenarios_through_ip(runner, tmp_path: Path) -> None:
    """Set IRQLAB_TABLE4_OUT=DIR to keep the IP dumps and the report."""
    keep = os.environ.get("IRQLAB_TABLE4_OUT")
    out = Path(keep).resolve() if keep else tmp_path / "table4"
    run_tb(runner, "table4", ["table4_scenarios"], {}, env={"IRQLAB_LATENCY_OUT": str(out)})
    datasets = []
    for row in table4.TABLE4:
        name = table4.slug(row.scenario)
        (dump,) = readers.load(out / f"{name}.ipdump.json")
        (injected,) = readers.load(out / f"{name}.injected.json")
        assert dump.name == row.scenario
        assert list(dump.samples_ns) == list(injected.samples_ns)
        s = stats.summarize(dump.samples_ns)
        assert s == stats.summarize(injected.samples_ns)
        assert s.n == table4.SAMPLES >= stats.sample_size(0.95, 0.05)
        assert s.median == row.median and s.max == row.max, row.scenario
        assert abs(s.average - row.avg) <= 0.0125 + 1e-9, (row.scenario, s.average)
        assert math.isclose(s.dev, row.dev, rel_tol=table4.DEV_TOLERANCE), (row.scenario, s.dev)
        if row.scenario != "OpenAMP":  # the paper's OpenAMP jitter is inconsistent
            assert abs(s.jitter - row.jitter) <= 0.0125 + 0.01, (row.scenario, s.jitter)
        datasets.append(dump)
    rep = report.build(datasets, paper=True)
    paths = report.write(rep, out / "report")
    md = paths["md"].read_text()
    assert all(row.scenario in md for row in table4.TABLE4)
    assert paths["png"].stat().st_size > 1000
    rows = paths["csv"].read_text().splitlines()
    assert len(rows) == 1 + len(table4.TABLE4)
    json.loads(paths["json"].read_text())
