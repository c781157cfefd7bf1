"""Synthesis sanity check of the Latencies IP (GHDL synthesis, plus yosys when installed).

Runs ``../synth/synth.sh``: GHDL must synthesize the VHDL-2008 source and
recognise the sample RAM; with yosys present the netlist is mapped to Xilinx
UltraScale+ cells, and the result must be latch-free with the sample RAM in
one RAMB18 block (512 x 16, LATENCY-IP Table 2).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "synth" / "synth.sh"

pytestmark = pytest.mark.skipif(shutil.which("ghdl") is None, reason="GHDL not installed")


def cells(stat: str) -> dict[str, int]:
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^\s+(\w+)\s+(\d+)$", stat, re.M)}


def test_synthesizes_with_block_ram(tmp_path: Path) -> None:
    run = subprocess.run(["bash", str(SCRIPT), str(tmp_path)], capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert 'found RAM "ram", width: 16 bits, depth: 512' in run.stderr
    netlist = (tmp_path / "latency_ip_synth.v").read_text()
    assert "module latency_ip" in netlist
    if shutil.which("yosys") is None:
        pytest.skip("yosys not installed: GHDL synthesis checked only")
    assert (tmp_path / "latches.txt").read_text().strip() == ""
    c = cells((tmp_path / "stat.txt").read_text())
    assert c.get("RAMB18E2") == 1, c
    assert not any(k.startswith("LD") for k in c), c  # no latches after mapping
    luts = sum(v for k, v in c.items() if k.startswith("LUT"))
    ffs = sum(v for k, v in c.items() if k.startswith("FD"))
    assert 0 < luts < 600 and 100 < ffs < 400, (luts, ffs)
