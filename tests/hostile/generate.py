"""Write the hostile model files (``models/*.yaml``) and their expected
outcome (``expected.json``) from the case table below.

Each case is a base model of ``bases.py`` with some fields replaced by a
hostile value, and the rule it must trip: ``irqlab check`` exits 2 with a
message containing ``expect`` (a substring naming the field and the rule),
or, for ``"ok"`` cases, exits 0 (then ``irqlab simulate`` must finish
within the test's timeout and memory cap). Run ``python generate.py``
after changing the table; the files are committed so the suite is a
plain list of inputs.
"""

from __future__ import annotations

import json
from pathlib import Path

import bases

HERE = Path(__file__).parent
# Cases longer than this are not committed as files (see `big_cases`).
BIG = 64 << 10
CASES: list[dict] = []


def case(name: str, text: str, expect: str, *, simulate: bool = False,
         xfail: str | None = None) -> None:
    CASES.append({"name": name, "text": text, "expect": expect, "simulate": simulate,
                  "xfail": xfail})


def nic(name: str, expect: str, **kw: str) -> None:
    case(name, bases.QUEST_NIC.format(**{**bases.QUEST_NIC_DEFAULTS, **kw}), expect,
         simulate=expect == "ok")


# ---- every time field of the NIC model with each bad value --------------
BAD_TIMES = {
    "u64max": ("18446744073s", "exceeds the longest time accepted"),
    "over_limit": ("2000000s", "exceeds the longest time accepted"),
    "overflow_digits": ("99999999999999999999999s", "is not a number with a unit"),
    "negative": ("-1ms", "is negative"),
    "fraction_ns": ("1.5ns", "not a whole number"),
    "no_unit": ("10", "has no unit"),
    "bad_unit": ("5 fortnights", "unknown time unit"),
}
TIME_FIELDS = {
    "duration": lambda v: {"duration": v},
    "window": lambda v: {"window": v},
    "budget": lambda v: {"budget": v},
    "vcpu_period": lambda v: {"vperiod": v},
    "task_period": lambda v: {"tperiod": v},
    "top_half": lambda v: {"top_half": v},
    "bottom_half": lambda v: {"bottom_half": v},
    "interval": lambda v: {"arrival": f"{{kind: periodic, interval: {v}}}"},
    "compute": lambda v: {"program": f"{{compute: {v}}}"},
    "sleep": lambda v: {"program": f"{{sleep: {v}}}, {{compute: 1us}}"},
}
for field, fill in TIME_FIELDS.items():
    for tag, (value, rule) in BAD_TIMES.items():
        nic(f"time_{field}_{tag}", rule, **fill(value))

# ---- windows, counts, max_repl, queues ---------------------------------
nic("window_1ns", "windows: at most 1000000 per run", window="1ns")
nic("window_1ns_long", "windows: at most 1000000 per run", duration="1000000s", window="1ns")
nic("window_zero", "simulation.window: 0: must be positive", window="0ns")
nic("duration_zero", "simulation.duration: 0: must be positive", duration="0s")
nic("window_above_duration", "ok", duration="1ms", window="1s")
for v, rule in [("0", "must be at least 2"), ("1", "must be at least 2"),
                ("4000000000", "must be at most 1024"), (str(2**62), "must be at most 1024"),
                (str(2**64), "invalid"), ("-1", "invalid type: integer `-1`"),
                ("1.5", "invalid type")]:
    nic(f"max_repl_{v.replace('.', '_').replace('-', 'neg')}", rule, vextra=f", max_repl: {v}")
for v, rule in [("0", "loop.count: 0: must be positive"),
                ("10000000000", "must be at most 1000000000"),
                (str(2**64), "invalid"), ("-3", "invalid type: integer `-3`")]:
    nic(f"loop_count_{v.replace('-', 'neg')}", rule,
        program=f"{{loop: {{count: {v}, do: [{{compute: 1us}}]}}}}")
nic("loop_product_overflow", "exceed the longest time accepted",
    program="{loop: {count: 1000000000, do: [{loop: {count: 1000000000, "
            "do: [{compute: 1s}]}}]}}")
nic("loop_empty", "a program or loop needs at least one step",
    program="{loop: {count: 3, do: []}}")
nic("forever_empty", "a program or loop needs at least one step", program="{forever: []}")
for v, rule in [("0", "must be positive"), ("10000000", "must be at most 1048576 packets"),
                (str(2**40), "must be at most 1048576 packets"),
                ("-1", "invalid type: integer `-1`")]:
    nic(f"buffer_{v.replace('-', 'neg')}", rule, dextra=f", buffer: {v}")
    nic(f"ring_{v.replace('-', 'neg')}", rule, dextra=f", ring: {v}")
for v, rule in [("0", "machine.cpus: 0: must be between 1 and 1024"),
                ("5000", "machine.cpus: 5000: must be between 1 and 1024"),
                ("-1", "invalid type: integer `-1`")]:
    case(f"cpus_{v.replace('-', 'neg')}",
         bases.QUEST_NIC.format(**bases.QUEST_NIC_DEFAULTS).replace("cpus: 1", f"cpus: {v}"),
         rule)

