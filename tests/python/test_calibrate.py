"""``irqlab calibrate``: the costs section it writes (structure, validity,
use by the simulator) and the ftrace arithmetic on a hand-checked trace.

No timing is asserted: measured values are only checked to be positive,
finite and physically possible (below one second per event); tracing is
asserted to have been used when this process may use tracefs (root), and
its absence to be explained otherwise.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import pytest
import yaml

from irqlab import calibrate as cal
from irqlab.cli import main
from irqlab.model import ModelError, load
from irqlab.sim import simulate

LINUX_MODEL = """machine: {cpus: 1, path: linux}
simulation: {duration: 20ms}
vcpus: [{name: V, policy: fifo, priority: 10}]
tasks: [{name: rx, vcpu: V, program: [{forever: [{read: eth}]}]}]
devices:
  - {name: eth, kind: nic, class: net, top_half: 5us, bottom_half: 10us, packet: 64B,
     arrival: {kind: periodic, interval: 1ms}}
"""

# A hand-made ftrace dump, timestamps in TSC ticks of 0.5 ns:
# * NIC IRQ 38 (virtio2-input.0) on CPU 1: 4000 ticks = 2000 ns;
# * a timer IRQ (not the NIC) and the NIC's transmit-completion IRQ 39
#   (virtio2-output.0, not the receive path) are ignored;
# * CPU 0: one NET_RX run in python, 12000 ticks = 6000 ns, whose backlog
#   poll took 3 loopback packets -> 2000 ns per packet;
# * CPU 1: one NET_RX run in ksoftirqd/1, 8000 ticks = 4000 ns, eth0 poll of
#   1 packet plus a backlog poll of 1 -> 2000 ns to each path;
# * ksoftirqd/1 woken at 100000, switched in at 106000: 3000 ns.
TRACE = """# tracer: nop
python-4242 [000] d.h1. 50000: irq_handler_entry: irq=11 name=timer
python-4242 [000] d.h1. 50400: irq_handler_exit: irq=11 ret=handled
<idle>-0 [001] d.h1. 60000: irq_handler_entry: irq=38 name=virtio2-input.0
<idle>-0 [001] d.h1. 64000: irq_handler_exit: irq=38 ret=handled
<idle>-0 [001] d.h1. 65000: irq_handler_entry: irq=39 name=virtio2-output.0
<idle>-0 [001] d.h1. 69000: irq_handler_exit: irq=39 ret=handled
python-4242 [000] ..s1. 70000: softirq_entry: vec=3 [action=NET_RX]
python-4242 [000] ..s1. 71000: napi_poll: napi struct 0 for device (no_device) work 3
python-4242 [000] ..s1. 82000: softirq_exit: vec=3 [action=NET_RX]
<idle>-0 [001] dN.2. 100000: sched_wakeup: comm=ksoftirqd/1 pid=20
<idle>-0 [001] d..2. 106000: sched_switch: prev_comm=swapper/1 ==> next_comm=ksoftirqd/1
ksoftirqd/1-20 [001] ..s1. 110000: softirq_entry: vec=3 [action=NET_RX]
ksoftirqd/1-20 [001] ..s1. 111000: napi_poll: napi struct 1 for device eth0 work 1
ksoftirqd/1-20 [001] ..s1. 112000: napi_poll: napi struct 0 for device (no_device) work 1
ksoftirqd/1-20 [001] ..s1. 118000: softirq_exit: vec=3 [action=NET_RX]
"""


def test_parse_trace_hand_checked() -> None:
    k = cal.parse_trace(TRACE, 0.5, {"eth0", "virtio2"}, {"eth0"})
    lo, nic = k["loopback"], k["nic"]
    assert lo["packets"] == 4 and nic["packets"] == 1
    # loopback: 3 packets at 2000 ns (CPU 0) and 1 at 2000 ns (CPU 1)
    assert lo["softirq"] == {"samples": 2, "min": "2000ns", "mean": "2000ns",
                             "p50": "2000ns", "p99": "2000ns", "max": "2000ns"}
    assert lo["ksoftirqd_share"] == 0.5
    assert "hardirq" not in lo
    assert nic["hardirq"]["max"] == "2000ns" and nic["hardirq"]["samples"] == 1
    assert nic["softirq"]["mean"] == "2000ns" and nic["ksoftirqd_share"] == 1.0
    assert k["ksoftirqd_wakeup"]["p50"] == "3000ns"


def test_softirq_mean_is_packet_weighted() -> None:
    # Two runs: 1 packet in 1000 ns, 3 packets in 9000 ns (3000 each):
    # per-packet samples 1000 and 3000, mean (1000 + 9000) / 4 = 2500.
    t = """ a-1 [000] ..s1. 0: softirq_entry: vec=3 [action=NET_RX]
 a-1 [000] ..s1. 10: napi_poll: napi struct 0 for device lo work 1
 a-1 [000] ..s1. 1000: softirq_exit: vec=3 [action=NET_RX]
 a-1 [000] ..s1. 5000: softirq_entry: vec=3 [action=NET_RX]
 a-1 [000] ..s1. 5010: napi_poll: napi struct 0 for device lo work 3
 a-1 [000] ..s1. 14000: softirq_exit: vec=3 [action=NET_RX]
