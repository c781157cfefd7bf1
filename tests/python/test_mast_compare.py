"""bench/mast_compare.py without MAST: the translation of irqlab models to
MAST's text model, what it skips, the generator's determinism, and the
message when no mast_analysis is given (docs/mast.md)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from irqlab.model import from_dict, load

ROOT = Path(__file__).resolve().parents[2]


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mast_compare", ROOT / "bench/mast_compare.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["mast_compare"] = mod
    spec.loader.exec_module(mod)
    return mod


mc = _tool()


def test_sanity_case_translates() -> None:
    tr = mc.translate(load(ROOT / "bench/mast/sanity-ss-58us.yaml").model)
    (t,) = tr.tasks
    assert (t.wcet, t.period, t.deadline, t.budget, t.repl_period) == (
        58_000, 4_800_000, 4_800_000, 90_000, 4_800_000)
    assert t.group() == "ss-covers" and t.mast_case().startswith("2.1")
    text = tr.text()
    assert "Sporadic_Server_Policy" in text and "Initial_Capacity           => 90000.0" in text
    assert "Background_Priority        => 1," in text


def test_priorities_follow_irqlab_order() -> None:
    m = from_dict({
        "machine": {"cpus": 1, "path": "linux"},
        "vcpus": [{"name": "lo", "policy": "fifo", "priority": 10},
                  {"name": "hi", "policy": "fifo", "priority": 50}],
        "tasks": [{"name": "a", "vcpu": "lo", "period": "10ms", "priority": 1,
                   "program": [{"compute": "1ms"}]},
                  {"name": "b", "vcpu": "lo", "period": "10ms", "priority": 2,
                   "program": [{"loop": {"count": 3, "do": [{"compute": "100us"}]}}]},
                  {"name": "c", "vcpu": "hi", "period": "5ms", "deadline": "4ms",
                   "program": [{"compute": "1ms"}]}],
        "devices": [{"name": "eth", "kind": "nic", "class": "net", "top_half": "2us",
                     "bottom_half": "3us", "packet": "64B",
                     "arrival": {"kind": "burst", "count": 3, "gap": "10us",
                                 "every": "1ms"}}],
    })
    tr = mc.translate(m.model)
    p = {t.name: t.priority for t in tr.tasks}
    assert p["c"] > p["b"] > p["a"] >= 2
    assert {t.name: t.wcet for t in tr.tasks}["b"] == 300_000
    (q,) = tr.irqs
    assert (q.wcet, q.period, q.jitter) == (15_000, 1_000_000, 20_000)


@pytest.mark.parametrize("scenario, reason", [
    ("isolation", "PIBS I/O VCPU"),
    ("usb-throughput", "xHCI"),
    ("vint-case", "hypervisor"),
])
def test_what_mast_cannot_express_is_skipped(scenario: str, reason: str) -> None:
    from irqlab.model import scenario_path

    with pytest.raises(mc.Skip, match=reason):
        mc.translate(load(scenario_path(scenario)).model)


def test_generator_is_deterministic(tmp_path: Path) -> None:
    for shape in mc.SHAPES:
        a = [p.read_text() for p in mc.generate(shape, 3, 7, tmp_path / "a" / shape)]
        b = [p.read_text() for p in mc.generate(shape, 3, 7, tmp_path / "b" / shape)]
        assert a == b
        for p in (tmp_path / "a" / shape).iterdir():
            mc.translate(load(p).model)  # every generated system is expressible


def test_without_mast_it_says_so(monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("MAST_ANALYSIS", raising=False)
    assert mc.main(["sanity"]) == 3
    assert "MAST_ANALYSIS is not set" in capsys.readouterr().out
