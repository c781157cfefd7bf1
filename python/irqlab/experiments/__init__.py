"""Paper reproductions behind ``irqlab reproduce NAME``.

Every experiment is a module in this package that defines

* ``NAME: str`` -- the name users type (``quest-table1``, ``vint-fig4``, ...),
* ``TITLE: str`` -- one line: which paper, which figure/table,
* ``run(out_dir: pathlib.Path, *, quick: bool = False) -> Result``.

``run`` writes its figures/CSV into ``out_dir`` and returns the checks of the
claims the paper makes (paper value, irqlab value, a two-sided band or an
ordering with a margin, holds, and the falsifier's result: see
``irqlab.experiments.claims``). Checks
that do not hold are reported, never hidden: the command still exits 0 and the
JSON says ``"holds": false``. ``quick`` runs a reduced version (fewer samples)
for the test suite; the full run is the default. An experiment that measures
this machine (real threads, KVM, tracepoints) sets ``MEASURED = True``: the
falsifier test (tests/python/test_falsifiers.py) runs every other one, and a
measured experiment's own test asserts its falsifiers.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from irqlab.experiments.claims import Check, Falsifier, summary

__all__ = ["Check", "Falsifier", "Result", "registry", "run", "summary"]


@dataclass
class Result:
    """What an experiment returns: its checks, a printable table, its files."""

    experiment: str
    checks: list[Check] = field(default_factory=list)
    table: str = ""
    files: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "experiment": self.experiment,
            "summary": summary(self.checks),
            "checks": [asdict(c) for c in self.checks],
            "files": self.files,
            "data": self.data,
        }


def _modules() -> list[ModuleType]:
    mods = []
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_") or info.name == "claims":
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(mod, "NAME") and hasattr(mod, "run"):
            mods.append(mod)
    return mods


def registry() -> dict[str, ModuleType]:
    """All experiments by name, sorted."""
    return dict(sorted((m.NAME, m) for m in _modules()))


def run(name: str, out_dir: Path, *, quick: bool = False) -> Result:
    reg = registry()
    if name not in reg:
        known = ", ".join(reg) or "(none)"
        raise ValueError(f"unknown experiment {name!r}; known: {known}")
    out_dir.mkdir(parents=True, exist_ok=True)
    return reg[name].run(out_dir, quick=quick)