"""
    lo = cal.parse_trace(t, 1.0, set(), set())["loopback"]
    assert (lo["softirq"]["min"], lo["softirq"]["mean"], lo["softirq"]["max"]) == \
        ("1000ns", "2500ns", "3000ns")


def test_a_poll_that_found_nothing_carries_no_packet() -> None:
    # the NIC's poll found 0 packets in a run whose backlog poll took 2:
    # the run's 4000 ns go to loopback's 2 packets (no division by zero)
    t = """ a-1 [000] ..s1. 0: softirq_entry: vec=3 [action=NET_RX]
 a-1 [000] ..s1. 10: napi_poll: napi struct 1 for device eth0 work 0
 a-1 [000] ..s1. 20: napi_poll: napi struct 0 for device lo work 2
 a-1 [000] ..s1. 4000: softirq_exit: vec=3 [action=NET_RX]
"""
    k = cal.parse_trace(t, 1.0, {"eth0"}, {"eth0"})
    assert "nic" not in k
    assert k["loopback"]["packets"] == 2 and k["loopback"]["softirq"]["mean"] == "2000ns"


def _positive_finite(d: dict, name: str) -> None:
    assert d["samples"] >= 1, name
    vals = [cal.stat_ns(d, s) for s in cal.STATS]
    assert all(math.isfinite(v) and 0 <= v < 1_000_000_000 for v in vals), (name, d)
    assert cal.stat_ns(d, "max") > 0, (name, d)
    lo, _mean, p50, p99, hi = vals
    assert lo <= p50 <= p99 <= hi, (name, d)


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    d = tmp_path_factory.mktemp("cal")
    model = d / "linux.yaml"
    model.write_text(LINUX_MODEL)
    out = d / "costs.yaml"
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["calibrate", "--out", str(out), "--model", str(model), "--samples", "300",
                     "--runs", "2", "--packets", "600"])
    assert code == 0
    return out, d / "linux.calibrated.yaml", buf.getvalue()


def test_calibrate_writes_a_valid_costs_file(calibrated: tuple[Path, Path, str],
                                             capsys: pytest.CaptureFixture[str]) -> None:
    out, _, printed = calibrated
    costs = cal.load_costs(out)
    assert costs["origin"]["cpus"] >= 1 and costs["origin"]["kernel"]
    for name in ("timer_wakeup", "supervisor_decision", "context_switch", "thread_wakeup"):
        assert name in costs, (name, printed)
    for name in cal.HOST_FIELDS:
        if name in costs:
            _positive_finite(costs[name], name)
        else:  # left out: the command said why
            assert f"{name}: not measured:" in printed, printed
    assert main(["check", str(out)]) == 0
    assert "valid costs of" in capsys.readouterr().out


def test_calibrate_traces_the_kernel_or_says_why(calibrated: tuple[Path, Path, str]) -> None:
    out, _, printed = calibrated
    k = cal.load_costs(out)["kernel"]
    if k["tracing"].startswith("not used"):
        assert "kernel costs not measured" in printed
        assert os.geteuid() != 0 or "tracefs" in k["tracing"] or "tracepoint" in k["tracing"]
        pytest.skip(f"kernel tracing unavailable here: {k['tracing']}")
    assert k["tracing"].startswith("ftrace")
    lo = k["loopback"]
    assert lo["packets"] >= 1
    _positive_finite(lo["softirq"], "loopback.softirq")
    assert 0.0 <= lo["ksoftirqd_share"] <= 1.0
    assert "hardirq" not in lo
    per = cal.per_packet_ns(cal.load_costs(out))
    assert per["hardirq"] == 0 and per["softirq"] > 0
    if "nic" in k:
        _positive_finite(k["nic"]["softirq"], "nic.softirq")
    else:
        assert "kernel.nic: no packet seen" in printed


def test_calibrated_model_charges_the_measured_costs(calibrated: tuple[Path, Path, str]) -> None:
    out, model_out, _ = calibrated
    costs = cal.load_costs(out)
    plain, calibrated_model = load(Path(model_out).with_name("linux.yaml")), load(model_out)
    assert calibrated_model.model["costs"]["origin"] == costs["origin"]
    base = simulate(plain).metrics["cpus"][0]
    with_costs = simulate(calibrated_model).metrics["cpus"][0]
    if "loopback" not in (costs.get("kernel") or {}):
        pytest.skip(f"no kernel costs measured: {costs['kernel']['tracing']}")
    per = cal.per_packet_ns(costs)
    # 20 packets (one per ms over 20 ms), each softirq longer by exactly s(softirq).
    assert with_costs["softirq_ns"] - base["softirq_ns"] == 20 * per["softirq"]


def test_per_packet_ns_names_what_was_not_measured() -> None:
    costs = {"origin": {"host": "h"}, "kernel": {"tracing": "not used: no root"}}
    with pytest.raises(KeyError, match="costs.kernel.loopback: not measured on h"):
        cal.per_packet_ns(costs)


def test_bad_costs_file_is_refused_with_the_field(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "costs.yaml"
    f.write_text(yaml.safe_dump({"costs": {
        "origin": {"host": "h", "kernel": "k", "cpus": 1, "date": "d", "tool": "t"},
        "context_switch": {"samples": 5, "min": "3us", "mean": "2us", "p50": "2us",
                           "p99": "4us", "max": "5us"}}}))
    with pytest.raises(ModelError, match="costs.context_switch.p50: 2us: must not be below"):
        cal.load_costs(f)
    assert main(["check", str(f)]) == 2
    assert "costs.context_switch.mean: 2us: must lie between" in capsys.readouterr().err


def test_calibrate_refuses_a_model_that_has_costs(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "m.yaml"
    f.write_text(LINUX_MODEL + "costs:\n  origin: {host: h, kernel: k, cpus: 1, date: d, "
                 "tool: t}\n")
    assert main(["calibrate", "--model", str(f), "--out", str(tmp_path / "c.yaml")]) == 2
    assert "already has a costs: section" in capsys.readouterr().err
    assert main(["calibrate", "--samples", "0"]) == 2
    assert "--samples: 0: must be at least 1" in capsys.readouterr().err


def test_json_of_the_native_measurement_is_complete() -> None:
    from irqlab._native import rt

    raw = json.loads(rt.calibrate(20, 1, 50_000_000))
    assert set(raw) == {"fifo", *cal.HOST_FIELDS}
    for name in cal.HOST_FIELDS:
        assert set(raw[name]) in ({"Ok"}, {"Err"}), raw[name]


# Physically sensible ranges (ns) for this kind of machine (a VM or a PC,
# loaded or idle): below them the measurement did not include the
# operation (a wake-up takes at least the kernel's wake-up path and a
# context switch, ~1 us; a switch at least the register and stack swap,
# ~100 ns); above them it measured something else (a mean above a few ms
# is a host stall or a broken clock). Means are checked, not tails.
PLAUSIBLE_NS = {
    "timer_wakeup": (1_000, 5_000_000),
    "thread_wakeup": (500, 5_000_000),
    "context_switch": (100, 200_000),
    "supervisor_decision": (5, 100_000),
    "priority_switch": (100, 500_000),
    "runtime_top_half": (100, 5_000_000),
    "runtime_dispatch": (500, 5_000_000),
}


def test_calibrated_values_are_physically_plausible(calibrated: tuple[Path, Path, str]) -> None:
    out, _, printed = calibrated
    costs = cal.load_costs(out)
    for name, (lo, hi) in PLAUSIBLE_NS.items():
        if name not in costs:
            assert f"{name}: not measured:" in printed, printed
            continue
        mean = cal.stat_ns(costs[name], "mean")
        assert lo <= mean <= hi, f"{name}: mean {mean} ns outside [{lo}, {hi}] ns"
    k = costs["kernel"]
    if k["tracing"].startswith("not used"):
        pytest.skip(f"kernel tracing unavailable here: {k['tracing']}")
    # The traffic calibrate sent itself: each received datagram went through
    # loopback's backlog NAPI once while traced, so the sample count is at
    # least what was received (other loopback traffic meanwhile only adds).
    m = re.search(r"(\d+) UDP datagrams of 64 B sent on loopback, (\d+) received", k["tracing"])
    assert m, k["tracing"]
    sent, received = int(m[1]), int(m[2])
    assert sent == 600 and 0.9 * sent <= received <= sent, k["tracing"]
    assert k["loopback"]["packets"] >= received, k["loopback"]
    # NET_RX per 64 B loopback datagram: at least the IP/UDP receive path
    # (~200 ns), at most 100 us on average.
    mean = cal.stat_ns(k["loopback"]["softirq"], "mean")
    assert 200 <= mean <= 100_000, f"loopback softirq mean {mean} ns"
    # The NIC path (RSTs of the default gateway to connects to a closed
    # port): a receive hard IRQ does at least the device's ack and a NAPI
    # schedule (~100 ns) and at most 100 us on average; NET_RX per packet
    # runs the driver's poll and the TCP receive path of a RST (~500 ns ..
    # 200 us). Without a route or a reply, the file says why.
    if "nic" not in k:
        assert re.search(r"NIC traffic: (none \(no IPv4 default route|up to \d+ TCP connects)",
                         k["tracing"]), k["tracing"]
        assert "kernel.nic: no packet seen" in printed
        pytest.skip(f"no packet arrived on the NIC: {k['tracing'].split('; NIC traffic: ')[-1]}")
    nic = k["nic"]
    assert nic["packets"] >= 1
    hard = cal.stat_ns(nic["hardirq"], "mean")
    assert 100 <= hard <= 100_000, f"NIC hard IRQ mean {hard} ns"
    soft = cal.stat_ns(nic["softirq"], "mean")
    assert 500 <= soft <= 200_000, f"NIC softirq mean {soft} ns"


def test_nic_path_costs_are_charged_when_net_path_is_nic(
        calibrated: tuple[Path, Path, str], tmp_path: Path) -> None:
    """With ``net_path: nic`` the simulated linux path charges the NIC's
    per-packet hard IRQ and softirq, not loopback's: 20 packets, each ISR
    longer by exactly s(hardirq) and each softirq by s(softirq)."""
    out, _, _ = calibrated
    costs = cal.load_costs(out)
    k = costs["kernel"]
    if "nic" not in k:  # stated values in place of unmeasured ones
        k["tracing"] = k.get("tracing", "") + " (test: NIC values stated)"
        k["nic"] = {"packets": 10, "ksoftirqd_share": 0.0,
                    "hardirq": {"samples": 10, "min": "1us", "mean": "1300ns", "p50": "1200ns",
                                "p99": "3us", "max": "4us"},
                    "softirq": {"samples": 10, "min": "3us", "mean": "13us", "p50": "12us",
                                "p99": "30us", "max": "40us"}}
    costs["net_path"] = "nic"
    model = tmp_path / "linux.yaml"
    model.write_text(LINUX_MODEL)
    nic_model = tmp_path / "nic.yaml"
    nic_model.write_text(LINUX_MODEL + cal.dump(costs))
    base = simulate(load(model)).metrics["cpus"][0]
    with_costs = simulate(load(nic_model)).metrics["cpus"][0]
    per = cal.per_packet_ns(costs)
    assert per == cal.per_packet_ns(costs, "nic") and per["hardirq"] > 0
    assert with_costs["isr_ns"] - base["isr_ns"] == 20 * per["hardirq"]
    assert with_costs["softirq_ns"] - base["softirq_ns"] == 20 * per["softirq"]
