"""The Python boundary under hostile arguments: every ``irqlab.core``,
``irqlab.sim`` and ``irqlab.analysis`` entry point answers with a
``ValueError``/``TypeError`` naming the argument and the rule -- never an
``OverflowError`` without a name, a silent acceptance, a huge allocation or
a ``PanicException``."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import pytest

from irqlab.analysis import quest_eq1, usb_latency_bound, usb_typical_throughput, vint_sweep
from irqlab.core import LatencyRecorder, Scheduler, ms, percent, us
from irqlab.model import loads
from irqlab.sim import simulate

NEG = [
    ("add_sporadic", ("s", -1, 10), "budget: -1 must be a non-negative integer"),
    ("add_sporadic", ("s", 1, -10), "period: -10 must be a non-negative integer"),
    ("add_deferrable", ("s", 1, 2**64), "period: 18446744073709551616 must be below 2**64"),
    ("add_polling", ("s", -5, 10), "budget: -5"),
    ("add_cbs", ("s", 1, -1), "period: -1"),
    ("add_unbounded", ("s", -1), "rank: -1"),
    ("schedule", (-1,), "now: -1 must be a non-negative integer"),
    ("block", (-1, 0), "now: -1"),
]


@pytest.mark.parametrize(("method", "args", "msg"), NEG, ids=[f"{m}-{i}" for i, (m, _, _) in
                                                             enumerate(NEG)])
def test_negative_and_oversized_integers_name_the_argument(method: str, args: tuple,
                                                           msg: str) -> None:
    with pytest.raises(ValueError, match=msg.replace("*", r"\*")):
        getattr(Scheduler(), method)(*args)


def test_thread_arguments() -> None:
    s = Scheduler()
    srv = s.add_sporadic("a", 1, 10)
    with pytest.raises(ValueError, match="priority: -3 must be a non-negative integer"):
        s.add_thread("t", srv, -3)
    with pytest.raises(ValueError, match=r"priority: 4294967296 must be below 2\*\*32"):
        s.add_thread("t", srv, 2**32)
    with pytest.raises(TypeError, match="budget"):
        s.add_sporadic("b", 1.5, 10)


def test_max_repl_bounded_not_allocated() -> None:
    s = Scheduler()
    with pytest.raises(ValueError, match="max_repl 4611686018427387904 is above 1024"):
        s.add_sporadic("a", 1, 10, max_repl=2**62)
    with pytest.raises(ValueError, match="max_repl 1 is below 2"):
        s.add_sporadic("a", 1, 10, max_repl=1)
    assert s.add_sporadic("a", 1, 10, max_repl=1024) == 0


def test_duplicate_server_names() -> None:
    s = Scheduler()
    s.add_sporadic("a", 1, 10)
    with pytest.raises(ValueError, match="name: 'a' is used by another server"):
        s.add_pibs("a", percent(10))
    with pytest.raises(ValueError, match="non-empty"):
        s.add_unbounded("  ", 3)


def test_pibs_wakeup_needs_a_period() -> None:
    s = Scheduler()
    io = s.add_pibs("io", percent(50))
    bh = s.add_thread("bh", io)
    with pytest.raises(ValueError, match="inherit_period: required"):
        s.wakeup(0, bh)
    assert s.wakeup(0, bh, inherit_period=4)
    d = s.schedule(0)
    assert (d.server, d.thread) == (io, bh)
    # once inherited, a later wake-up may omit it
    s.block(1, bh)
    s.wakeup(2, bh)


@pytest.mark.parametrize("p", [150, -5, 0, "abc", "1/0", float("nan")])
def test_percent_rejects(p: object) -> None:
    with pytest.raises(ValueError, match="p: "):
        percent(p)  # type: ignore[arg-type]


def test_percent_accepts() -> None:
    assert percent(100) == 1 and percent("0.5") == Fraction(1, 200)


@pytest.mark.parametrize("x", [-5, float("nan"), float("inf")])
def test_unit_helpers_reject(x: float) -> None:
    for f in (us, ms):
        with pytest.raises(ValueError, match="x: "):
            f(x)


def test_latency_recorder_bounds() -> None:
    with pytest.raises(ValueError, match="capacity: -1"):
        LatencyRecorder(-1)
    with pytest.raises(ValueError, match="capacity: 4611686018427387904 must be at most"):
        LatencyRecorder(2**62)
    r = LatencyRecorder(4)
    with pytest.raises(ValueError, match="t: -1"):
        r.irq(-1)


def test_analysis_arguments() -> None:
    with pytest.raises(ValueError, match="omega_io_ns: -1 must be a finite non-negative"):
        usb_latency_bound(-1, 0.5, 1_000, 1_000_000, 2_000_000)
    with pytest.raises(ValueError, match="omega_io_ns: nan"):
        usb_latency_bound(math.nan, 0.5, 1_000, 1_000_000, 2_000_000)
    with pytest.raises(ValueError, match="u_io"):
        usb_latency_bound(1_000, 1.5, 1_000, 1_000_000, 2_000_000)
    with pytest.raises(ValueError, match="c_main_ns: 0 must be a finite positive"):
        usb_latency_bound(1_000, 0.5, 1_000, 0, 2_000_000)
    with pytest.raises(ValueError, match="beta_bytes: inf"):
        usb_typical_throughput(math.inf, 1_000, 0.5, 1_000)
    with pytest.raises(ValueError, match=r"main\[0\].T: -1"):
        quest_eq1([(1, -1)], [0.5])
    with pytest.raises(ValueError, match=r"io\[0\]: nan"):
        quest_eq1([(1, 4)], [math.nan])
    with pytest.raises(ValueError, match="sets: 4611686018427387904 must be"):
        vint_sweep({}, 2**62)
    with pytest.raises(ValueError, match="pcpus: -1"):
        vint_sweep({}, 1, pcpus=-1)


def _config(**over: object) -> dict:
    m = loads("""\
