"""Simulator outputs without a JSON round trip (issue 20): metrics as plain
Python objects, the trace streamed to a file (trace-event JSON or Perfetto
protobuf), per-job and per-request records as NumPy columns."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from irqlab.cli import main
from irqlab.experiments import quest_table1
from irqlab.model import load
from irqlab.sim import simulate

SCENARIOS = Path(__file__).resolve().parents[2] / "python/irqlab/scenarios"


def small(trace: bool = True) -> dict:
    cfg = quest_table1.config(with_cd=True, duration=50_000_000)
    cfg["trace"] = {"enabled": trace}
    return cfg


def test_metrics_are_plain_python_objects_equal_to_their_json() -> None:
    m = simulate(small(False)).metrics
    assert json.loads(json.dumps(m)) == m
    assert isinstance(m["tasks"], list) and isinstance(m["tasks"][0]["completions_ns"], list)


def test_trace_streamed_to_a_file_is_the_same_trace(tmp_path: Path) -> None:
    ref = simulate(small()).trace
    r = simulate(small(False), trace_file=tmp_path / "t.json")
    assert r.trace == {} and r.trace_file == tmp_path / "t.json"
    assert json.loads((tmp_path / "t.json").read_text()) == ref
    assert ref["traceEvents"]


def test_perfetto_trace_is_a_protobuf_stream_smaller_than_json(tmp_path: Path) -> None:
    simulate(small(), trace_file=tmp_path / "t.pftrace", trace_format="perfetto")
    simulate(small(), trace_file=tmp_path / "t.json")
    data = (tmp_path / "t.pftrace").read_bytes()
    assert data[0] == 0x0A  # Trace.packet: field 1, length-delimited
    assert 0 < len(data) < (tmp_path / "t.json").stat().st_size
    # every packet's length prefix lands exactly on the end of the stream
    i = 0
    while i < len(data):
        assert data[i] == 0x0A
        i += 1
        n = shift = 0
        while True:
            b = data[i]
            i += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                break
        i += n
    assert i == len(data)


def test_job_and_request_records_are_numpy_columns_never_capped() -> None:
    ms = 1_000_000
    cfg = {"duration": 100 * ms, "max_completions": 3,
           "servers": [{"name": f"s{i}", "cpu": 0, "policy": "unbounded", "rank": i}
                       for i in range(2)],
           "tasks": [{"name": f"t{i}", "server": i,
                      "release": {"kind": "periodic", "period": p * ms},
                      "program": [{"op": "compute", "ns": c * ms}]}
                     for i, (p, c) in enumerate([(5, 2), (7, 4)])]}
    r = simulate(cfg, records={"jobs": True})
    jobs = r.job_records()
    assert all(isinstance(v, np.ndarray) for v in jobs.values())
    done = sum(t["completed"] for t in r.metrics["tasks"])
    assert len(jobs["task"]) == done > 3 * len(r.metrics["tasks"])
    # t1 (7 ms, 4 ms) misses deadlines behind t0 (5 ms, 2 ms): U > 1
    assert jobs["late"].any() and not jobs["late"][jobs["task"] == 0].any()
    assert (jobs["response_ns"] == jobs["completion_ns"] - jobs["release_ns"]).all()
    for i, t in enumerate(r.metrics["tasks"]):
        mine = jobs["response_ns"][jobs["task"] == i]
        assert len(mine) == t["completed"]
        if len(mine):
            assert int(mine.max()) == t["response"]["max_ns"]
            assert (jobs["task_name"][jobs["task"] == i] == t["name"]).all()
    r = simulate(load(SCENARIOS / "usb-roundtrip.yaml"), records=True,
                 duration_ns=200_000_000)
    req = r.request_records()
    assert len(req["device"]) > 0
    for i, d in enumerate(r.metrics["devices"]):
        lat = req["latency_ns"][req["device"] == i]
        assert len(lat) == d["latency"]["count"]
        if len(lat):
            assert int(lat.max()) == d["latency"]["max_ns"]
    assert len(simulate(small(False)).job_records()["task"]) == 0


def test_cli_writes_a_perfetto_trace(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert main(["simulate", str(SCENARIOS / "quest-table1.yaml"), "--out", str(out),
                 "--duration", "20ms", "--trace", "--trace-format", "perfetto",
                 "--no-plots"]) == 0
    assert (out / "trace.pftrace").stat().st_size > 0
    assert not (out / "trace.json").exists()
    assert (out / "metrics.json").exists()


def _events(trace: dict) -> dict[str, list]:
    def key(e: dict) -> tuple:
        return tuple(sorted((k, json.dumps(v, sort_keys=True)) for k, v in e.items()))

    out: dict[str, list] = {}
    for ph in ("X", "C"):
        out[ph] = sorted(key(e) for e in trace["traceEvents"] if e["ph"] == ph)
    out["M"] = sorted(key(e) for e in trace["traceEvents"]
                      if e["ph"] == "M" and e["name"] == "thread_name")
    return out


def test_perfetto_trace_reads_back_as_the_json_trace(tmp_path: Path) -> None:
    """`irqlab.tracefile.read_perfetto` decodes the protobuf into the same
    slices, counter values and server names as the JSON form of the run;
    a window keeps exactly the slices and counters that overlap it."""
    from irqlab.tracefile import read_perfetto

    cfg = small()
    ref = simulate(cfg).trace
    simulate(cfg, trace_file=tmp_path / "t.pftrace", trace_format="perfetto")
    got = read_perfetto(tmp_path / "t.pftrace")
    want, have = _events(ref), _events(got)
    assert want["X"] and want["C"] and want["M"]
    assert have == want
    lo, hi = 10_000_000, 12_000_000
    part = read_perfetto(tmp_path / "t.pftrace", start_ns=lo, end_ns=hi)
    inside = [e for e in ref["traceEvents"] if e["ph"] == "X"
              and e["ts"] * 1e3 <= hi and (e["ts"] + e["dur"]) * 1e3 >= lo]
    assert 0 < len(inside) < len(want["X"])
    assert _events(part)["X"] == _events({"traceEvents": inside})["X"]
    (tmp_path / "bad.pftrace").write_bytes(b"\x0a\xff\xff\xff\x0f")
    with pytest.raises(ValueError, match="bad.pftrace"):
        read_perfetto(tmp_path / "bad.pftrace")


def test_report_draws_the_timeline_from_a_perfetto_trace(tmp_path: Path) -> None:
    """`irqlab simulate --report --trace-format perfetto`: the report reads
    trace.pftrace (there is no trace.json) and puts its slices in the
    timeline."""
    out = tmp_path / "run"
    assert main(["simulate", str(SCENARIOS / "quest-table1.yaml"), "--out", str(out),
                 "--duration", "20ms", "--report", "--trace-format", "perfetto",
                 "--no-plots"]) == 0
    assert (out / "trace.pftrace").exists() and not (out / "trace.json").exists()
    page = (out / "report.html").read_text()
    schedule = page.split("<h2>Schedule</h2>")[1].split("<h2>")[0]
    assert "timeline: not applicable" not in schedule
    slices = re.search(r'data-slices="(\d+)"', schedule)
    assert slices and int(slices.group(1)) > 100, schedule[:500]
    assert "trace.pftrace" in schedule  # the Perfetto note names the file


def test_cli_warns_when_completion_times_were_cut(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """`max_completions` is a stated, user-set limit: the CLI says when a
    task finished more jobs than `completions_ns` keeps."""
    model = tmp_path / "m.yaml"
    text = """
