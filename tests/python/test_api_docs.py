"""Every public function, class, method and property of the Python API has
a docstring, and one that takes a time or a size without a unit in its
name says the unit (issue 19: "every public function has a docstring with
units"). Checked mechanically over the modules a notebook user imports,
including what their classes inherit from ``irqlab._native``."""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Iterator
from typing import Any

# the modules of the Python API (docs/python.md); the CLI's commands and
# the experiments are not an API
MODULES = ("irqlab.model", "irqlab.sim", "irqlab.analysis", "irqlab.sweep", "irqlab.report",
           "irqlab.schemas", "irqlab.core", "irqlab.tasksets", "irqlab.tracefile",
           "irqlab.plots", "irqlab.compare", "irqlab.export", "irqlab.calibrate",
           "irqlab.runtime", "irqlab.vmm")

# a parameter holding a time, size or rate whose name carries no unit
QUANTITY = re.compile(r"^(now|t|time|duration|period|budget|runtime|latency|deadline|wcet|"
                      r"window|interval|until|offset|inherit_period|main_period|alarm_lat|"
                      r"lo|hi|start|end)$")
UNIT = re.compile(r"\b(ns|us|ms|s|seconds?|nanoseconds?|bytes?|B/s|fraction|percent|%)\b|"
                  r"_ns\b|%")


def public(module: Any) -> Iterator[tuple[str, Any]]:
    names = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
    for n in names:
        obj = getattr(module, n)
        own = getattr(obj, "__module__", None) == module.__name__
        native = (getattr(obj, "__module__", "") or "").startswith("irqlab._native")
        if (inspect.isfunction(obj) or inspect.isclass(obj) or inspect.isbuiltin(obj)) \
                and (own or (native and n in (getattr(module, "__all__", None) or ()))):
            yield f"{module.__name__}.{n}", obj


def members(cls: type) -> Iterator[tuple[str, Any]]:
    """Public methods and properties, own or inherited from irqlab classes
    (not from builtins such as ``Exception``)."""
    seen: set[str] = set()
    for klass in cls.__mro__:
        if not (klass.__module__ or "").startswith("irqlab"):
            continue
        for n, attr in vars(klass).items():
            if n.startswith("_") or n in seen:
                continue
            seen.add(n)
            if isinstance(attr, property):
                yield n, attr.fget
            elif (inspect.isfunction(attr) or inspect.ismethoddescriptor(attr)
                  or inspect.isdatadescriptor(attr)
                  or isinstance(attr, staticmethod | classmethod)):
                yield n, attr


def needs_unit(fn: Any) -> list[str]:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return []
    return [p for p in params if QUANTITY.match(p)]


def test_every_public_function_has_a_docstring_with_units() -> None:
    missing: list[str] = []
    no_unit: list[str] = []
    checked = 0
    for mod_name in MODULES:
        module = importlib.import_module(mod_name)
        for name, obj in public(module):
            items = [(name, obj)]
            if inspect.isclass(obj):
                items += [(f"{name}.{n}", a) for n, a in members(obj)]
            for full, fn in items:
                checked += 1
                doc = inspect.getdoc(fn) if not inspect.isclass(fn) else fn.__doc__
                if not doc or not doc.strip():
                    missing.append(full)
                elif needs_unit(fn) and not UNIT.search(doc):
                    no_unit.append(f"{full}({', '.join(needs_unit(fn))})")
    assert checked > 150
    assert not missing, f"{len(missing)} public names without a docstring: {missing}"
    assert not no_unit, f"docstrings that do not say the unit of a time or size: {no_unit}"
