"""`irqlab check` / `irqlab simulate` on YAML models: valid models, shipped
scenarios, and every kind of bad input rejected with exit code 2 and a
message naming the field (never a traceback)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from irqlab.cli import main
from irqlab.experiments import quest_table1, usb_priority_inversion
from irqlab.model import ModelError, load, loads, scenario_path, scenarios
from irqlab.sim import simulate

GOOD = """
machine: {cpus: 1, path: quest}
simulation: {duration: 200ms, seed: 3}
vcpus:
  - {name: V0, policy: sporadic, budget: 2ms, period: 10ms}
  - {name: IO, kind: io, policy: pibs, utilization: 1%, io_class: net}
tasks:
  - {name: rx, vcpu: V0, period: 10ms, program: [{read: eth0}, {compute: 100us}]}
devices:
  - {name: eth0, kind: nic, class: net, top_half: 2us, bottom_half: 10us, packet: 64B,
     arrival: {kind: periodic, interval: 1ms}}
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "m.yaml"
    p.write_text(text)
    return p


def test_check_valid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(write(tmp_path, GOOD))]) == 0
    out = capsys.readouterr().out
    assert "valid (quest path, 1 CPU(s))" in out
    assert "V0 (main, sporadic 20.00%)" in out and "IO (io, pibs 1.00% for net)" in out


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("budget: 2ms, period: 10ms", "budget: 12ms, period: 10ms",
         "vcpus[0].budget: 12ms: exceeds period 10ms"),
        ("budget: 2ms, period: 10ms", "budget: 10ms, period: 10ms}\n  - {name: V1, policy: "
         "sporadic, budget: 5ms, period: 10ms", "the budgets exceed 100% of the CPU"),
        ("kind: nic", "kind: modem", "devices[0].kind: unknown variant `modem`"),
        ("packet: 64B", "packet: 64B, colour: red", "devices[0]: unknown field `colour`"),
        ("vcpu: V0", "vcpu: V7", "tasks[0].vcpu: V7: no such VCPU"),
        ("interval: 1ms", "interval: -1ms", "\"-1ms\" is negative"),
        ("interval: 1ms", "interval: 1000", "1000 has no unit"),
        ("{compute: 100us}", "{compute: 0ms}", "tasks[0].program[1]: 0: must be positive"),
        ("vcpus:", "vcpus: [", "did not find expected"),
    ],
)
def test_bad_input_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str,
                          new: str, message: str) -> None:
    assert old in GOOD
    path = write(tmp_path, GOOD.replace(old, new, 1))
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err, err
    assert "Traceback" not in err
    assert main(["simulate", str(path), "--out", str(tmp_path / "o")]) == 2


def test_missing_file_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "/nonexistent/model.yaml"]) == 2
    assert "no such model file" in capsys.readouterr().err


def test_cli_subprocess_no_traceback(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("budget: 2ms", "budget: 20ms", 1))
    r = subprocess.run([sys.executable, "-m", "irqlab", "check", str(path)],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert "vcpus[0].budget: 20ms: exceeds period 10ms" in r.stderr
    assert "Traceback" not in r.stderr


def test_simulate_is_deterministic(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, GOOD.replace("kind: periodic, interval: 1ms",
                                        "kind: poisson, rate: 2000"))
    for d in ("a", "b"):
        assert main(["simulate", str(path), "--out", str(tmp_path / d), "--seed", "9"]) == 0
    a = (tmp_path / "a" / "metrics.json").read_bytes()
    b = (tmp_path / "b" / "metrics.json").read_bytes()
    assert a == b
    assert main(["simulate", str(path), "--out", str(tmp_path / "c"), "--seed", "10"]) == 0
    assert (tmp_path / "c" / "metrics.json").read_bytes() != a, "the seed matters"
    m = json.loads(a)
    assert m["seed"] == 9 and m["tasks"][0]["completed"] == 20
    out = capsys.readouterr().out
    assert "metrics.json" in out and "trace.json" not in out, "no trace file without --trace"
    assert not (tmp_path / "a" / "trace.json").exists()


def test_trace_limit_from_cli_and_yaml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, GOOD)
    assert main(["simulate", str(path), "--out", str(tmp_path / "a"), "--trace",
                 "--trace-max-events", "40"]) == 0
    err = capsys.readouterr().err
    assert "trace reached its limit of 40 events" in err
    m = json.loads((tmp_path / "a" / "metrics.json").read_text())
    assert m["trace_truncated"] is True
    t = json.loads((tmp_path / "a" / "trace.json").read_text())
    assert t["otherData"] == {"truncated": True, "max_events": 40}
    limited = GOOD.replace("simulation: {", "simulation: {trace: true, trace_max_events: 30, ")
    assert "trace_max_events: 30" in limited
    assert main(["simulate", str(write(tmp_path, limited)), "--out", str(tmp_path / "b")]) == 0
    t = json.loads((tmp_path / "b" / "trace.json").read_text())
    assert t["otherData"]["max_events"] == 30
    assert "limit of 30 events" in capsys.readouterr().err
    path = write(tmp_path, GOOD)
    assert main(["simulate", str(path), "--out", str(tmp_path / "c"), "--trace"]) == 0
    assert "warning" not in capsys.readouterr().err
    bad = GOOD.replace("simulation: {", "simulation: {trace_max_events: 0, ")
    assert main(["check", str(write(tmp_path, bad))]) == 2
    err = capsys.readouterr().err
    assert "simulation.trace_max_events: 0: must be between 1 and 2000000" in err


