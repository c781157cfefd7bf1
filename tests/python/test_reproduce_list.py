"""`irqlab reproduce --list` says what each experiment needs and how long it
takes; `--names` keeps the names-only form (issue 38).

Every experiment declares its times (`SECONDS`) and its requirements
(`NEEDS`, `OPTIONAL`) in the vocabulary of `experiments.REQUIREMENTS`; the
declarations are checked against what the code does: an experiment whose
source asks for root, KVM, the runtime's real threads or GHDL declares it,
and one that needs root is skipped with that reason when it is not root.
"""

from __future__ import annotations

import inspect
import json
import os
from pathlib import Path

import pytest

from irqlab import experiments
from irqlab.cli import main

REGISTRY = experiments.registry()

# What in an experiment's own source shows which requirement it has.
MARKERS = {
    "os.geteuid()": "root",
    "kt.unavailable(": "root",
    "vmm.kvm_unavailable(": "/dev/kvm",
    "RuntimeUnavailable": "real threads",
    'get_runner("ghdl")': "GHDL",
    "parents[3]": "checkout",
}


@pytest.mark.parametrize("name", list(REGISTRY))
def test_every_experiment_declares_its_needs_and_times(name: str) -> None:
    mod = REGISTRY[name]
    info = experiments.info(name)
    assert set(mod.SECONDS) == {"quick", "full"}
    assert all(isinstance(s, int | float) and s > 0 for s in mod.SECONDS.values())
    declared = info["needs"] + info["optional"]
    assert set(declared) <= set(experiments.REQUIREMENTS), declared
    assert len(set(declared)) == len(declared)
    if not info["measured"]:
        assert not declared, "a simulated experiment needs nothing of the machine"
    source = inspect.getsource(mod)
    for marker, need in MARKERS.items():
        if marker in source:
            assert need in declared, f"{name} uses {marker!r} but does not declare {need!r}"


@pytest.mark.parametrize("name", [n for n in REGISTRY if "root" in experiments.info(n)["needs"]])
def test_an_experiment_that_needs_root_says_so_when_not_root(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    r = experiments.run(name, tmp_path, quick=True)
    assert "root" in r.data["skipped"] and not r.checks


def test_list_is_one_experiment_per_line_name_first(capsys: pytest.CaptureFixture[str],
                                                    tmp_path: Path) -> None:
    j = tmp_path / "list.json"
    assert main(["reproduce", "--list", "--json", str(j)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list(REGISTRY)  # `awk '{print $1}'`
    infos = json.loads(j.read_text())
    assert [i["name"] for i in infos] == list(REGISTRY)
    for line, i in zip(lines, infos, strict=True):
        assert " quick " in line and " full " in line and line.endswith(i["title"])
        assert all(n in line for n in i["needs"] + i["optional"])
        assert ("simulator only" in line) == (not i["needs"] and not i["optional"])
    assert len({line.index(" quick ") for line in lines}) == 1  # aligned columns
    table4 = next(line for line in lines if line.startswith("latency-ip-table4 "))
    assert "needs root, real threads, GHDL, checkout;" in table4
    assert "uses /dev/kvm" in table4 and "if present" in table4
    rtt = next(line for line in lines if line.startswith("vint-kvm-rtt "))
    assert "needs nothing; uses /dev/kvm" in rtt


def test_names_prints_the_names_alone(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reproduce", "--names"]) == 0
    assert capsys.readouterr().out.splitlines() == list(REGISTRY)


@pytest.mark.parametrize(("seconds", "shown"), [(0.4, "1 s"), (4.4, "4 s"), (89, "89 s"),
                                                (155.3, "3 min"), (600, "10 min")])
def test_times_are_rounded_for_reading(seconds: float, shown: str) -> None:
    from irqlab.commands.reproduce import duration

    assert duration(seconds) == shown
