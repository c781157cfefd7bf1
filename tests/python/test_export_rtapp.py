"""``irqlab export rt-app``: the mapping of a model to an rt-app workload
(hand-checked), every refusal, and the round trip through Debian's rt-app
(run for a second; its own logs must show each thread with the model's
policy, priority or budget, and period). The round trip skips, with the
reason, where rt-app is not installed or may not set the policies.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from irqlab.cli import main
from irqlab.export import rtapp
from irqlab.model import ModelError, loads

MODEL = """machine: {cpus: 2, path: linux}
simulation: {duration: 2s}
vcpus:
  - {name: ctl, policy: sporadic, budget: 1ms, period: 10ms, cpu: 1}
  - {name: shared, policy: sporadic, budget: 4ms, period: 20ms, cpu: 0}
  - {name: bg, policy: fifo, priority: 20, cpu: 0}
tasks:
  - {name: control, vcpu: ctl, period: 10ms, offset: 1ms, program: [{compute: 600us}]}
  - {name: logger, vcpu: shared, period: 40ms, jobs: 50, priority: 1,
     program: [{compute: 1ms}, {sleep: 500us}, {loop: {count: 2, do: [{compute: 100us}]}}]}
  - {name: reader, vcpu: shared, priority: 2, program: [{forever: [{read: eth}, {compute: 50us}]}]}
  - {name: hog, vcpu: bg, program: [{forever: [{compute: 2ms}, {sleep: 3ms}]}]}
devices:
  - {name: eth, kind: nic, class: net, cpu: 1, top_half: 5us, bottom_half: 15us, packet: 64B,
     arrival: {kind: periodic, interval: 5ms}}
"""


def _events(th: dict) -> list[tuple[str, object]]:
    return [(re.sub(r"\d+$", "", k), v) for k, v in th.items()
            if re.match(r"^(run|sleep|timer|suspend|resume)\d+$", k)]


def test_mapping_hand_checked() -> None:
    w = rtapp(loads(MODEL))
    t = w["tasks"]
    assert set(t) == {"control", "logger", "reader", "hog", "dev.eth"}
    # control: alone on a 1 ms / 10 ms sporadic server -> SCHED_DEADLINE, unpinned
    c = t["control"]
    assert (c["policy"], c["dl-runtime"], c["dl-period"], c["dl-deadline"]) == \
        ("SCHED_DEADLINE", 1000, 10000, 10000)
    assert "cpus" not in c and c["delay"] == 1000 and c["loop"] == -1
    assert _events(c) == [("run", 600), ("timer", {"ref": "timer.control", "period": 10000})]
    # logger and reader share a server: RM SCHED_FIFO, reader (priority 2) first
    lg, rd = t["logger"], t["reader"]
    assert (lg["policy"], lg["priority"], lg["cpus"], lg["loop"]) == ("SCHED_FIFO", 89, [0], 50)
    assert (rd["policy"], rd["priority"], rd["cpus"], rd["loop"]) == ("SCHED_FIFO", 90, [0], -1)
    assert _events(lg) == [("run", 1000), ("sleep", 500), ("run", 100), ("run", 100),
                           ("timer", {"ref": "timer.logger", "period": 40000})]
    assert _events(rd) == [("suspend", "reader"), ("run", 50)]
    # hog: its fifo VCPU's priority, a forever program -> loop -1
    h = t["hog"]
    assert (h["policy"], h["priority"], h["cpus"], h["loop"]) == ("SCHED_FIFO", 20, [0], -1)
    assert _events(h) == [("run", 2000), ("sleep", 3000)]
    # the NIC: a generator at FIFO 99 on its CPU, top + bottom half, wakes its reader
    d = t["dev.eth"]
    assert (d["policy"], d["priority"], d["cpus"]) == ("SCHED_FIFO", 99, [1])
    assert _events(d) == [("run", 20), ("resume", "reader"),
                          ("timer", {"ref": "timer.dev.eth", "period": 5000})]
    assert w["global"]["duration"] == 2


def test_fifo_option_pins_every_thread_with_rate_monotonic_priorities() -> None:
    t = rtapp(loads(MODEL), fifo=True)["tasks"]
    # control's server (10 ms) is more urgent than the shared one (20 ms)
    assert (t["control"]["policy"], t["control"]["priority"], t["control"]["cpus"]) == \
        ("SCHED_FIFO", 90, [1])
    assert (t["reader"]["priority"], t["logger"]["priority"]) == (89, 88)


@pytest.mark.parametrize("change, field, rule", [
    (("period: 10ms, offset: 1ms, program: [{compute: 600us}]",
      "period: 10ms, program: [{forever: [{compute: 600us}]}]"),
     "tasks[0].program[0]", "a forever loop inside a periodic task never ends a job"),
    (("offset: 1ms, program", "offset: 1ms, abort_on_miss: true, program"),
     "tasks[0].abort_on_miss", "rt-app cannot abort a job at its deadline"),
    (("{kind: periodic, interval: 5ms}", "{kind: poisson, rate: 100}"),
     "tasks[2].program[0].forever[0]", "fixed inter-arrival time (poisson arrivals)"),
    (("{kind: periodic, interval: 5ms}", "{kind: ping-flood, rtt: 1ms}"),
     "tasks[2].program[0].forever[0]", "fixed inter-arrival time (ping-flood arrivals)"),
])
def test_refusals_name_field_and_reason(change: tuple[str, str], field: str, rule: str) -> None:
    text = MODEL.replace(*change)
    assert text != MODEL
    with pytest.raises(ModelError) as e:
        rtapp(loads(text))
    assert str(e.value).startswith(field) and rule in str(e.value), str(e.value)


def test_disk_reads_wait_the_service_time_then_pay_the_halves() -> None:
    from irqlab.model import load, scenario_path

    # QUEST-VCPU Table 1: the CD-ROM (latency 1 ms, top half 10 us, 32 sectors
    # x 120 us PIO, Omega_Main 20 us), read for ever by VCPU1.cd-reader.
    t = rtapp(load(scenario_path("quest-table1")))["tasks"]
    assert _events(t["VCPU1.cd-reader"]) == [("sleep", 1000), ("run", 10 + 32 * 120),
                                             ("run", 20), ("run", 50)]
    assert not any(n.startswith("dev.") for n in t)


def test_usb_reads_wait_the_transfer_then_pay_the_halves() -> None:
    model = """machine: {cpus: 1, path: linux}
