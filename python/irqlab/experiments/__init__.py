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

What ``irqlab reproduce --list`` says of each (``info``):

* ``SECONDS = {"quick": q, "full": f}`` -- the wall-clock time of
  ``irqlab reproduce NAME [--quick]``, measured on the project's 2-core VM
  (as root, every requirement present; see the measurement note below);
* ``NEEDS`` -- the words of ``REQUIREMENTS`` it cannot run without (it is then
  skipped with the reason), default none: the simulator and the analysis only;
* ``OPTIONAL`` -- the words whose rows it adds when they are present (the
  rest runs without them).

The times were measured on 2026-12-08, one experiment at a time, while other
work loaded the machine (load average 6 to 17 on 2 CPUs): an idle machine takes
less. ``tests/python/test_reproduce_list.py`` checks that every experiment
declares them in this vocabulary.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from irqlab.experiments.claims import Check, Falsifier, summary

__all__ = ["REQUIREMENTS", "Check", "Falsifier", "Result", "info", "registry", "run", "summary"]

#: What an experiment may need of the machine, by the word ``--list`` prints.
REQUIREMENTS = {
    "root": "runs as root (tracefs, a private network namespace, tracepoints)",
    "real threads": "SCHED_FIFO threads under irqlab-rt's supervisor (root or CAP_SYS_NICE)",
    "/dev/kvm": "the real VMM, irqlab-vmm, on KVM",
    "GHDL": "GHDL and cocotb, which simulate the Latencies IP (hdl/latency_ip)",
    "tracefs": "kernel tracepoints through tracefs",
    "BPF": "eBPF at tc ingress (CAP_BPF and CAP_NET_ADMIN)",
    "2 CPUs": "at least two CPUs this process may use",
    "cargo": "cargo, which builds a Rust binary of the repository on the first run",
    "checkout": "a repository checkout: files the wheel does not ship (hdl/, bench/, crates/; "
                "the real VMM's binary may be given as IRQLAB_VMM instead)",
    "QEMU": "qemu-system-x86_64 (the Quest kernel's machine)",
}


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


def info(name: str) -> dict[str, Any]:
    """What ``--list`` says of experiment ``name``: ``name``, ``title``,
    ``measured``, ``needs``, ``optional`` and ``seconds`` (quick, full)."""
    mod = registry()[name]
    return {"name": name, "title": mod.TITLE, "measured": bool(getattr(mod, "MEASURED", False)),
            "needs": list(getattr(mod, "NEEDS", ())),
            "optional": list(getattr(mod, "OPTIONAL", ())),
            "seconds": dict(mod.SECONDS)}


def run(name: str, out_dir: Path, *, quick: bool = False) -> Result:
    reg = registry()
    if name not in reg:
        known = ", ".join(reg) or "(none)"
        raise ValueError(f"unknown experiment {name!r}; known: {known}")
    out_dir.mkdir(parents=True, exist_ok=True)
    return reg[name].run(out_dir, quick=quick)
