"""The notebook-facing Python API: load/loads/from_dict give the same model,
ModelError.errors lists (path, value, rule), simulate() takes a model or its
config with typed overrides, results flatten into tables whose numbers are
the metrics' own, units are integer ns."""

from __future__ import annotations

import json

import pytest
import yaml

from irqlab.analysis import bounds
from irqlab.model import ModelError, from_dict, load, loads, scenario_path
from irqlab.sim import SimResult, simulate

PATH = scenario_path("usb-priority-inversion")


def test_three_ways_in_give_one_model() -> None:
    text = PATH.read_text()
    a, b, c = load(PATH), loads(text), from_dict(yaml.safe_load(text))
    assert a.sim_config == b.sim_config == c.sim_config
    assert loads(yaml.safe_load(text)).model == a.model  # loads() passes dicts on
    with pytest.raises(TypeError, match="YAML text or a dict"):
        loads(b"machine: {}")  # type: ignore[arg-type]


def test_model_error_lists_every_problem() -> None:
    d = yaml.safe_load(PATH.read_text())
    d["vcpus"][0]["budget"] = "999ms"
    d["tasks"][0]["vcpu"] = "nope"
    with pytest.raises(ModelError) as e:
        from_dict(d)
    assert ("vcpus[0].budget", "999ms", "exceeds period 10ms") in e.value.errors
    assert ("tasks[0].vcpu", "nope", "no such VCPU") in e.value.errors
    assert len(e.value.errors) == len(str(e.value).splitlines())
    with pytest.raises(ModelError) as e:
        loads("machine: {cpus: 1, colour: red}")
    ((path, value, rule),) = e.value.errors
    assert path == "machine" and value == "colour" and "unknown field `colour`" in rule
    # a parse-level error names the value found at its path
    with pytest.raises(ModelError) as e:
        loads("machine: {cpus: 1, path: quest}\n"
              "vcpus: [{name: a, policy: sporadic, budget: 1ms, period: fast}]")
    ((path, value, rule),) = e.value.errors
    assert (path, value) == ("vcpus[0].period", "fast") and "unknown time unit" in rule
    with pytest.raises(ModelError) as e:
        from_dict({"machine": {"cpus": float("nan")}})
    assert e.value.errors[0][2].startswith("not plain JSON data")


def test_simulate_overrides_and_trace_shorthand() -> None:
    m = load(PATH)
    before = json.dumps(m.sim_config, sort_keys=True)
    r = m.simulate(seed=4, duration_ns=50_000_000, trace=True)
    assert json.dumps(m.sim_config, sort_keys=True) == before  # the model is not modified
    assert r.metrics["seed"] == 4 and r.metrics["duration_ns"] == 50_000_000
    assert r.trace["traceEvents"]
    cfg = dict(m.sim_config, trace=False, duration=20_000_000)
    assert simulate(cfg).trace["traceEvents"] == []
    with pytest.raises(ValueError, match=r"trace: invalid type: integer `5`, expected an object"):
        simulate(dict(cfg, trace=5))
    with pytest.raises(ValueError, match="duration_ns: 1.5 must be a non-negative integer"):
        simulate(cfg, duration_ns=1.5)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def result() -> SimResult:
    return load(PATH).simulate(duration_ns=200_000_000)


def test_tables_hold_the_metrics(result: SimResult) -> None:
    pd = pytest.importorskip("pandas")
    tasks = result.tasks.to_pandas()
    high = result.tasks["high"]
    assert tasks.loc["high", "released"] == high["released"] == 21
    assert tasks.loc["high", "response_max_ns"] == high["response"]["max_ns"]
    devs = result.to_pandas("devices")
    assert list(devs.index) == [d["name"] for d in result.metrics["devices"]]
    assert (devs["dropped"] >= 0).all() and "latency_p99_ns" in devs.columns
    jobs = result.jobs().to_pandas()
    assert list(jobs[jobs.task == "high"].completion_ns) == high["completions_ns"]
    w = result.windows().to_pandas()
    srv = w[(w.kind == "server") & (w.index == "high")]
    assert list(srv.share_fraction) == result.servers["high"]["share_windows_fraction"]
    assert isinstance(result.cpus.to_pandas(), pd.DataFrame)
    with pytest.raises(KeyError, match="no 'nope' among the tasks"):
        result.tasks["nope"]
    with pytest.raises(ValueError, match="kind: 'x' is not one of"):
        result.to_pandas("x")


def test_histograms_count_every_sample(result: SimResult) -> None:
    for d in [t["response"] for t in result.metrics["tasks"]] + \
             [d["latency"] for d in result.metrics["devices"]]:
        assert sum(b[2] for b in d["histogram_ns"]) == d["count"]
        if d["count"]:
            assert d["histogram_ns"][0][0] <= d["min_ns"] < d["max_ns"] + 1 <= \
                d["histogram_ns"][-1][1]


def test_bounds_in_ns() -> None:
    b = bounds(load(scenario_path("usb-priority-inversion")))
    assert b["path"] == "quest"
    assert b["io_bounds"]
    for e in b["io_bounds"]:
        assert isinstance(e["latency_bound_ns"], int) and e["latency_bound_ns"] > 0
        assert e["throughput_bound_bytes_per_s"] > 0


def test_to_pandas_without_pandas_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    """pandas is optional: without it the dicts and ``to_records()`` work
    and ``to_pandas()`` raises an ImportError saying what to install."""
    import sys

    r = load(PATH).simulate(duration_ns=20_000_000)
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas -> ImportError
    assert r.tasks.to_records()[0]["name"] == "high"
    for call in (r.tasks.to_pandas, lambda: r.to_pandas("request_records")):
        with pytest.raises(ImportError, match=r"needs pandas: pip install pandas"):
            call()