# ---- rates, sizes, utilizations ------------------------------------------
for v, rule in [("1e12", "a NIC delivers at most"), ("-5", "missing or not positive"),
                (".nan", "missing or not positive"), (".inf", "missing or not positive"),
                ("0", "missing or not positive"), ("abc", "invalid type")]:
    nic(f"poisson_rate_{v.replace('.', '').replace('-', 'neg')}", rule,
        arrival=f"{{kind: poisson, rate: {v}}}")
nic("interval_1ns", "a NIC delivers at most", arrival="{kind: periodic, interval: 1ns}")
nic("burst_huge", "a burst has at most 1000000 packets",
    arrival="{kind: burst, count: 100000000, gap: 1us, every: 1s}")
nic("burst_gap_1ns", "a gap of at least",
    arrival="{kind: burst, count: 10, gap: 1ns, every: 1ms}")
nic("burst_zero", "missing or not positive",
    arrival="{kind: burst, count: 0, gap: 1us, every: 1ms}")
nic("arrival_unknown_kind", "unknown variant", arrival="{kind: tsunami, interval: 1us}")
nic("arrival_unknown_key", "unknown field", arrival="{kind: periodic, interval: 1us, x: 1}")
for v, rule in [("0B", "must be between 1B and 65536B"),
                ("100000B", "must be between 1B and 65536B"),
                ("1GiB", "must be between 1B and 65536B"), ("-1B", "is not a size"),
                ("1500", "has no unit"), ("1.5B", "not a whole number")]:
    nic(f"packet_{v.replace('.', '_').replace('-', 'neg')}", rule, packet=v)
for v, rule in [("150%", "must be in (0, 100%]"), ("0%", "must be in (0, 100%]"),
                ("-5%", "is negative"), ("1/0", "denominator"), ("3/2", "must be in (0, 100%]"),
                ("10", "has no unit"), ("99999999999999999999999%", "not a percentage")]:
    nic(f"util_{v.replace('%', 'pct').replace('/', '_').replace('-', 'neg')}", rule, util=v)
nic("budget_above_period", "exceeds period", budget="6ms")
nic("budget_zero", "must be positive", budget="0ns")

# ---- jobs longer than their period ---------------------------------------
nic("job_2000_periods", "a job longer than 1000 periods can never keep up",
    program="{compute: 10s}")
nic("job_1e6s_in_5ms", "a job longer than 1000 periods can never keep up",
    program="{compute: 1000000s}")
nic("job_longer_than_period_warns", "ok", program="{compute: 6ms}")
nic("storm_warns", "ok", arrival="{kind: periodic, interval: 5us}", bottom_half="20us")

# ---- names -----------------------------------------------------------------
NAMES = {
    "newline": '"a\\nb"', "ansi": '"x\\e[31mred\\e[0m"', "clear_screen": '"\\e[2J\\e[H"',
    "tab": '"a\\tb"', "nul": '"a\\0b"', "bell": '"\\a"', "cr": '"ok\\rfake"',
    "long": "n" * 300, "empty": '""', "blank": '"   "',
}
for tag, v in NAMES.items():
    rule = {"long": "at most 256 characters", "empty": "a name is required",
            "blank": "a name is required"}.get(tag, "no control characters")
    nic(f"name_vcpu_{tag}", rule, vname=v)
    nic(f"name_device_{tag}", rule, dname=v)
    if tag in ("newline", "ansi", "nul"):
        nic(f"name_task_{tag}", rule, tname=v)
nic("name_dup_vcpu", "is used twice", vname="io")

# ---- disk ------------------------------------------------------------------
def disk(name: str, expect: str, **kw: str) -> None:
    case(name, bases.QUEST_DISK.format(**{**bases.QUEST_DISK_DEFAULTS, **kw}), expect,
         simulate=expect == "ok")


disk("disk_product_2e80", "exceeds the longest time accepted", per_sector="1000000s",
     sectors="1000000000")
disk("disk_product_wrap", "exceeds the longest time accepted", per_sector="1000s",
     sectors="1000000000")
disk("disk_sectors_zero", "must be positive", sectors="0")
disk("disk_sectors_huge", "must be between 1 and 1000000000", sectors="10000000000")
disk("disk_sectors_u64", "invalid", sectors=str(2**64))
disk("disk_sector_zero", "must be between 1B", sector="0B")
disk("disk_sector_huge", "must be between 1B", sector="2GiB")
disk("disk_latency_u64", "exceeds the longest time accepted", latency="18446744073s")
disk("disk_ok", "ok")

# ---- generic devices -------------------------------------------------------
def generic(name: str, expect: str, **kw: str) -> None:
    case(name, bases.GENERIC.format(**{**bases.GENERIC_DEFAULTS, **kw}), expect,
         simulate=expect == "ok")