def test_duration_override(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, GOOD)
    assert main(["simulate", str(path), "--out", str(tmp_path / "o"), "--duration", "50ms"]) == 0
    assert json.loads((tmp_path / "o" / "metrics.json").read_text())["duration_ns"] == 50_000_000
    assert main(["simulate", str(path), "--out", str(tmp_path / "o"), "--duration", "50"]) == 2
    assert "--duration" in capsys.readouterr().err


def test_model_error_lists_every_problem() -> None:
    with pytest.raises(ModelError) as e:
        loads(GOOD.replace("budget: 2ms", "budget: 20ms").replace("vcpu: V0", "vcpu: nope"))
    assert len(str(e.value).splitlines()) == 2


def test_shipped_scenarios_equal_the_experiments() -> None:
    """The YAML scenarios lower to exactly the systems the experiments run."""
    assert {"quest-table1", "usb-priority-inversion"} <= set(scenarios())
    pairs = [("quest-table1", quest_table1.config(True, 10_000_000_000)),
             ("usb-priority-inversion",
              usb_priority_inversion.config("quest-2-interrupters", 10_000_000_000))]
    for name, cfg in pairs:
        cfg["duration"] = 500_000_000  # shorter: equality, not the figures, is tested
        yaml_cfg = load(scenario_path(name)).sim_config
        yaml_cfg["duration"] = 500_000_000
        assert json.dumps(simulate(yaml_cfg).metrics, sort_keys=True) == json.dumps(
            simulate(cfg).metrics, sort_keys=True), name


def _config(module: str, *args: object) -> dict:
    import importlib

    return importlib.import_module(f"irqlab.experiments.{module}").config(*args)


@pytest.mark.parametrize(
    ("name", "module", "args", "duration"),
    [
        ("usb-throughput", "usb_throughput", (4, 10**10), 10**9),
        ("usb-roundtrip", "usb_roundtrip", (2, 10**10), 10**9),
        # long enough to cover the mode change at 10 s / the flood at 50 s
        ("usb-mode-change", "usb_mode_change", (2 * 10**10, 10**9), 11 * 10**9),
        ("quest-pibs-vs-ss", "quest_pibs_vs_ss", ("pibs", 10**11, 5 * 10**9), 51 * 10**9),
    ],
)
def test_more_scenarios_equal_the_experiments(name: str, module: str, args: tuple,
                                              duration: int) -> None:
    cfg = _config(module, *args)
    yaml_cfg = load(scenario_path(name)).sim_config
    for c in (cfg, yaml_cfg):
        c["duration"] = duration  # equality, not the figures, is tested
    a, b = simulate(yaml_cfg).metrics, simulate(cfg).metrics
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    assert sum(d["handled"] for d in a["devices"]) > 0


