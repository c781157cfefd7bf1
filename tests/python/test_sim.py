"""Simulator from Python: outputs, determinism, Perfetto trace shape, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from irqlab.experiments import quest_table1
from irqlab.sim import simulate, write_outputs


def small(trace: bool = True) -> dict:
    cfg = quest_table1.config(with_cd=True, duration=50_000_000)
    cfg["trace"] = {"enabled": trace}
    return cfg


def test_outputs_are_byte_identical_for_the_same_run(tmp_path: Path) -> None:
    a = write_outputs(simulate(small()), tmp_path / "a")
    b = write_outputs(simulate(small()), tmp_path / "b")
    for fa, fb in zip(a, b, strict=True):
        if fa.suffix == ".json":
            assert fa.read_bytes() == fb.read_bytes(), fa.name
    assert {p.name for p in a} >= {"metrics.json", "trace.json", "cpu_share.png"}


def test_trace_has_cpu_and_server_tracks_counters_and_flows() -> None:
    t = simulate(small()).trace
    ev = t["traceEvents"]
    names = {e["args"]["name"] for e in ev if e["ph"] == "M"}
    assert {"CPU 0", "servers on CPU 0", "VCPU1", "IOVCPU"} <= names
    runs = [e for e in ev if e["ph"] == "X"]
    assert any(e["name"] == "ata.bh" for e in runs), "bottom half on the I/O VCPU track"
    assert any(e["name"] == "irq cdrom" for e in runs)
    assert all(e["dur"] >= 0 and "ts" in e for e in runs)
    assert any(e["ph"] == "C" for e in ev), "budget counters"
    starts = {e["id"] for e in ev if e["ph"] == "s"}
    ends = {e["id"] for e in ev if e["ph"] == "f"}
    assert ends <= starts, "every arrow that ends has started"
    names = {e["name"] for e in ev if e["ph"] == "f"}
    assert names == {"irq->bh", "bh->task"}, "interrupt -> bottom half -> woken task"
    # segments on the CPU track never overlap
    cpu = sorted((e["ts"], e["ts"] + e["dur"]) for e in runs if e["pid"] == 0)
    assert all(a[1] <= b[0] + 1e-9 for a, b in zip(cpu, cpu[1:], strict=False))


def test_trace_disabled_is_small() -> None:
    t = simulate(small(trace=False)).trace
    assert t["traceEvents"] == []


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        (lambda c: c["tasks"][0].update(server=9), "tasks[0].server: 9: no such server"),
        (lambda c: c.update(duration=0), "duration: 0: must be positive"),
        (lambda c: c["servers"][0].update(budget=10**9), "budget 1s exceeds period 500us"),
        (lambda c: c["servers"][0].update(colour="red"), "unknown field `colour`"),
    ],
)
def test_bad_config_is_value_error(patch, message: str) -> None:  # type: ignore[no-untyped-def]
    cfg = small()
    patch(cfg)
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        simulate(cfg)


def test_metrics_json_is_plain_json(tmp_path: Path) -> None:
    files = write_outputs(simulate(small(trace=False)), tmp_path)
    m = json.loads(files[0].read_text())
    assert m["path"] == "quest" and m["tasks"][0]["completed"] >= 0
