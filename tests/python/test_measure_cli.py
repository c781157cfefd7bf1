"""`irqlab measure` end to end through irqlab.cli.main."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from irqlab.cli import main
from irqlab.measure import table4


def test_samplesize(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["measure", "samplesize", "--confidence", "0.95", "--error", "0.05"]) == 0
    assert capsys.readouterr().out.startswith("385 ")
    assert main(["measure", "samplesize", "--error", "0"]) == 2
    assert "error: 0.0 must be strictly between 0 and 1" in capsys.readouterr().err


def test_stats_with_histogram(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "a.json"
    f.write_text(json.dumps({"name": "run", "samples_ns": [10, 20, 30, 40, 100]}))
    out_json = tmp_path / "s.json"
    assert main(["measure", "stats", str(f), "--hist", "25", "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    assert "| run | 5 | 40.00 | 30.00 | 100.00 | 10.00 | 60.00 | 35.36 |" in out
    doc = json.loads(out_json.read_text())
    assert doc["scenarios"][0]["average"] == 40.0
    assert doc["histograms"][0]["counts"] == [2, 2, 0, 0, 1]


def test_compare_table4_style(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = []
    for r in table4.TABLE4[:3]:
        f = tmp_path / f"{table4.slug(r.scenario)}.json"
        f.write_text(json.dumps({"name": r.scenario,
                                 "samples_ns": [10 * c for c in table4.synthesize(r)]}))
        files.append(str(f))
    out = tmp_path / "rep"
    assert main(["measure", "compare", *files, "--out", str(out), "--paper"]) == 0
    text = capsys.readouterr().out
    assert "| Xen stress | 400 | 2317.57 | 2290.00 | 3330.00 |" in text
    assert "LATENCY-IP Table 4 (paper / measured, ns)" in text
    assert (out / "latency_report.png").stat().st_size > 1000
    csv_rows = (out / "latency_report.csv").read_text().splitlines()
    assert csv_rows[0] == "scenario,n,average,median,max,min,jitter,dev" and len(csv_rows) == 4


def test_bad_input_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "bad.csv"
    f.write_text("latency_ns\n12\n-4\n")
    assert main(["measure", "stats", str(f)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.csv:3: latency_ns '-4'" in err[0]
    assert main(["measure", "stats", str(tmp_path / "missing.json")]) == 2
    dup = tmp_path / "dup.json"
    dup.write_text(json.dumps({"name": "x", "samples_ns": [1]}))
    assert main(["measure", "compare", str(dup), str(dup), "--out", str(tmp_path / "o")]) == 2
    assert "repeated: x" in capsys.readouterr().err
