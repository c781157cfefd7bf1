"""The QUEST-VCPU experiments run (reduced) and their claims hold; the CLI
contract of `irqlab reproduce` (list, table, JSON, exit code 0)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from irqlab import experiments
from irqlab.cli import main

QUEST = ["quest-table1", "quest-shared-iovcpu", "quest-overhead", "quest-pibs-vs-ss"]


def test_list_names_every_quest_experiment(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reproduce", "--list"]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert set(QUEST) <= set(names)


@pytest.mark.parametrize("name", ["quest-table1", "quest-shared-iovcpu"])
def test_claims_hold(name: str, reproduced: Callable[[str], experiments.Result]) -> None:
    r = reproduced(name)
    failed = [c.claim for c in r.checks if not c.holds]
    assert not failed, failed
    assert all(Path(f).exists() for f in r.files)


def test_table1_only_vcpu3_loses(reproduced: Callable[[str], experiments.Result]) -> None:
    shares = reproduced("quest-table1").data["shares"]
    before, after = shares["no CD-ROM I/O"], shares["CD-ROM I/O"]
    # exact RM shares of the Table 1 servers when all are CPU-bound
    assert [round(before[v], 2) for v in ("VCPU0", "VCPU1", "VCPU2", "VCPU3")] == [
        40.0, 25.0, 25.0, 10.0]
    assert after["VCPU3"] < 1.0 and 9.0 < after["IOVCPU"] <= 10.0


def test_reproduce_cli_writes_json_and_exits_0(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "o"
    j = tmp_path / "r.json"
    assert main(["reproduce", "quest-overhead", "--quick", "--out", str(out),
                 "--json", str(j)]) == 0
    data = json.loads(j.read_text())
    assert data["experiment"] == "quest-overhead"
    assert {"claim", "paper", "irqlab", "tolerance", "holds", "lower", "upper",
            "falsifier"} <= set(data["checks"][0])
    assert data["summary"]["claims"] == len(data["checks"])
    # the absolute 0.3 % of the paper's 2011 machine is not reproduced by
    # the decision-cost model: the check says so instead of hiding it
    assert any(not c["holds"] for c in data["checks"])
    assert (out / "quest_overhead.png").exists()
    printed = capsys.readouterr().out
    assert "checks hold" in printed and "falsifier: " in printed


def test_pibs_advantage_ends_at_the_crossover(
        reproduced: Callable[[str], experiments.Result]) -> None:
    c = reproduced("quest-pibs-vs-ss").data["curve"]
    ratio = {bh: c[bh]["pibs"]["kBps"] / c[bh]["sporadic"]["kBps"] for bh in c}
    # below C / max_repl = 3.125 us the SS's full queue discards budget
    assert ratio[1] > 3 and ratio[2] > 1.5 and ratio[3] > 1.05
    assert all(abs(r - 1) < 0.02 for bh, r in ratio.items() if bh >= 4)


def test_unknown_experiment_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reproduce", "no-such"]) == 2
    assert "unknown experiment 'no-such'" in capsys.readouterr().err
