"""How ``simulate()`` reads its configuration dict and hands back its
results (issue 20): the direct reader (``crates/irqlab-py/src/frompy.rs``)
gives exactly the configuration the JSON path gives, or gives up so that
the slower paths word the error; the metrics and the resolved
configuration stay Rust values until read, then equal their JSON and the
Rust values are freed."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from irqlab._native import sim as native
from irqlab.experiments import quest_table1
from irqlab.sim import simulate

GOLDEN = Path(__file__).resolve().parents[2] / "crates/irqlab-sim/tests/golden"


def small() -> dict:
    return quest_table1.config(with_cd=True, duration=20_000_000)


def test_the_direct_reader_reads_every_golden_configuration_as_json_does() -> None:
    """Every configuration of every shipped scenario and experiment: the
    dict read directly (no fallback allowed) is the configuration its JSON
    text gives, field for field and default for default."""
    files = sorted(GOLDEN.glob("*.config.json"))
    assert len(files) > 50
    for f in files:
        text = f.read_text()
        assert native.read_config(json.loads(text), True) == native.read_config(text), f.name


def fresh_keys(obj: object) -> object:
    """``obj`` with every dict key a new str object of the same text (no
    two dicts share a key object, as they do when built from source or by
    ``json.loads``)."""
    if isinstance(obj, dict):
        return {"".join(list(k)): fresh_keys(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [fresh_keys(v) for v in obj]
    return obj


def test_the_direct_reader_does_not_depend_on_shared_key_objects() -> None:
    """The reader remembers the text of the key objects it has seen (by
    address, for one read): with shared key objects (``json.loads``), with
    a new object for every key (thousands of them, colliding in its table)
    and with the dicts of an earlier read freed and their addresses reused,
    it reads the configuration the JSON text gives."""
    files = sorted(GOLDEN.glob("*.config.json"))
    for f in files[::7]:
        text = f.read_text()
        want = native.read_config(text)
        shared = json.loads(text)
        assert native.read_config(shared, True) == want, f.name
        assert native.read_config(fresh_keys(shared), True) == want, f.name
        assert native.read_config(fresh_keys(json.loads(text)), True) == want, f.name
    # a key object whose text differs from the one last seen at its address
    a = {"cpus": 2, "duration": 10, "servers": []}
    native.read_config(a, True)
    del a
    b = fresh_keys({"duration": 7, "cpus": 1, "servers": []})
    assert json.loads(native.read_config(b, True))["duration"] == 7


@pytest.mark.parametrize(("path", "value"), [
    (("cpus",), True),              # a bool is an int in Python, never in JSON
    (("duration",), 20_000_000.0),  # a float is never an integer
    (("duration",), 2 ** 70),       # beyond 64 bits: JSON reads a float
    (("duration",), math.nan),      # JSON has no NaN
    (("trace",), {"enabled": 1}),   # an int is not a bool
    (("trace",), {1: True}),        # keys are strings
    (("servers",), {"not": "a list"}),
])
def test_the_direct_reader_gives_up_where_python_and_json_differ(path: tuple[str, ...],
                                                                  value: object) -> None:
    cfg = small()
    cfg[path[0]] = value
    with pytest.raises(ValueError, match="read directly"):
        native.read_config(cfg, True)


def test_an_invalid_dict_is_worded_by_the_json_path() -> None:
    cfg = small()
    cfg["servers"][0]["cpu"] = "zero"
    with pytest.raises(ValueError, match=r"servers\[0\]\.cpu: invalid type: string \"zero\""):
        simulate(cfg)
    cfg = small()
    cfg["tasks"][0]["colour"] = "red"
    with pytest.raises(ValueError, match=r"tasks\[0\]\.colour: unknown field `colour`, expected"):
        simulate(cfg)
    # beside an unbounded policy too (it used to be ignored there)
    cfg = small()
    cfg["servers"][0] = {"name": "u", "policy": "unbounded", "rank": 1, "colour": "red"}
    with pytest.raises(ValueError, match=r"servers\[0\]: unknown field `colour`"):
        simulate(cfg)
    with pytest.raises(ValueError, match=r"servers\[0\]: unknown field `colour`"):
        simulate(json.loads(json.dumps(cfg)))


def test_tuples_and_dict_subclasses_are_read_as_lists_and_dicts() -> None:
    from collections import OrderedDict

    cfg = small()
    text = json.dumps(cfg)
    cfg["servers"] = tuple(OrderedDict(s) for s in cfg["servers"])
    assert native.read_config(cfg, True) == native.read_config(text)


def test_metrics_and_config_are_built_when_first_read_and_kept() -> None:
    r = simulate(small())
    assert r._metrics is None and r._config is None
    m = r.metrics
    assert r.metrics is m and json.loads(json.dumps(m)) == m
    c = r.config
    assert r.config is c
    assert c == json.loads(native.read_config(small()))
    assert c["duration"] == 20_000_000 and m["duration_ns"] == 20_000_000
    # the Rust values are freed once taken: Python keeps the only copy
    for take in (r._outcome.take_metrics, r._outcome.take_config):
        with pytest.raises(RuntimeError, match="already taken"):
            take()


def test_a_result_is_shown_without_building_its_metrics() -> None:
    r = simulate(small())
    assert repr(r) == "<SimResult>" and r._metrics is None
    assert repr(r.tasks).endswith("tasks>") and "20000000 ns" in repr(r)
