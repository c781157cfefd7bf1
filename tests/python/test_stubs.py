"""The stubs of the native module (python/irqlab/_native/*.pyi) cover it:
every public name of every native submodule has a stub, every stubbed
function takes the parameters the native one takes (names, order,
defaults), every stubbed method exists, and the package is marked typed
(py.typed), so a type checker sees the native API as it is."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import irqlab
import irqlab._native as native

STUBS = Path(irqlab.__file__).parent / "_native"
SUBMODULES = ("analysis", "core", "model", "rt", "sim")


def stub(sub: str) -> ast.Module:
    return ast.parse((STUBS / f"{sub}.pyi").read_text())


def native_params(obj: object) -> list[str] | None:
    sig = getattr(obj, "__text_signature__", None)
    if not sig:
        return None
    params = sig.strip("()").replace("$self, ", "").replace("$self", "")
    out = []
    for p in (x.strip() for x in params.split(",")):
        if p and p != "*":
            out.append(p.split("=")[0].strip())
    return out


def stub_params(fn: ast.FunctionDef) -> list[str]:
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    return [n for n in names if n != "self"]


def test_the_package_is_marked_typed() -> None:
    assert (Path(irqlab.__file__).parent / "py.typed").exists()


@pytest.mark.parametrize("sub", SUBMODULES)
def test_every_native_name_has_a_stub_with_its_parameters(sub: str) -> None:
    mod = getattr(native, sub)
    tree = stub(sub)
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    consts = {t.id for n in tree.body if isinstance(n, ast.AnnAssign)
              for t in [n.target] if isinstance(t, ast.Name)}
    for name in (x for x in dir(mod) if not x.startswith("_")):
        obj = getattr(mod, name)
        if inspect.isclass(obj):
            assert name in classes, f"{sub}.{name}: no stub"
            methods = {n.name: n for n in classes[name].body if isinstance(n, ast.FunctionDef)}
            for m, fn in methods.items():
                if m == "__init__":
                    want = native_params(obj)
                else:
                    assert hasattr(obj, m), f"{sub}.{name}.{m}: stubbed, not native"
                    want = native_params(getattr(obj, m))
                if want is not None:
                    assert stub_params(fn) == want, f"{sub}.{name}.{m}"
        elif callable(obj):
            assert name in funcs, f"{sub}.{name}: no stub"
            assert stub_params(funcs[name]) == native_params(obj), f"{sub}.{name}"
        else:
            assert name in consts, f"{sub}.{name}: no stub"
    for name in funcs:
        assert hasattr(mod, name), f"{sub}.{name}: stubbed, not native"