vcpus: [{name: V, policy: fifo, priority: 10}]
tasks: [{name: t, vcpu: V, period: 10ms, program: [{read: cam}]}]
xhci: [{name: x, top_half: 5us, interrupter_map: [c]}]
devices:
  - {name: cam, kind: usb, controller: x, class: c, request: 9000B, rate: 12MB/s,
     omega_io: 30us, omega_main: 7us}
"""
    t = rtapp(loads(model))["tasks"]["t"]
    # 9000 B at 12 MB/s = 750 us; then 5 us top half + 30 us Omega_IO, 7 us Omega_Main
    assert _events(t)[:3] == [("sleep", 750), ("run", 35), ("run", 7)]


def test_bind_is_refused() -> None:
    from irqlab.model import load, scenario_path

    with pytest.raises(ModelError, match=r"^tasks\[4\]\.program\[0\]: bind: "
                       r"rt-app has no file descriptors to rebind"):
        rtapp(load(scenario_path("usb-mode-change")))


def test_hypervisor_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from irqlab.model import scenario_path

    assert main(["export", "rt-app", str(scenario_path("vint-case")),
                 "-o", str(tmp_path / "w.json")]) == 2
    assert "machine.path: hypervisor: rt-app replays Linux threads" in capsys.readouterr().err


def _log(logdir: Path, name: str) -> tuple[str, list[list[int]]]:
    files = sorted(logdir.glob(f"rt-app-{name}-*.log"))
    assert files, f"rt-app wrote no log for {name}: {sorted(p.name for p in logdir.iterdir())}"
    text = files[0].read_text()
    rows = [[int(x) for x in line.split()] for line in text.splitlines()
            if line.strip() and not line.startswith("#")]
    return text, rows


def test_rtapp_replays_the_export(tmp_path: Path) -> None:
    exe = shutil.which("rt-app")
    if exe is None:
        pytest.skip("rt-app is not installed (make apt installs Debian's rt-app)")
    out = tmp_path / "workload.json"
    assert main(["export", "rt-app", "-o", str(out), "--duration", "1",
                 str(_write(tmp_path, MODEL))]) == 0
    w = json.loads(out.read_text())
    w["global"]["logdir"] = str(tmp_path)
    out.write_text(json.dumps(w))
    r = subprocess.run([exe, str(out)], cwd=tmp_path, capture_output=True, text=True,
                       timeout=60)
    err = r.stdout + r.stderr
    if r.returncode != 0 and re.search(r"Operation not permitted|EPERM|sched_setattr", err):
        pytest.skip(f"rt-app may not set these policies here: {err.strip()[-300:]}")
    assert r.returncode == 0, err[-2000:]
    for name, th in w["tasks"].items():
        text, rows = _log(tmp_path, name)
        policy = re.search(r"# Policy : (\S+)", text)
        assert policy and policy[1] == th["policy"], (name, text[:200])
        if th["policy"] == "SCHED_FIFO":
            assert f"priority : {th['priority']}" in text, (name, text[:200])
        if name == "reader":
            continue  # woken by dev.eth: its phase has no timer of its own
        assert rows, f"{name} ran no job in 1 s"
        timers = [v["period"] for k, v in th.items() if k.startswith("timer")]
        if not timers:
            continue  # no timer, no c_period (hog loops run and sleep)
        # c_period (column 10): the configured period of every logged job;
        # a job cut by the end of the run logs 0 (its timer never ran)
        assert {row[9] for row in rows} - {0} == {sum(timers)}, (name, rows[:3])
        assert sum(row[9] == 0 for row in rows) <= 1, (name, rows)
    _, reader_rows = _log(tmp_path, "reader")
    assert reader_rows, "reader was never woken by its device thread"


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "model.yaml"
    p.write_text(text)
    return p
