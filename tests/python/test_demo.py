"""`irqlab demo` runs end to end and shows the core's decisions."""

from __future__ import annotations

import pytest

from irqlab.cli import main


def test_demo_prints_schedule(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--until", "3"]) == 0
    out = capsys.readouterr().out
    # the bottom half runs on the I/O VCPU with C_max = 10% of 800us
    assert "IOVCPU.ata-bh       80us" in out
    # after its first depletion the eligibility is 300us + 80us / 10% = 1100us
    assert "e=1100us" in out
    assert "bottom half done" in out


def test_demo_rejects_bad_duration(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--until", "-1"]) == 2
    assert "--until: -1.0 must be positive" in capsys.readouterr().err