@pytest.mark.parametrize("name", scenarios())
def test_every_shipped_scenario_checks(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Every scenario file shipped with irqlab is a valid model."""
    assert main(["check", str(scenario_path(name))]) == 0, capsys.readouterr().err
    assert "valid" in capsys.readouterr().out


def test_vint_case_scenario_equals_the_experiment(capsys: pytest.CaptureFixture[str],
                                                  tmp_path: Path) -> None:
    """vint-case.yaml (the `vms` model of VINT §VII-C with vINT on) lowers to
    the system of vint-case-rtt's vINT scheme: the same metrics bit for bit."""
    from irqlab.experiments import vint_case_rtt

    cfg = vint_case_rtt.config("vINT", 10_000_000_000)
    yaml_cfg = load(scenario_path("vint-case")).sim_config
    for c in (cfg, yaml_cfg):
        c["duration"] = 2_000_000_000
    a, b = simulate(yaml_cfg).metrics, simulate(cfg).metrics
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    assert a["virqs"][0]["handled"] > 1000
    assert main(["check", str(scenario_path("vint-case"))]) == 0
    out = capsys.readouterr().out
    assert "vnic.pseudo (pseudo-VCPU, deferrable 20.00%, rank 1)" in out
    assert "netperf-rx (DSR of vnic)" in out
    assert main(["simulate", str(scenario_path("vint-case")), "--out", str(tmp_path / "o"),
                 "--duration", "200ms"]) == 0
    out = capsys.readouterr().out
    assert "virtual interrupt vnic:" in out and "physical interrupt nic:" in out


HYPERVISOR = """
machine: {cpus: 1, path: hypervisor}
simulation: {duration: 100ms}
vms:
  eoi: 2us
  physical_interrupts: [{name: nic, isr: 5us, min_interarrival: 1ms}]
  guests:
    - name: guest
      vcpus:
        - name: v1
          policy: sporadic
          budget: 2ms
          period: 10ms
          tasks:
            - {name: rx, priority: 10, wcet: 30us}
            - {name: app, priority: 5, wcet: 1ms, period: 20ms}
      virtual_interrupts:
        - {name: vnic, physical: nic, vcpu: v1, isr: 10us, dsr: [rx], vint: {period: 2ms}}
"""


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("budget: 2ms", "budget: 12ms", "vms.guests[0].vcpus[0].budget: 12ms: exceeds period 10ms"),
        ("period: 10ms", "period: 0s", "vms.guests[0].vcpus[0].period: 0: must be positive"),
        ("policy: sporadic", "policy: sporadic\n          colour: red",
         "vms.guests[0].vcpus[0]: unknown field `colour`"),
        ("vcpu: v1", "vcpu: v2",
         "vms.guests[0].virtual_interrupts[0].vcpu: v2: no such VCPU in guest guest"),
        ("dsr: [rx]", "dsr: [app]", "vms.guests[0].vcpus[0].tasks[1].period: a DSR task is "
         "activated by its virtual interrupt (vnic), not released on its own"),
        ("dsr: [rx]", "dsr: [tx]", "dsr[0]: tx: no such task in VCPU v1"),
        ("isr: 5us,", "cpu: 3, isr: 5us,",
         "vms.physical_interrupts[0].cpu: 3: no such CPU (machine.cpus is 1)"),
        ("period: 2ms}", "period: 500us}",
         "vint.period: 500us: is below the minimum inter-arrival time 1ms (VINT §V-A"),
        # VINT Eq. 1, resolved while lowering: ceil(2 ms / 1 ms) x
        # (1100 + 2 + 30) us = 2.264 ms per 2 ms
        ("isr: 10us", "isr: 1100us",
         "vint.budget: auto = 2264us: the budget VINT Eq. 1/2 asks for exceeds"),
    ],
)
def test_hypervisor_bad_input_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     old: str, new: str, message: str) -> None:
    assert main(["check", str(write(tmp_path, HYPERVISOR))]) == 0
    capsys.readouterr()
    assert old in HYPERVISOR
    path = write(tmp_path, HYPERVISOR.replace(old, new, 1))
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err, err
    assert "Traceback" not in err


def test_docs_model_examples_are_valid() -> None:
    """Every YAML example of docs/model.md loads; the `vms` one is the
    shipped vint-case scenario."""
    import re

    doc = (Path(__file__).parents[2] / "docs" / "model.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", doc, re.S)
    assert len(blocks) >= 2
    cfgs = [loads(b).sim_config for b in blocks]
    hv = [c for c in cfgs if c["path"] == "hypervisor"]
    assert hv == [load(scenario_path("vint-case")).sim_config]


