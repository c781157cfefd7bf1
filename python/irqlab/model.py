"""The YAML system model (``irqlab._native.model``; reference:
docs/model.md; walkthrough: docs/python.md).

Three ways in, one result: ``load(path)`` reads a model file, ``loads(text)``
takes YAML (or JSON) text and ``from_dict(d)`` a plain dict in the same shape
(what ``yaml.safe_load`` of a model file gives). Each validates the model and
returns a :class:`LoadedModel`: the model as written, its warnings and the
resolved simulator configuration (``sim_config``: every time in integer ns).

Units: in the model every duration, utilization, size and rate carries its
unit as text (``"500us"``, ``"10%"``, ``"64B"``, ``"12.5MB/s"``); a bare number is
an error. Everything irqlab computes (``sim_config``, metrics, bounds) is in
integer nanoseconds, bytes and bytes per second.

Invalid models raise :class:`ModelError` (a ``ValueError``) whose message
lists every problem and whose ``errors`` attribute holds them as
``(path, value, rule)`` tuples, e.g.
``("vcpus[0].budget", "12ms", "exceeds period 10ms")``. Scenario files
shipped with irqlab live in ``irqlab/scenarios`` (:func:`scenario_path`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from irqlab._native import model as _model

if TYPE_CHECKING:
    from irqlab.sim import SimResult

ModelError = _model.ModelError
parse_duration = _model.parse_duration  # "500us" -> 500000 (ns)

__all__ = ["LoadedModel", "ModelError", "from_dict", "load", "loads", "model_error",
           "parse_duration", "scenario_path", "scenarios"]


def model_error(path: str, value: Any, rule: str) -> Exception:
    """A :class:`ModelError` for one problem, with ``errors`` set."""
    value = "" if value is None else str(value)
    e = ModelError(f"{path}: {value}: {rule}" if value else f"{path}: {rule}")
    e.errors = [(path, value, rule)]
    return e


class LoadedModel:
    """A validated model.

    ``model``: the model as a dict (units as text, defaults filled in);
    ``warnings``: what validation found suspicious but allowed;
    ``system``: the resolved system, held in Rust (``_native.model.System``),
    which :meth:`simulate` and :meth:`analyze` read as it is, so a model is
    parsed once per command; ``sim_config``: the same resolved system as a
    dict (times in integer ns), made on first use. Once ``sim_config`` has
    been taken it is what :meth:`simulate` and :meth:`analyze` read, edits
    included."""

    def __init__(self, model: dict[str, Any], warnings: list[str],
                 sim_config: dict[str, Any] | None = None, system: Any = None) -> None:
        if sim_config is None and system is None:
            raise ValueError("LoadedModel needs a sim_config or a resolved system")
        self.model = model
        self.warnings = warnings
        self.system = system
        self._sim_config = sim_config

    @property
    def sim_config(self) -> dict[str, Any]:
        """The resolved system as a dict (times in integer ns), made from
        ``system`` on first use; from then on the back ends read it."""
        if self._sim_config is None:
            self._sim_config = self.system.config()
        return self._sim_config

    @sim_config.setter
    def sim_config(self, value: dict[str, Any]) -> None:
        self._sim_config = value

    def resolved(self) -> Any:
        """What the back ends read: the Rust handle while ``sim_config`` has
        not been taken (no conversion at all), else the dict."""
        return self.system if self._sim_config is None else self._sim_config

    def __repr__(self) -> str:
        names = [v.get("name") for v in self.model.get("vcpus", [])]
        return f"LoadedModel(vcpus={names}, warnings={len(self.warnings)})"

    def simulate(self, *, seed: int | None = None, duration_ns: int | None = None,
                 trace: bool | Mapping[str, Any] | None = None,
                 progress: bool | Callable[[int, int], None] = False) -> SimResult:
        """Simulate this model (see :func:`irqlab.sim.simulate`); the
        overrides leave ``sim_config`` unchanged."""
        from irqlab.sim import simulate

        return simulate(self, seed=seed, duration_ns=duration_ns, trace=trace,
                        progress=progress)

    def analyze(self) -> dict[str, Any]:
        """Everything ``irqlab analyze`` gives (:func:`irqlab.analysis.analyze`,
        what its ``--json`` file holds), integer ns."""
        from irqlab.analysis import analyze

        return analyze(self)


def loads(text: str | Mapping[str, Any], base_dir: Path | str = ".") -> LoadedModel:
    """Validate a model given as YAML (or JSON) text; ``base_dir`` resolves
    relative file names (trace CSVs). A dict is passed on to
    :func:`from_dict`."""
    if isinstance(text, Mapping):
        return from_dict(text, base_dir)
    if not isinstance(text, str):
        raise TypeError(f"loads() takes the model as YAML text or a dict, not "
                        f"{type(text).__name__}; use load(path) for a file")
    model_json, warnings, system = _model.resolve(text, str(base_dir))
    return LoadedModel(json.loads(model_json), list(warnings), system=system)


def from_dict(d: Mapping[str, Any], base_dir: Path | str = ".") -> LoadedModel:
    """Validate a model given as a dict in the shape of a model file, e.g.
    ``{"machine": {"cpus": 1}, "vcpus": [{"name": "V0", "budget": "2ms",
    "period": "10ms"}], ...}`` (units as text). Keys must be strings and
    values plain JSON types."""
    if not isinstance(d, Mapping):
        raise TypeError(f"from_dict() takes a dict, not {type(d).__name__}")
    try:
        text = json.dumps(copy.deepcopy(dict(d)), allow_nan=False)
    except (TypeError, ValueError) as e:
        raise model_error("", None, f"not plain JSON data: {e}") from None
    return loads(text, base_dir)


def load(path: Path | str) -> LoadedModel:
    """Read and validate the model file at ``path`` (YAML)."""
    p = Path(path)
    try:
        text = read_input(p, MAX_MODEL_BYTES)
    except FileNotFoundError:
        raise FileNotFoundError(f"{p}: no such model file") from None
    except UnicodeDecodeError as e:
        raise model_error(str(p), None, f"not a text file ({e.reason})") from None
    return loads(text, p.parent)


# Largest model file read (the Rust loader bounds the text the same way).
MAX_MODEL_BYTES = 4 << 20


def read_input(p: Path, limit: int) -> str:
    """The text of a regular file of at most `limit` bytes (a directory, a
    device such as /dev/zero or a FIFO is refused before reading)."""
    import stat

    st = p.stat()
    if stat.S_ISDIR(st.st_mode):
        raise ModelError(f"{p}: is a directory, not a model file")
    if not stat.S_ISREG(st.st_mode):
        raise ModelError(f"{p}: not a regular file")
    with p.open("rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ModelError(f"{p}: larger than {limit} bytes, the largest model accepted")
    return data.decode()


def scenarios() -> list[str]:
    """Names of the scenario files shipped with irqlab."""
    root = resources.files("irqlab") / "scenarios"
    return sorted(p.name.removesuffix(".yaml") for p in root.iterdir() if p.name.endswith(".yaml"))


def scenario_path(name: str) -> Path:
    """Path of the shipped scenario ``name`` (see :func:`scenarios`)."""
    p = Path(str(resources.files("irqlab") / "scenarios" / f"{name}.yaml"))
    if not p.exists():
        raise ValueError(f"unknown scenario {name!r}; shipped: {', '.join(scenarios())}")
    return p
