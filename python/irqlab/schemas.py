"""JSON Schemas of a model file and of ``metrics.json``, generated from the
Rust types (``schemars``): ``model_schema()`` for editor completion and
validation of model files, ``metrics_schema()`` for consumers of
``metrics.json`` (fields: docs/metrics.md).

``python -m irqlab.schemas DIR`` writes ``model.schema.json`` and
``metrics.schema.json`` into DIR (the checked-in copies live in
``docs/schemas``; the tests fail when they are stale).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from irqlab._native import model as _model
from irqlab._native import sim as _sim


def model_schema() -> dict[str, Any]:
    """The JSON Schema of a model file (YAML is checked as its JSON form)."""
    return json.loads(_model.schema())


def metrics_schema() -> dict[str, Any]:
    """The JSON Schema of ``metrics.json``."""
    return json.loads(_sim.metrics_schema())


def text(schema: dict[str, Any]) -> str:
    """The checked-in form: sorted keys, one-space indent, final newline."""
    return json.dumps(schema, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def write(directory: Path) -> list[Path]:
    """Write ``model.schema.json`` and ``metrics.schema.json`` into
    ``directory``; returns their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    out = []
    for name, schema in (("model", model_schema()), ("metrics", metrics_schema())):
        p = directory / f"{name}.schema.json"
        p.write_text(text(schema))
        out.append(p)
    return out


if __name__ == "__main__":
    for p in write(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/schemas")):
        print(p)
