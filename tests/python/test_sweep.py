"""`irqlab sweep`: grid expansion (hand-checked ranges and paths), one row
per point equal to running that point by hand, the same table on local
processes and on a two-worker Dask LocalCluster, resume without
recomputation, and Ctrl-C keeping finished points (exit 130)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from irqlab.model import from_dict, scenario_path
from irqlab.sweep import (
    DaskBackend,
    LocalBackend,
    get_path,
    grid_from_dict,
    parse_path,
    run_sweep,
    set_path,
    values,
)

UTIL = "vcpus[iovcpu.high].utilization"
GRID: dict[str, Any] = {
    "model": "usb-priority-inversion",
    "duration": "100ms",
    "mode": "both",
    "vary": {UTIL: ["5%", "10%", "20%"]},
    "seeds": 5,
    "record": ["sim.tasks[high].response.max_ns", "sim.devices[ttyACM1].handled",
               "sim.servers[iovcpu.high].share_fraction",
               "analysis.io_bounds[high].latency_bound_ns"],
}


def test_values() -> None:
    assert values({"range": ["5%", "20%", "5%"]}, "x") == ["5%", "10%", "15%", "20%"]
    assert values({"range": [1, 3, 1]}, "x") == [1, 2, 3]
    assert values({"range": ["0.5ms", "1.5ms", "0.5ms"]}, "x") == ["0.5ms", "1ms", "1.5ms"]
    assert values({"logrange": ["1us", "1000us", 4]}, "x") == ["1us", "10us", "100us", "1000us"]
    assert values({"logrange": ["1us", "1ms", 4]}, "x") == ["1000ns", "10000ns", "100000ns",
                                                          "1000000ns"]
    assert values({"range": ["500us", "1.5ms", "500us"]}, "x") == ["500000ns", "1000000ns",
                                                                  "1500000ns"]
    assert values(["a", 3], "x") == ["a", 3]
    with pytest.raises(ValueError, match="x.range: .* need the same unit"):
        values({"range": ["1%", "2ms", "1%"]}, "x")
    with pytest.raises(ValueError, match="x.logrange: .* n >= 2"):
        values({"logrange": ["1us", "1ms", 1]}, "x")
    with pytest.raises(ValueError, match="x: an empty list"):
        values([], "x")


def test_paths() -> None:
    assert parse_path("vcpus[iovcpu.high].utilization") == ["vcpus", "iovcpu.high",
                                                           "utilization"]
    assert parse_path("tasks[0].period") == ["tasks", 0, "period"]
    m = yaml.safe_load(scenario_path("usb-priority-inversion").read_text())
    set_path(m, UTIL, "33%")
    set_path(m, "tasks[0].period", "20ms")
    assert m["vcpus"][7]["utilization"] == "33%" and m["tasks"][0]["period"] == "20ms"
    assert get_path(m, "vcpus[high].budget") == "1ms"
    with pytest.raises(KeyError, match="no item named 'nope' \\(names: high, medium"):
        set_path(m, "vcpus[nope].budget", "1ms")
    with pytest.raises(ValueError, match="not a model path"):
        parse_path("vcpus[0]x")


def test_grid_errors() -> None:
    with pytest.raises(ValueError, match="grid: unknown field 'vray'"):
        grid_from_dict({**GRID, "vray": {}})
    with pytest.raises(ValueError, match="vary.vcpus\\[io\\].budget: .*no item named 'io'"):
        grid_from_dict({**GRID, "vary": {"vcpus[io].budget": ["1ms"]}})
    with pytest.raises(ValueError, match="mode: 'run' is not one of"):
        grid_from_dict({**GRID, "mode": "run"})
    with pytest.raises(ValueError, match="first point is not a valid model: .*exceeds period"):
        grid_from_dict({**GRID, "vary": {"vcpus[high].budget": ["11ms"]}})
    with pytest.raises(ValueError, match="record: tasks: start with sim."):
        grid_from_dict({**GRID, "record": ["tasks"]})


def by_hand(util: str, seed: int) -> dict[str, Any]:
    m = yaml.safe_load(scenario_path("usb-priority-inversion").read_text())
    set_path(m, UTIL, util)
    m["simulation"].update(seed=seed, duration="100ms")
    r = from_dict(m).simulate()
    return {"sim.tasks[high].response.max_ns": r.tasks["high"]["response"]["max_ns"],
            "sim.devices[ttyACM1].handled": r.devices["ttyACM1"]["handled"],
            "sim.servers[iovcpu.high].share_fraction":
                r.servers["iovcpu.high"]["share_fraction"]}


def strip(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items()} for r in rows]


def test_local_and_dask_give_the_same_table(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    pytest.importorskip("distributed")
    grid = grid_from_dict(GRID)
    assert grid.size == 15
    local = run_sweep(grid, tmp_path / "local", backend=LocalBackend(2), chunk=2)
    assert local.computed == 15 and local.reused == 0 and not local.interrupted
    rows = local.rows
    assert [(r[UTIL], r["seed"]) for r in rows] == [(u, s) for u in ("5%", "10%", "20%")
                                                    for s in range(5)]
    assert all(r["error"] is None for r in rows)
    # every row is the point run by hand (spot checks at both ends)
    for r in (rows[0], rows[7], rows[14]):
        assert {k: r[k] for k in by_hand(r[UTIL], r["seed"])} == by_hand(r[UTIL], r["seed"])
    # the varied field really varies what is measured and bounded
    bound = {r[UTIL]: r["analysis.io_bounds[high].latency_bound_ns"] for r in rows}
    assert bound["5%"] > bound["10%"] > bound["20%"] > 0
    assert len({r["point"] for r in rows}) == 15
    dask = run_sweep(grid, tmp_path / "dask", backend=DaskBackend(local_workers=2), chunk=2)
    assert strip(dask.rows) == strip(rows)
    a = pd.read_parquet(tmp_path / "local" / "results.parquet")
    b = pd.read_parquet(tmp_path / "dask" / "results.parquet")
    pd.testing.assert_frame_equal(a, b)
    assert list(pd.read_csv(tmp_path / "local" / "results.csv").columns) == list(a.columns)
    again = run_sweep(grid, tmp_path / "local", backend=LocalBackend(2))
    assert again.computed == 0 and again.reused == 15 and strip(again.rows) == strip(rows)


def test_interrupt_keeps_finished_points(tmp_path: Path) -> None:
    grid = grid_from_dict({**GRID, "mode": "analyze", "record": []})

    def stop(_: int) -> None:
        raise KeyboardInterrupt

    first = run_sweep(grid, tmp_path, backend=LocalBackend(1), chunk=4, on_chunk=stop)
    assert first.interrupted and 4 <= first.computed < 15
    assert len((tmp_path / "points.jsonl").read_text().splitlines()) == first.computed
    rest = run_sweep(grid, tmp_path, backend=LocalBackend(1), chunk=4)
    assert rest.reused == first.computed and rest.computed == 15 - first.computed
    assert [r["index"] for r in rest.rows] == list(range(15))
    assert all("analysis.io_bounds[high/ttyACM0].latency_bound_ns" in r for r in rest.rows)
    # the resumed table is the uninterrupted one, columns in the same order
    whole = run_sweep(grid, tmp_path / "whole", backend=LocalBackend(1))
    pq = pytest.importorskip("pyarrow.parquet")
    assert pq.read_table(tmp_path / "results.parquet").equals(
        pq.read_table(tmp_path / "whole" / "results.parquet"))
    assert whole.computed == 15 and (tmp_path / "results.csv").read_text() == \
        (tmp_path / "whole" / "results.csv").read_text()


def test_cli_ctrl_c_exit_130(tmp_path: Path, sigint: None) -> None:
    grid = {**GRID, "duration": "1s", "mode": "simulate", "seeds": 400}
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(grid))
    out = tmp_path / "out"
    p = subprocess.Popen([sys.executable, "-m", "irqlab", "sweep", str(path), "--out", str(out),
                          "--workers", "1", "--chunk", "1"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    log = out / "points.jsonl"
    for _ in range(600):  # wait for the first finished point (not a timing assertion)
        if log.exists() and log.read_text().count("\n") >= 1:
            break
        time.sleep(0.1)
    p.send_signal(signal.SIGINT)
    stdout, stderr = p.communicate(timeout=120)
    assert p.returncode == 130, stderr
    assert "interrupted: the finished points are kept" in stderr
    kept = [json.loads(line) for line in log.read_text().splitlines()]
    assert 1 <= len(kept) < 1200
    assert (out / "results.parquet").exists() and "Traceback" not in stderr
    assert os.path.getsize(out / "results.csv") > 0


VINT_GRID: dict[str, Any] = {
    "mode": "vint",
    "vint": {"sets": 60},
    "vary": {"irq_interarrival": [["0.5ms", "1ms"], ["0.8ms", "1.3ms"], ["5ms", "10ms"]]},
    "seeds": [4, 5],
}


def test_vint_mode_is_vint_sweep_per_point(tmp_path: Path) -> None:
    """`mode: vint` (VINT Figures 4-9 through the sweep machinery): every
    row equals `vint_sweep` of its point run by hand on all threads (the
    generator is deterministic per seed whatever the thread count), the
    varied inter-arrival times move the vINT schemes' serviceability as
    VINT Figure 4 does, and a resumed sweep recomputes nothing."""
    from irqlab.analysis import vint_sweep

    grid = grid_from_dict(VINT_GRID)
    assert grid.size == 6
    res = run_sweep(grid, tmp_path, backend=LocalBackend(2), chunk=1)
    assert res.computed == 6 and all(r["error"] is None for r in res.rows)
    for r in res.rows:
        lo, hi = (int(float(x.removesuffix("ms")) * 1_000_000) for x in r["irq_interarrival"])
        want = vint_sweep({"irq_interarrival": (lo, hi)}, 60, seed=r["seed"], threads=2)
        for kind in ("schedulable", "serviceable"):
            for scheme, v in want[kind].items():
                assert r[f"vint.{kind}.{scheme}"] == v, (r["irq_interarrival"], kind, scheme)
    serv = {tuple(r["irq_interarrival"]): r["vint.serviceable.DSvINT"] for r in res.rows
            if r["seed"] == 4}
    assert serv[("5ms", "10ms")] > serv[("0.5ms", "1ms")]
    assert run_sweep(grid, tmp_path, backend=LocalBackend(2)).computed == 0
    assert (tmp_path / "results.csv").read_text().count("\n") == 7


def test_vint_grid_errors() -> None:
    with pytest.raises(ValueError, match="mode vint: give the generator's parameters"):
        grid_from_dict({"mode": "vint", "model": "vint-analysis"})
    with pytest.raises(ValueError, match="vint: only with mode: vint"):
        grid_from_dict({"model": "vint-analysis", "vint": {"sets": 1}})
    with pytest.raises(ValueError, match="first point: vint: .*unknown key"):
        grid_from_dict({"mode": "vint", "vint": {"sets": 5, "bogus": 1}})


def test_tables_written_in_batches_equal_one_batch(tmp_path: Path) -> None:
    """The tables are written a batch at a time (Parquet row groups, CSV
    appends) from points.jsonl; whatever the batch, they equal the table
    built in one piece from every row (columns in order of first appearance,
    types over all rows), even when a batch holds only invalid points
    (without the recorded columns); a resume rewrites them, computing
    nothing."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    # 20ms exceeds high's period: points 40-79 are invalid, rows 40-59 a whole batch
    budgets = ["500us", "20ms", *(f"{b}us" for b in range(1000, 5000, 500))]
    grid = grid_from_dict({"model": "usb-priority-inversion", "mode": "analyze",
                           "vary": {"vcpus[high].budget": budgets}, "seeds": 40})
    assert grid.size == 400
    one = run_sweep(grid, tmp_path / "one", backend=LocalBackend(2), batch=10**6)
    many = run_sweep(grid, tmp_path / "many", backend=LocalBackend(2), batch=20)
    assert one.computed == many.computed == 400 and one.errors == many.errors == 40
    rows = one.rows
    assert [r["index"] for r in rows] == list(range(400))
    assert [i for i, r in enumerate(rows) if r["error"]] == list(range(40, 80))
    meta = [pq.ParquetFile(tmp_path / d / "results.parquet").metadata for d in ("one", "many")]
    assert meta[0].num_row_groups == 1 and meta[1].num_row_groups == 20
    tables = [pq.read_table(tmp_path / d / "results.parquet") for d in ("one", "many")]
    assert tables[1].equals(tables[0])
    assert (tmp_path / "many" / "results.csv").read_text() == \
        (tmp_path / "one" / "results.csv").read_text()
    # the table built in one piece from all the rows, as before batching
    cols: dict[str, None] = {}
    for r in rows:
        cols |= dict.fromkeys(r)
    whole = pa.Table.from_pylist([{c: r.get(c) for c in cols} for r in rows])
    assert tables[0].equals(whole) and len(cols) > 10
    assert tables[0].column_names[:4] == ["index", "point", "vcpus[high].budget", "seed"]
    again = run_sweep(grid, tmp_path / "many", backend=LocalBackend(2), batch=50)
    assert again.computed == 0 and again.reused == 400
    assert pq.read_table(tmp_path / "many" / "results.parquet").equals(whole)
