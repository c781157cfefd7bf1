"""``irqlab run`` with a kernel upcall (a model's nic with ``upcall: {mode:
kernel}``): an eBPF
count handler in the network bottom half under a kernel-side budget, the
rest of a UDP flood on the source's I/O class. Needs root (CAP_BPF,
CAP_NET_ADMIN); skipped with the kernel's reason otherwise."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from irqlab import runtime
from irqlab.cli import main

SCENARIO = """\
machine: {cpus: 1, path: quest}
simulation: {duration: 500ms}
vcpus:
  - {name: ctl, policy: sporadic, budget: 1ms, period: 10ms}
  - {name: bulk, policy: sporadic, budget: 5ms, period: 50ms}
  - {name: io.flood, kind: io, policy: pibs, utilization: 5%, io_class: flood}
tasks:
  - {name: control, vcpu: ctl, period: 10ms, program: [{compute: 600us}]}
devices:
  - {name: flood, kind: nic, class: flood, arrival: {kind: flood, interval: 20us},
     top_half: 0us, bottom_half: 20us, packet: 64B,
     upcall: {mode: kernel, budget: 500us, period: 10ms}}
"""


def test_kernel_upcall_model_reports_kernel_and_class_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scen = _probe(tmp_path)
    try:
        runtime.run(scen, 10_000_000)  # probe: privileges and kernel support
    except runtime.RuntimeUnavailable as e:
        pytest.skip(f"kernel upcalls unavailable here: {e}")
    code = main(["run", str(scen), "--out", str(tmp_path / "out")])
    assert code == 0
    printed = capsys.readouterr().out
    assert "kernel upcall flood (tc, count)" in printed
    rep = json.loads((tmp_path / "out" / "run.json").read_text())["runtime"]
    (k,) = rep["kernel_upcalls"]
    s = k["stats"]
    assert s["seen"] == s["handled"] + s["deferred"] + s["filtered"] + s["orphaned"]
    assert s["handled"] > 0 and s["deferred"] > 0
    assert k["budget_time_ns"] == 500_000 and k["budget_period_ns"] == 10_000_000
    flood = next(e for e in rep["events"] if e["name"] == "io.flood")
    assert flood["items"] > 0


def test_without_bpf_privileges_it_refuses_or_falls_back_when_asked(tmp_path: Path) -> None:
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("needs root and util-linux setpriv to drop CAP_BPF for the check")
    caps = "-bpf,-net_admin,-sys_admin,-perfmon"
    prefix = [setpriv, "--bounding-set", caps, "--inh-caps", caps]
    scen = tmp_path / "k.yaml"
    scen.write_text(SCENARIO)
    cmd = [*prefix, sys.executable, "-m", "irqlab", "run", str(scen), "--out", str(tmp_path / "o")]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "not permitted" in run.stderr, run.stderr
    scen.write_text(SCENARIO.replace("period: 10ms}}", "period: 10ms, fallback: true}}"))
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    rep = json.loads((tmp_path / "o" / "run.json").read_text())["runtime"]
    (k,) = rep["kernel_upcalls"]
    assert k["stats"] is None and "not permitted" in k["fallback"]
    assert any("every event takes the fd's I/O class" in w for w in rep["warnings"])
    flood = next(e for e in rep["events"] if e["name"] == "io.flood")
    assert flood["items"] > 0


def _kupcall_programs() -> list[str] | None:
    """Loaded kernel-upcall programs per bpftool, or None without bpftool."""
    bpftool = shutil.which("bpftool")
    if bpftool is None:
        return None
    out = subprocess.run([bpftool, "prog", "show"], capture_output=True, text=True, timeout=10)
    return [line for line in out.stdout.splitlines() if "kupcall_" in line]


def test_sigint_and_sigterm_detach_the_kernel_upcall(tmp_path: Path) -> None:
    import signal
    import time

    scen = tmp_path / "k.yaml"
    scen.write_text(SCENARIO.replace("duration: 500ms", "duration: 30s"))
    assert "duration: 30s" in scen.read_text()
    try:
        runtime.run(_probe(tmp_path), 10_000_000)
    except runtime.RuntimeUnavailable as e:
        pytest.skip(f"kernel upcalls unavailable here: {e}")
    if _kupcall_programs() is None:
        pytest.skip("bpftool is not installed (make setup installs it)")
    for sig in (signal.SIGINT, signal.SIGTERM):
        out = tmp_path / f"out-{sig.name}"
        proc = subprocess.Popen(
            [sys.executable, "-m", "irqlab", "run", str(scen), "--out", str(out)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        deadline = time.monotonic() + 15
        while not _kupcall_programs() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _kupcall_programs(), "the kernel upcall never showed up in bpftool"
        time.sleep(1.0)  # loaded at registration; let the run start and flood
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=20)
        assert proc.returncode == 0, stderr
        assert "(interrupted)" in stdout
        rep = json.loads((out / "run.json").read_text())["runtime"]
        s = rep["kernel_upcalls"][0]["stats"]
        assert s["seen"] == s["handled"] + s["deferred"] + s["filtered"] + s["orphaned"]
        # The kernel frees a detached program after an RCU grace period.
        deadline = time.monotonic() + 5
        while _kupcall_programs() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _kupcall_programs() == [], f"left loaded after {sig.name}"


def _probe(tmp_path: Path) -> Path:
    """The model, written out (runs briefly to probe for BPF support)."""
    probe = tmp_path / "probe.yaml"
    probe.write_text(SCENARIO)
    return probe
