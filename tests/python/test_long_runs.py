"""Long simulations: progress between slices, Ctrl-C ends the run at the
time reached with the metrics marked partial (API: SimulationInterrupted;
CLI: outputs written, exit 130), and a sliced run equals the one-call run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from irqlab.model import load, scenario_path
from irqlab.sim import SimulationInterrupted

PATH = scenario_path("usb-priority-inversion")


def test_progress_callback_sees_time_advance() -> None:
    seen: list[tuple[int, int]] = []
    r = load(PATH).simulate(duration_ns=300_000_000, progress=lambda n, d: seen.append((n, d)))
    assert seen and seen[-1] == (300_000_000, 300_000_000)
    assert [n for n, _ in seen] == sorted({n for n, _ in seen})  # strictly increasing
    assert not r.partial and "partial" not in r.metrics
    # slices give exactly the one-call run
    assert r.metrics == load(PATH).simulate(duration_ns=300_000_000).metrics


def test_progress_line_shows_events_per_second(monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """``progress=True``: the line gets the simulator's event count (the
    last call sees every event of the run) and prints events/s."""
    import irqlab.sim

    calls: list[tuple[int, int, int]] = []

    class Recording(irqlab.sim.ProgressLine):
        def __call__(self, now_ns: int, duration_ns: int, events: int = 0) -> None:
            calls.append((now_ns, duration_ns, events))
            super().__call__(now_ns, duration_ns, events)

    monkeypatch.setattr(irqlab.sim, "ProgressLine", Recording)
    r = load(PATH).simulate(duration_ns=200_000_000, progress=True)
    assert calls[-1] == (200_000_000, 200_000_000, r.metrics["events"])
    assert [e for _, _, e in calls] == sorted(e for _, _, e in calls)
    err = capsys.readouterr().err
    assert "events/s" in err and "ETA" in err and "simulated 0.200 s of 0.2 s (100 %)" in err


def test_ctrl_c_gives_partial_metrics(sigint: None) -> None:
    def interrupt(now: int, duration: int) -> None:
        if now >= 50_000_000:
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(SimulationInterrupted) as e:
        load(PATH).simulate(duration_ns=100_000_000_000, progress=interrupt)
    m = e.value.result.metrics
    assert e.value.result.partial and m["partial"] is True
    assert 50_000_000 <= m["duration_ns"] < 100_000_000_000
    high = e.value.result.tasks["high"]
    # the high task releases a job every 10 ms: the metrics cover the time reached
    assert high["released"] == pytest.approx(m["duration_ns"] / 10_000_000, abs=1)


def test_cli_ctrl_c_exit_130(tmp_path: Path, sigint: None) -> None:
    out = tmp_path / "out"
    p = subprocess.Popen([sys.executable, "-m", "irqlab", "simulate", str(PATH), "--out",
                          str(out), "--duration", "100000s", "--progress", "--no-plots"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stderr is not None
    err = b""
    while b"simulated" not in err:  # the first progress line: the run is under way
        chunk = os.read(p.stderr.fileno(), 4096)
        assert chunk, "simulate ended before showing progress"
        err += chunk
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    stdout, rest = p.communicate(timeout=120)
    err += rest
    assert p.returncode == 130, err.decode()
    assert b"ETA" in err and b"events/s" in err
    assert b"interrupted: metrics.json covers the first" in err
    m = json.loads((out / "metrics.json").read_text())
    assert m["partial"] is True and 0 < m["duration_ns"] < 100_000 * 10**9
    assert b"(partial: stopped early)" in stdout