machine: {cpus: 1, path: hypervisor}
simulation: {duration: 1ms, window: 1ms}
vms:
  physical_interrupts:
    - {name: nic, cpu: 0, isr: 5us, min_interarrival: 100us}
  guests:
    - name: g
      vcpus:
        - name: v0
          cpu: 0
          policy: sporadic
          budget: 2ms
          period: 10ms
          tasks:
            - {name: rx, priority: 1, wcet: 50us}
      virtual_interrupts:
        - {name: virq, physical: nic, vcpu: v0, isr: 5us, priority: 1, dsr: [rx]}
""")
    cfg = m.sim_config
    cfg.update(over)
    return cfg


def test_sim_config_limits() -> None:
    cfg = _config()
    assert simulate(cfg).metrics["duration_ns"] == 1_000_000
    # a hypervisor device with a zero inter-arrival used to loop at now+0
    bad = json.loads(json.dumps(cfg))
    bad["devices"][0]["min_interarrival"] = 0
    with pytest.raises(ValueError, match=r"devices\[0\].min_interarrival: 0: must be positive"):
        simulate(bad)
    with pytest.raises(ValueError, match="duration: 18446744073709551615: exceeds the longest"):
        simulate(_config(duration=2**64 - 1))
    with pytest.raises(ValueError, match="windows: at most 1000000 per run"):
        simulate(_config(duration=10**12, window=1))
    with pytest.raises(ValueError, match="simulation config"):
        simulate(_config(duration=-1))
    srv = json.loads(json.dumps(cfg))
    srv["servers"][0]["max_repl"] = 2**62
    with pytest.raises(ValueError, match=r"servers\[0\].max_repl"):
        simulate(srv)


@pytest.mark.parametrize("kind", ["sporadic", "cbs"])
def test_a_long_overrun_is_one_step(kind: str) -> None:
    """`schedule` called long after `next_update` charges the whole interval:
    a 2 ns per 10 ns server charged 10^12 ns (it looped once per budget,
    38 s per 10^9 ns before) and 2**64 - 1 ns returns at once."""
    for now in (10**12, 2**64 - 1):
        s = Scheduler()
        srv = getattr(s, f"add_{kind}")("a", 2, 10)
        t = s.add_thread("t", srv)
        s.wakeup(0, t)
        assert s.schedule(0).thread == t
        d = s.schedule(now)
        if kind == "sporadic" and now == 10**12:
            # 5 * 10^11 budgets used: the replenishment comes back 5 * 10^11 periods on
            assert (d.server, d.next_update) == (None, 5 * 10**12)
            assert s.server_state(srv)["replenishments"] == [(5 * 10**12, 2)]
        if kind == "cbs" and now == 10**12:
            # refilled at once: deadline 10 + 10 * 5 * 10^11, runtime 2
            assert s.server_state(srv)["deadline"] == 5 * 10**12 + 10