generic("generic_mi_zero", "must be positive", mi="0ns")
generic("generic_isr_u64", "exceeds the longest time accepted", isr="18446744073s")
generic("generic_storm_warns", "ok", mi="10us", isr="5us", dsr="20us")
case("generic_storm_quadratic",
     bases.GENERIC.format(**{**bases.GENERIC_DEFAULTS, "mi": "100ns"})
     .replace("duration: 10ms", "duration: 30ms"), "ok", simulate=True)
# (an interrupt source 250 times faster than its handler: the simulator's
# bounded O(log n) handler queue loses the excess instead of running in
# quadratic time, cpus[].lost_interrupts)

# ---- hypervisor ------------------------------------------------------------
def hyp(name: str, expect: str, *, xfail: str | None = None, **kw: str) -> None:
    case(name, bases.HYPERVISOR.format(**{**bases.HYPERVISOR_DEFAULTS, **kw}), expect,
         simulate=expect == "ok", xfail=xfail)


hyp("hyp_mi_zero", "min_interarrival: 0: must be positive", pmi="0ns")
hyp("hyp_isr_zero", "isr: 0: must be positive", pisr="0ns")
hyp("hyp_budget_above_period", "exceeds period", budget="20ms")
hyp("hyp_wcet_u64", "exceeds the longest time accepted", wcet="18446744073s")
hyp("hyp_name_ansi", "no control characters", pname='"\\e[31mnic"')
hyp("hyp_ok", "ok")
case("hyp_storm_isr_above_interarrival",
     bases.HYPERVISOR.format(**{**bases.HYPERVISOR_DEFAULTS, "pisr": "5us", "pmi": "100ns"})
     .replace("duration: 10ms", "duration: 100ms"), "ok", simulate=True)

# ---- trace files -----------------------------------------------------------
for tag, path, rule in [("dev_zero", "/dev/zero", "not a regular file"),
                        ("dir", "/", "not a regular file"),
                        ("missing", "/nonexistent/trace.csv", "No such file"),
                        ("dev_urandom", "/dev/urandom", "not a regular file")]:
    nic(f"trace_file_{tag}", rule, arrival=f"{{kind: trace, file: {path}}}")

# ---- YAML structure and size -----------------------------------------------
case("yaml_nested_flow_200k", "[" * 200_000, "nested more than 64 levels deep")
case("yaml_nested_map_100k", "{a: " * 100_000, "nested more than 64 levels deep")
case("yaml_nested_block_seq", "- " * 50_000 + "x\n", "levels deep by indentation")
case("yaml_deep_indent", "machine:\n" + " " * 5000 + "cpus: 1\n", "levels deep by indentation")
case("yaml_size_5mb", "# " + "x" * (5 << 20) + "\n", "larger than 4194304 bytes")
case("yaml_empty", "", "missing field `machine`")
case("yaml_null", "null\n", "invalid type")
case("yaml_list", "- 1\n- 2\n", "invalid type")
case("yaml_scalar", "hello\n", "invalid type")
case("yaml_unknown_key", bases.QUEST_NIC.format(**bases.QUEST_NIC_DEFAULTS) + "bogus: 1\n",
     "unknown field `bogus`")
case("yaml_duplicate_key", bases.QUEST_NIC.format(**bases.QUEST_NIC_DEFAULTS)
     + "machine: {cpus: 2, path: quest}\n", "duplicate")
case("yaml_tab_indent", "machine:\n\tcpus: 1\n", "cannot start any token")
case("yaml_unclosed", "machine: {cpus: 1, path: quest\n", "did not find expected")
case("yaml_billion_laughs",
     "a: &a [x, x, x, x, x, x, x, x, x]\n"
     + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, "
               f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
               f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(8)),
     "unknown field `a`")
case("yaml_long_string", "machine: {cpus: 1, path: \"" + "q" * 1_000_000 + "\"}\n",
     "unknown variant")
case("yaml_control_in_key", "machine: {cpus: 1, path: quest, \"\\e[31mkey\": 1}\n",
     "unknown field")
case("yaml_huge_int", "machine: {cpus: 99999999999999999999999999, path: quest}\n", "invalid")


def big_cases() -> dict[str, str]:
    """Text of the cases too large to commit, by name."""
    return {c["name"]: c["text"] for c in CASES if len(c["text"]) > BIG}


def main() -> None:
    models = HERE / "models"
    models.mkdir(exist_ok=True)
    for old in models.glob("*.yaml"):
        old.unlink()
    expected = {}
    names = set()
    for c in CASES:
        assert c["name"] not in names, c["name"]
        names.add(c["name"])
        big = len(c["text"]) > BIG
        if not big:  # the big ones are written by the test from this table
            (models / f"{c['name']}.yaml").write_text(c["text"])
        expected[c["name"]] = {k: c[k] for k in ("expect", "simulate", "xfail")}
        expected[c["name"]]["generated"] = big
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")
    print(f"{len(CASES)} cases")


if __name__ == "__main__":
    main()
