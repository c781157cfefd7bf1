"""The wheel works installed, away from the checkout (issue 38).

`make wheel` builds the release wheel (maturin; after `make setup` it reuses
the release build of `maturin develop`, so it only packs). This test installs
it into a fresh virtualenv in a temporary directory -- its runtime
dependencies from PyPI's wheels, downloaded once into target/wheelhouse and
installed from there without the index afterwards -- and runs the installed
`irqlab` with the temporary directory as its working directory and an
environment that names nothing of the checkout, so nothing can be imported
from the source tree: `check`, `simulate`, `analyze` and `report` on a
shipped scenario read from the installed package data, `reproduce
--names` from the installed experiments, and one experiment that reads the
package's data (usb-latency, its measured costs).

It fails when the wheel leaves out a scenario, the experiments' data or the
native module, when a runtime dependency is not declared in pyproject.toml
(only the declared ones are installed), or when the package reaches into the
checkout.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import irqlab
from irqlab import experiments
from irqlab.model import scenarios

REPO = Path(__file__).resolve().parents[2]
WHEELS = REPO / "target" / "wheels"
WHEELHOUSE = REPO / "target" / "wheelhouse"
SCENARIO = "control-and-flood"


def _make_wheel() -> Path:
    cmd = ["make", "--no-print-directory", "-C", str(REPO), "wheel"]
    venv = Path(sys.prefix)
    if venv != REPO / ".venv":  # the tests run from another virtualenv: build with its tools
        cmd.append(f"VENV={venv}")
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    found = sorted(WHEELS.glob("irqlab-*.whl"))
    assert len(found) == 1, found
    return found[0]


def _pip(*args: str | Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "-q",
                    *map(str, args)], check=True)


@pytest.fixture(scope="module")
def wheel() -> Path:
    return _make_wheel()


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv (outside the checkout) with the wheel and only the
    dependencies it declares; returns its directory."""
    root = tmp_path_factory.mktemp("wheel")
    assert REPO not in root.parents
    venv = root / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"

    def install() -> None:
        _pip("--python", py, "install", "--no-compile", "--no-index", "--find-links",
             WHEELHOUSE, wheel)

    try:
        install()
    except subprocess.CalledProcessError:
        # first run (or a dependency changed): fetch the declared dependencies'
        # wheels once; never the index's irqlab, always the wheel just built
        _pip("download", "--only-binary", ":all:", "--dest", WHEELHOUSE, wheel)
        for w in WHEELHOUSE.glob("irqlab-*.whl"):
            w.unlink()
        install()
    return venv


def _run(venv: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(cwd), "LANG": "C.UTF-8",
           "MPLBACKEND": "Agg"}
    return subprocess.run(list(args), cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def test_wheel_holds_the_native_module_and_every_package_data_file(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "irqlab/_native.abi3.so" in names
    package = Path(irqlab.__file__).parent
    data = {str(p.relative_to(package.parent)) for p in package.rglob("*")
            if p.is_file() and p.suffix not in (".py", ".pyc", ".so")}
    assert {f"irqlab/scenarios/{s}.yaml" for s in scenarios()} <= data
    missing = sorted(data - names)
    assert not missing, f"package data left out of the wheel: {missing}"
    sources = {str(p.relative_to(package.parent)) for p in package.rglob("*.py")}
    assert not sorted(sources - names), "modules left out of the wheel"
    entry = zipfile.ZipFile(wheel).read(
        next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    assert re.search(r"^irqlab\s*=\s*irqlab\.cli:main$", entry, re.M), entry


def test_installed_package_runs_outside_the_checkout(installed: Path,
                                                     tmp_path: Path) -> None:
    site = installed / "lib"
    probe = _run(installed, tmp_path, "python", "-c",
                 "import json, irqlab, irqlab._native as n; from irqlab.model import "
                 f"scenario_path, scenarios; print(json.dumps([irqlab.__file__, n.__file__, "
                 f"str(scenario_path({SCENARIO!r})), scenarios()]))")
    assert probe.returncode == 0, probe.stderr
    package, native, model, shipped = json.loads(probe.stdout)
    for p in (package, native, model):
        assert Path(p).is_relative_to(site), p  # the installed copy, not the checkout's
    assert shipped == scenarios()

    check = _run(installed, tmp_path, "irqlab", "check", model)
    assert check.returncode == 0, check.stderr
    assert "valid (quest path, 1 CPU(s))" in check.stdout

    sim = _run(installed, tmp_path, "irqlab", "simulate", model, "--out", "run", "--trace",
               "--duration", "200ms")
    assert sim.returncode == 0, sim.stderr
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    control = next(t for t in metrics["tasks"] if t["name"] == "control")
    assert control["released"] >= 20 and control["deadline_misses"] == 0
    assert (tmp_path / "run" / "trace.json").stat().st_size > 0

    analysis = _run(installed, tmp_path, "irqlab", "analyze", model, "--json", "bounds.json")
    assert analysis.returncode == 0, analysis.stdout + analysis.stderr
    assert "verdict: every server, task and flow is bounded" in analysis.stdout
    assert json.loads((tmp_path / "bounds.json").read_text())["verdict"]["ok"] is True

    report = _run(installed, tmp_path, "irqlab", "report", "run")
    assert report.returncode == 0, report.stderr
    page = (tmp_path / "run" / "report.html").read_text()
    assert page.lstrip().lower().startswith("<!doctype html") and "control" in page

    names = _run(installed, tmp_path, "irqlab", "reproduce", "--names")
    assert names.returncode == 0, names.stderr
    assert names.stdout.split() == list(experiments.registry())
    # an experiment that reads the package's data (experiments/costs-vm.yaml)
    rep = _run(installed, tmp_path, "irqlab", "reproduce", "usb-latency", "--quick",
               "--out", "rep", "--json", "rep.json")
    assert rep.returncode == 0, rep.stderr
    assert json.loads((tmp_path / "rep.json").read_text())["summary"]["claims"] > 0
