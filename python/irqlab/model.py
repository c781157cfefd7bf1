"""The YAML system model (``irqlab._native.model``; reference:
docs/model.md).

``load(path)`` validates a model file and returns it with its warnings and
the resolved simulator configuration; invalid models raise
:class:`ModelError` (a ``ValueError``) listing every problem with its field
path, value and rule. Scenario files shipped with irqlab live in
``irqlab/scenarios`` (:func:`scenario_path`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from irqlab._native import model as _model

ModelError = _model.ModelError
parse_duration = _model.parse_duration  # "500us" -> 500000 (ns)

__all__ = ["LoadedModel", "ModelError", "load", "loads", "parse_duration", "scenario_path",
           "scenarios"]


@dataclass
class LoadedModel:
    model: dict[str, Any]
    warnings: list[str]
    sim_config: dict[str, Any]


def loads(text: str, base_dir: Path | str = ".") -> LoadedModel:
    model_json, warnings = _model.load(text)
    cfg = json.loads(_model.lower(text, str(base_dir)))
    return LoadedModel(json.loads(model_json), list(warnings), cfg)


def load(path: Path | str) -> LoadedModel:
    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise FileNotFoundError(f"{p}: no such model file") from None
    except UnicodeDecodeError as e:
        raise ModelError(f"{p}: not a text file ({e.reason})") from None
    return loads(text, p.parent)


def scenarios() -> list[str]:
    """Names of the scenario files shipped with irqlab."""
    root = resources.files("irqlab") / "scenarios"
    return sorted(p.name.removesuffix(".yaml") for p in root.iterdir() if p.name.endswith(".yaml"))


def scenario_path(name: str) -> Path:
    p = Path(str(resources.files("irqlab") / "scenarios" / f"{name}.yaml"))
    if not p.exists():
        raise ValueError(f"unknown scenario {name!r}; shipped: {', '.join(scenarios())}")
    return p
