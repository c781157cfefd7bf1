"""`irqlab guest MODEL.yaml` (python/irqlab/guest.py, docs/kernel.md): a
quest model lowered to the kernel's run=spec workload and run under QEMU;
metrics.json in the simulator's shape that `irqlab report` reads next to
the simulation; refusals that name the field; the Omega_IO the lowering
puts in the bottom half, two-sided; and `irqlab reproduce
usb-priority-inversion-guest` in quick mode with every claim's falsifier.
Skipped, with the reason, only when qemu-system-x86_64 is missing."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from irqlab import guest
from irqlab.cli import main
from irqlab.model import load, scenario_path

ROOT = Path(__file__).resolve().parents[2]
QEMU = shutil.which("qemu-system-x86_64")
needs_qemu = pytest.mark.skipif(
    QEMU is None, reason="qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)")


@pytest.fixture(scope="module")
def kernel() -> Path:
    subprocess.run(["cargo", "build", "--release", "-q", "--target", "x86_64-unknown-linux-gnu"],
                   cwd=ROOT / "kernel", check=True)
    return guest.kernel_image()


def _cell(html: str, key: str) -> Any:
    m = re.search(rf'data-key="{re.escape(key)}" data-value="([^"]*)"', html)
    assert m, key
    return json.loads(m.group(1).replace("&quot;", '"'))


@needs_qemu
def test_guest_writes_metrics_that_report_reads(kernel: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The small shipped model: 10 jobs of the high reader (one read each)
    and 20 reads of the low task, exactly, in the guest as in the
    simulation; `irqlab report` puts both side by side."""
    out = tmp_path / "g"
    assert main(["guest", "usb-guest-small", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "emulated time" in text and "device ttyUSB0: always ready" in text
    m = json.loads((out / "guest" / "metrics.json").read_text())
    sim = json.loads((out / "simulation" / "metrics.json").read_text())
    assert m["clock"] == "emulated" and m["events"] == 0 and m["guest"]["status"] == "pass"
    for met in (m, sim):
        dev = {d["name"]: d for d in met["devices"]}
        assert dev["ttyUSB0"]["handled"] == 10 and dev["ttyUSB0"]["latency"]["count"] == 10
        assert dev["ttyUSB1"]["handled"] == 20 and dev["ttyUSB1"]["latency"]["count"] == 20
        task = {t["name"]: t for t in met["tasks"]}
        assert (task["high"]["released"], task["high"]["completed"]) == (10, 10)
        assert (task["low"]["released"], task["low"]["completed"]) == (1, 1)
        assert (task["hog"]["released"], task["hog"]["completed"]) == (1, 0)
    dev = {d["name"]: d for d in m["devices"]}
    assert dev["ttyUSB0"]["bytes"] == 10 * guest.PACKET_PAYLOAD
    # each request: a read (TRB queued -> task resumed, 28 us or more in the
    # guest) plus the model's Omega_Main of 10 us; the high task's job adds
    # 200 us of its own CPU time
    assert 38_000 <= dev["ttyUSB0"]["latency"]["min_ns"] <= dev["ttyUSB0"]["latency"]["max_ns"]
    high = {t["name"]: t for t in m["tasks"]}["high"]["response"]
    assert high["min_ns"] >= 248_000 and high["count"] == 10
    assert sum(h[2] for h in high["histogram_ns"]) == 10
    # the CPU-bound hog is held to its budget by the guest's own accounting
    hog = {v["name"]: v for v in m["guest"]["budget"]}["hog"]
    assert hog["cpu_bound"] and hog["period_max_ns"] <= 5_000_000 + guest.BUDGET_TOLERANCE_NS
    assert guest.budget_violations(m["guest"]["budget"], served_fraction=0.0) == []
    # the metrics validate against the simulator's schema, less what the guest
    # does not measure (per-CPU accounting, replenishment queues)
    import jsonschema

    from irqlab.schemas import metrics_schema

    s = metrics_schema()
    s["$defs"]["CpuMetrics"]["required"] = ["schedule_calls", "server_switches"]
    s["$defs"]["ServerMetrics"]["required"] = [
        f for f in s["$defs"]["ServerMetrics"]["required"] if f not in ("max_queue", "mean_queue")]
    jsonschema.validate(m, s)
    # irqlab report reads it, next to the simulation
    html_path = tmp_path / "r.html"
    assert main(["report", str(out / "simulation"), str(out / "guest"), "--out", str(html_path),
                 "--names", "sim,guest"]) == 0
    html = html_path.read_text()
    assert _cell(html, "guest.devices.ttyUSB0.handled") == 10
    assert _cell(html, "guest.devices.ttyUSB1.handled") == 20
    assert _cell(html, "sim.devices.ttyUSB1.handled") == 20
    assert _cell(html, "guest.tasks.high.completed") == 10
    assert "measured max" in html  # a run without simulator events
    cmp = json.loads((out / "compare.json").read_text())
    assert cmp["clock"] == "emulated" and any(r["name"] == "ttyUSB0" for r in cmp["rows"])


@needs_qemu
def test_compare_guest_flags_the_gaps(kernel: Path, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    """`irqlab compare --guest`: bound | simulation | guest with compare's
    tolerance; the low reader's bottom halves, 34 us dearer in the guest and
    paced by PIBS at U = 10 %, put its latency beyond it (exit 1)."""
    assert main(["compare", "usb-guest-small", "--guest", "--out", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "simulation       guest" in out
    assert "- device ttyUSB1 latency p50: sim-vs-guest gap" in out, out
    assert (tmp_path / "guest" / "metrics.json").exists()
    assert (tmp_path / "simulation" / "metrics.json").exists()


def _small() -> dict[str, Any]:
    return load(scenario_path("usb-guest-small")).sim_config


@needs_qemu
def test_omega_io_is_spent_in_the_bottom_half(kernel: Path) -> None:
    """The lowering puts each device's Omega_IO in its fd's bottom half
    (`fd N CLASS bh=T`): the low class's I/O VCPU then runs at least 20 x
    300 us; with Omega_IO 0 (the falsifier) far less."""
    def io_low_busy(omega_io: int) -> int:
        cfg = _small()
        for d in cfg["devices"]:
            d["omega_io"] = omega_io
        plan = guest.lower(cfg)
        assert ("bh=" in plan.spec) == (omega_io > 0)
        m = guest.metrics(guest.run(plan), cfg)
        assert {d["name"]: d["handled"] for d in m["devices"]} == {"ttyUSB0": 10, "ttyUSB1": 20}
        return {s["name"]: s["busy_ns"] for s in m["servers"]}["io.low"]

    assert io_low_busy(300_000) >= 20 * 300_000
    assert io_low_busy(0) < 20 * 300_000 // 10


@needs_qemu
def test_a_slow_device_is_fed_at_its_rate(kernel: Path) -> None:
    """A device whose model rate delivers a request slower than the guest's
    request path is fed through a FIFO at that rate (host time): its 20
    requests complete, each one packet, and the notes say the run is not
    deterministic. The always-ready device beside it is unchanged."""
    cfg = _small()
    cfg["devices"][1]["rate"] = 6_200  # a 62-byte request every 10 ms
    g = guest.run(guest.lower(cfg))
    assert g.feeders == {"ttyUSB0": "always ready",
                         "ttyUSB1": "paced at 6,200 B/s of host time (FIFO)"}
    m = guest.metrics(g, cfg)
    dev = {d["name"]: d for d in m["devices"]}
    assert dev["ttyUSB1"]["handled"] == 20 and dev["ttyUSB1"]["bytes"] == 20 * 62
    assert dev["ttyUSB0"]["handled"] == 10
    assert any("not deterministic" in n for n in m["guest"]["notes"])


@pytest.mark.parametrize(("change", "field"), [
    (lambda c: c.update(path="linux"), "machine.path: linux"),
    (lambda c: c.update(cpus=2), "machine.cpus: 2"),
    (lambda c: c["devices"][0].update(kind="nic"), "devices[0].kind: nic"),
    (lambda c: c["devices"][1].update(echo_of=0), "devices[1].echo_of: 0"),
    (lambda c: c["devices"][1].update({"class": None}), "devices[1].class"),
    (lambda c: c["xhci"][0]["interrupters"][1].update(moderation=125_000),
     "xhci[0].interrupters[1].moderation: 125000"),
    (lambda c: c["servers"][0].update(policy="deferrable"), "vcpus[0].policy: deferrable"),
    (lambda c: c["servers"][3].update(num=1, den=3), "vcpus[3].utilization: 1/3"),
    (lambda c: c["tasks"][0].update(abort_on_miss=True), "tasks[0].abort_on_miss: True"),
    (lambda c: c["tasks"][0]["release"].update(offset=1_000_000), "tasks[0].offset: 1000000"),
    (lambda c: c["tasks"][2]["program"].insert(0, {"op": "compute", "ns": 1000}),
     "tasks[2].program[1]: forever"),
])
def test_what_the_guest_cannot_run_is_refused_naming_the_field(change: Any, field: str) -> None:
    cfg = _small()
    change(cfg)
    with pytest.raises(guest.GuestUnsupported) as e:
        guest.lower(cfg)
    msg = str(e.value)
    assert msg.startswith(field + ": ") and "\n" not in msg, msg


def test_accelerators() -> None:
    """TCG with -icount (the default), KVM without it where hardware
    virtualization is present (not testable here: docs/kernel.md)."""
    assert guest.accel_args("tcg", False) == ["-accel", "tcg", "-icount", "shift=2,sleep=off"]
    assert guest.accel_args("tcg", True)[-1] == "shift=2,sleep=on"
    assert guest.accel_args("kvm", False) == ["-accel", "kvm", "-cpu", "host"]
    with pytest.raises(ValueError, match="tcg or kvm"):
        guest.accel_args("hvf", False)


def test_refusal_is_one_line_on_the_command_line(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["guest", str(scenario_path("control-and-flood")), "--check"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("irqlab guest: error: devices[") and "\n" not in err, err
    assert "usb-serial" in err


def test_check_prints_the_spec(capsys: pytest.CaptureFixture[str]) -> None:
    """The lowering of the USB-DIFFSERV Table II model: per-class I/O VCPUs,
    fds with Omega_IO, readers with Omega_Main, the high task's period."""
    assert main(["guest", "usb-priority-inversion", "--check", "--duration", "200ms"]) == 0
    out = capsys.readouterr().out
    assert "io iovcpu.high 10%\nio iovcpu.low 40%\n" in out
    assert "fd 0 1 bh=200000ns\nfd 1 2 bh=200000ns\n" in out
    assert "task high high 1 read=0 compute=20000ns period=10000000ns loop" in out
    assert "task low0 low0 1 read=1 compute=20000ns loop" in out
    assert "run 200000000ns" in out


@needs_qemu
def test_priority_inversion_guest_quick(kernel: Path, tmp_path: Path) -> None:
    """The experiment's quick run (200 ms of emulated time per system): the
    one-interrupter spike and the two-interrupter isolation on the guest,
    each broken by its falsifier, and the Main-VCPU budget check, broken
    without enforcement."""
    from irqlab import experiments

    r = experiments.run("usb-priority-inversion-guest", tmp_path, quick=True)
    by = {c.claim.split(":")[0] + ":" + c.claim.split(":")[1][:30]: c for c in r.checks}
    assert len(r.checks) == 7, list(by)
    for c in r.checks:
        assert c.falsifier is not None and c.falsifier.holds is False, (c.claim, c.falsifier)
        assert c.note or (c.holds and c.paper_params), c.claim
    spike, isolation = r.checks[0], r.checks[3]
    assert spike.holds and "one interrupter" in spike.claim, spike
    assert isolation.holds and "two interrupters" in isolation.claim, isolation
    assert all(c.holds for c in r.checks[4:]), [c for c in r.checks[4:] if not c.holds]
    g = r.data["guest"]
    assert g["quest-1-interrupter"]["count"] == g["quest-2-interrupters"]["count"] == 20
    # each system's figures from two guest runs that agree record for record
    assert all(g[s]["attempts"] >= 2 for s in g), g
    assert "guest" in r.table and "sim" in r.table