machine: {cpus: 1, path: quest}
simulation: {duration: 100ms, max_completions: LIMIT}
vcpus: [{name: v0, policy: sporadic, budget: 2ms, period: 10ms}]
tasks: [{name: t0, vcpu: v0, period: 10ms, program: [{compute: 1ms}]}]
"""
    for limit, warned in ((2, True), (100, False)):
        model.write_text(text.replace("LIMIT", str(limit)))
        assert main(["simulate", str(model), "--out", str(tmp_path / "run"),
                     "--no-plots"]) == 0
        err = capsys.readouterr().err
        assert ("completions_ns keeps the first 2 completion times" in err) == warned, err
        m = json.loads((tmp_path / "run" / "metrics.json").read_text())
        assert m["tasks"][0]["completed"] == 10
        assert len(m["tasks"][0]["completions_ns"]) == min(limit, 10)


GOLDEN = Path(__file__).resolve().parents[2] / "crates/irqlab-sim/tests/golden"


@pytest.mark.parametrize("name", ["scenario-vint-case-000", "scenario-usb-roundtrip-000",
                                  "exp-quest-table1-000", "exp-usb-toy-000"])
def test_metrics_objects_equal_the_golden_metrics_json(name: str) -> None:
    """The metrics built straight into Python objects (no JSON text) are
    exactly what ``json.loads`` gives for the golden ``metrics.json`` of
    the same system: same keys (renamed and skipped fields), lists for
    tuples, the same floats."""
    cfg = json.loads((GOLDEN / f"{name}.config.json").read_text())
    want = json.loads((GOLDEN / f"{name}.metrics.json").read_text())
    assert simulate(cfg).metrics == want