SIM_SECTION = """
machine: {cpus: 1, path: quest}
simulation: {duration: 100ms, window: 10ms, max_window_values: 12, records: RECORDS}
vcpus: [{name: v0, policy: sporadic, budget: 2ms, period: 10ms}]
tasks: [{name: t0, vcpu: v0, period: 10ms, program: [{compute: 1ms}]}]
"""


def test_simulation_section_sets_records_and_max_window_values() -> None:
    """`simulation.records` and `simulation.max_window_values` reach the
    simulator from YAML (not only from Python): 3 series (a server, a
    CPU's two) of 10 windows of 10 ms do not fit in 12 values, so the
    windows widen to 30 ms (4 per series); the jobs come back as
    NumPy columns and the requests table stays empty."""
    m = loads(SIM_SECTION.replace("RECORDS", "{jobs: true}"))
    assert m.sim_config["max_window_values"] == 12
    assert m.sim_config["records"] == {"jobs": True, "requests": False}
    r = simulate(m)
    assert (r.metrics["window_ns"], r.metrics["window_requested_ns"]) == (30_000_000,
                                                                          10_000_000)
    assert len(r.metrics["servers"][0]["share_windows_fraction"]) == 4
    assert len(r.job_records()["task"]) == r.metrics["tasks"][0]["completed"] == 10
    both = loads(SIM_SECTION.replace("RECORDS", "true")).sim_config["records"]
    assert both == {"jobs": True, "requests": True}
    default = loads(SIM_SECTION.replace(", max_window_values: 12, records: RECORDS", ""))
    assert default.sim_config["records"] == {"jobs": False, "requests": False}
    assert default.sim_config["max_window_values"] == 65536


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("max_window_values: 12", "max_window_values: 0",
         "simulation.max_window_values: 0: must be between 1 and 16777216"),
        ("max_window_values: 12", "max_window_values: 99999999",
         "simulation.max_window_values: 99999999: must be between 1 and 16777216"),
        ("RECORDS", "{jobs: true, tasks: true}",
         "expected true, false or a map of `jobs` and `requests`"),
        ("RECORDS", "yes please", "expected true, false or a map of `jobs` and `requests`"),
    ],
)
def test_simulation_section_bad_records_or_windows_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str,
        message: str) -> None:
    good = SIM_SECTION.replace("RECORDS", "false")
    assert main(["check", str(write(tmp_path, good))]) == 0
    capsys.readouterr()
    path = write(tmp_path, SIM_SECTION.replace("RECORDS", "false").replace(old, new)
                 if old != "RECORDS" else SIM_SECTION.replace(old, new))
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and "simulation" in err, err
    assert "Traceback" not in err


def test_simulate_summary_is_bounded_and_shows_the_misses(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A model of 40 tasks: the summary lists 20 of them, every task that
    missed among them, and counts the rest."""
    starved = {3, 17, 33}  # 2 ms of work each 1 ms: every job misses
    model = {
        "machine": {"cpus": 1, "path": "quest"},
        "simulation": {"duration": "50ms"},
        "vcpus": [{"name": f"v{i}", "policy": "sporadic", "budget": "10us", "period": "1ms"}
                  for i in range(40)],
        "tasks": [{"name": f"t{i}", "vcpu": f"v{i}", "period": "1ms",
                   "program": [{"compute": "2ms" if i in starved else "5us"}]}
                  for i in range(40)],
    }
    f = tmp_path / "many.yaml"
    f.write_text(json.dumps(model))
    assert main(["simulate", str(f), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    listed = [line.split(":")[0].split()[1] for line in out.splitlines()
              if line.startswith("  task ")]
    assert len(listed) == 20
    assert {f"t{i}" for i in starved} <= set(listed)
    assert listed == sorted(listed, key=lambda n: int(n[1:]))  # model order
    met = json.loads((tmp_path / "out/metrics.json").read_text())
    total = sum(t["deadline_misses"] for t in met["tasks"])
    assert total > 0
    assert f"  ... 20 more tasks (0 of them with misses; {total} misses in all)" in out
