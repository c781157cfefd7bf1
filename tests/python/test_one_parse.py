"""`irqlab simulate` and `irqlab analyze` parse a model once: the YAML is
read and resolved by one native call (`_native.model.resolve`), and the
simulator and the analysis are handed the resolved system as a Rust handle,
not a dict rebuilt from it (docs/architecture.md, "One data flow")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import irqlab.analysis
import irqlab.model
import irqlab.sim
from irqlab import cli
from irqlab._native import model as native_model
from irqlab.model import scenario_path


class Counting:
    """A stand-in for a native module that counts the calls it forwards
    and records the type of each call's first argument."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[tuple[str, str]] = []

    def __getattr__(self, name: str) -> Any:
        target = getattr(self.inner, name)
        if not callable(target) or isinstance(target, type):
            return target

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, type(args[0]).__name__ if args else ""))
            return target(*args, **kwargs)

        return counted

    def names(self) -> list[str]:
        return [n for n, _ in self.calls]


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, Counting]:
    out = {"model": Counting(irqlab.model._model), "sim": Counting(irqlab.sim._sim),
           "analysis": Counting(irqlab.analysis._a)}
    monkeypatch.setattr(irqlab.model, "_model", out["model"])
    monkeypatch.setattr(irqlab.sim, "_sim", out["sim"])
    monkeypatch.setattr(irqlab.analysis, "_a", out["analysis"])
    return out


def test_simulate_parses_once_and_runs_the_handle(counted: dict[str, Counting],
                                                  tmp_path: Path) -> None:
    rc = cli.main(["simulate", str(scenario_path("isolation")), "--out", str(tmp_path),
                   "--no-plots", "--duration", "50ms"])
    assert rc == 0
    assert counted["model"].names() == ["resolve"]
    # the simulator got the resolved system itself, not a dict made from it
    assert counted["sim"].calls == [("run", "System")]
    assert (tmp_path / "metrics.json").exists()


def test_analyze_parses_once_and_analyses_the_handle(counted: dict[str, Counting],
                                                     tmp_path: Path) -> None:
    out = tmp_path / "a.json"
    cli.main(["analyze", str(scenario_path("isolation")), "--json", str(out)])
    assert counted["model"].names() == ["resolve"]
    assert ("model_bounds", "System") in counted["analysis"].calls
    assert out.exists()


def test_edited_sim_config_is_what_runs() -> None:
    """Once `sim_config` is taken it is what the back ends read: an edit
    takes effect (and the handle is then not used)."""
    m = irqlab.model.load(scenario_path("isolation"))
    short = m.simulate(duration_ns=20_000_000)
    m.sim_config["duration"] = 10_000_000
    assert m.resolved() is m.sim_config
    edited = m.simulate()
    assert edited.metrics["duration_ns"] == 10_000_000
    assert short.metrics["duration_ns"] == 20_000_000


def test_handle_and_dict_give_the_same_metrics() -> None:
    """The same resolved system, run from the handle and from its dict,
    gives the same metrics bit for bit."""
    a = irqlab.model.load(scenario_path("isolation"))
    b = irqlab.model.load(scenario_path("isolation"))
    assert isinstance(a.resolved(), native_model.System)
    from_handle = a.simulate(seed=3, duration_ns=30_000_000).metrics
    from_dict = irqlab.sim.simulate(dict(b.sim_config), seed=3, duration_ns=30_000_000).metrics
    assert from_handle == from_dict


def test_unknown_run_option_is_an_error() -> None:
    m = irqlab.model.load(scenario_path("isolation"))
    with pytest.raises(ValueError, match="not a run option"):
        irqlab.sim._sim.run(m.system, None, None, "json", {"sed": 1})
