"""JSON Schemas of the model and of metrics.json: the checked-in copies are
what the Rust types generate, shipped scenarios and real metrics validate,
bad models do not, and docs/metrics.md documents exactly the fields of
metrics.json (a field added without documentation fails here)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from irqlab.model import load, scenario_path, scenarios
from irqlab.schemas import metrics_schema, model_schema, text

jsonschema = pytest.importorskip("jsonschema")
DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.mark.parametrize(("name", "gen"), [("model", model_schema), ("metrics", metrics_schema)])
def test_checked_in_schema_is_current(name: str, gen: Any) -> None:
    path = DOCS / "schemas" / f"{name}.schema.json"
    assert path.read_text() == text(gen()), \
        f"{path} is stale: run `python -m irqlab.schemas docs/schemas`"


def test_scenarios_validate_and_bad_models_do_not() -> None:
    v = jsonschema.Draft202012Validator(model_schema())
    for s in scenarios():
        d = yaml.safe_load(scenario_path(s).read_text())
        assert not list(v.iter_errors(d)), s
    good = yaml.safe_load(scenario_path("usb-priority-inversion").read_text())
    for path, value in ((("vcpus", 0, "budget"), 1000), (("vcpus", 0, "budget"), "2 fortnights"),
                        (("machine", "colour"), "red"), (("machine", "path"), "windows"),
                        (("vcpus", 7, "utilization"), "0.1")):
        d = yaml.safe_load(scenario_path("usb-priority-inversion").read_text())
        node = d
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value
        assert list(v.iter_errors(d)), (path, value)
    assert not list(v.iter_errors(good))


def test_real_metrics_validate() -> None:
    v = jsonschema.Draft202012Validator(metrics_schema())
    for s in ("usb-priority-inversion", "vint-analysis"):
        m = load(scenario_path(s)).simulate(duration_ns=100_000_000).metrics
        errors = [e.message for e in v.iter_errors(m)]
        assert not errors, (s, errors[:3])


def documented() -> dict[str, set[str]]:
    """Section (the definition name in parentheses in a `##` heading) ->
    the backticked field names in its table's first column."""
    out: dict[str, set[str]] = {}
    current = None
    for line in (DOCS / "metrics.md").read_text().splitlines():
        if line.startswith("## "):
            m = re.search(r"\((\w+)\)\s*$", line)
            current = m.group(1) if m else None
            if current:
                out[current] = set()
        elif current and (m := re.match(r"\|\s*`(\w+)`\s*\|", line)):
            out[current].add(m.group(1))
    return out


def test_every_metrics_field_is_documented() -> None:
    schema = metrics_schema()
    defs = {"Metrics": schema, **schema["$defs"]}
    docs = documented()
    for name, d in defs.items():
        fields = set(d["properties"])
        assert name in docs, f"docs/metrics.md has no section ending in ({name})"
        missing, stale = fields - docs[name], docs[name] - fields
        assert not missing, f"{name}: fields without documentation: {sorted(missing)}"
        assert not stale, f"{name}: documented fields that do not exist: {sorted(stale)}"
        for f, p in d["properties"].items():
            assert p.get("description"), f"{name}.{f} has no doc comment in metrics.rs"
