"""Input readers of irqlab.measure: formats and the errors for bad files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from irqlab.measure import readers

CYCLICTEST = """\
# /dev/cpu_dma_latency set to 0us
000000 000000\t000000
000001 000003\t000001
000002 000002\t000004
000003 000000\t000001
# Total: 000000005 000000006
# Min Latencies: 00001 00001
# Avg Latencies: 00001 00002
# Max Latencies: 00002 00003
# Histogram Overflows: 00000 00000
# Histogram Overflow at cycle number:
# Thread 0:
# Thread 1:
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_recorder_json(tmp_path: Path) -> None:
    p = write(tmp_path, "rec.json", json.dumps({"name": "rt", "samples_ns": [100, 250.5]}))
    (d,) = readers.load(p)
    assert d.name == "rt" and list(d.samples_ns) == [100.0, 250.5]
    p2 = write(tmp_path, "runs.json", json.dumps(
        {"runs": [{"name": "a", "samples_ns": [1]}, {"samples_ns": [2, 3]}]}))
    a, b = readers.load(p2)
    assert (a.name, list(b.samples_ns)) == ("a", [2.0, 3.0]) and b.name == "runs[runs[1]]"


def test_ipdump_json_uses_clock(tmp_path: Path) -> None:
    doc = {"format": "latency-ip-dump", "clock_hz": 250e6, "samples_cycles": [4, 10],
           "scenario": "Xen", "cnt_width": 3}
    (d,) = readers.load(write(tmp_path, "x.ipdump.json", json.dumps(doc)))
    assert d.name == "Xen" and list(d.samples_ns) == [16.0, 40.0]
    assert d.notes and "saturated" in d.notes[0]  # 10 >= 2**3 - 1
    (d2,) = readers.load(tmp_path / "x.ipdump.json", clock_hz=1e9)
    assert list(d2.samples_ns) == [4.0, 10.0]


def test_iptext(tmp_path: Path) -> None:
    p = write(tmp_path, "ram.txt", "# dump\n# clock_hz: 50000000\n3\n0x10  # hex\n\n7\n")
    (d,) = readers.load(p)
    assert list(d.samples_ns) == [60.0, 320.0, 140.0]
    (d100,) = readers.load(write(tmp_path, "r2.txt", "1\n2\n"))
    assert list(d100.samples_ns) == [10.0, 20.0]  # default 100 MHz


def test_csv_units_and_groups(tmp_path: Path) -> None:
    p = write(tmp_path, "l.csv", "scenario,latency_us\nA,1.5\nB,2\nA,0.5\n")
    a, b = readers.load(p)
    assert (a.name, list(a.samples_ns), b.name, list(b.samples_ns)) == (
        "A", [1500.0, 500.0], "B", [2000.0])
    (c,) = readers.load(write(tmp_path, "c.csv", "latency_cycles\n5\n"), clock_hz=200e6)
    assert list(c.samples_ns) == [25.0]


def test_cyclictest_histogram(tmp_path: Path) -> None:
    p = write(tmp_path, "hist.txt", CYCLICTEST)
    (d,) = readers.load(p)
    assert sorted(d.samples_ns) == [1000.0] * 4 + [2000.0] * 6 + [3000.0]
    t0, t1 = readers.load(p, per_thread=True)
    assert len(t0.samples_ns) == 5 and len(t1.samples_ns) == 6 and t1.name == "hist:T1"


def test_cyclictest_overflow(tmp_path: Path) -> None:
    p = write(tmp_path, "o.txt", CYCLICTEST.replace("Overflows: 00000 00000",
                                                   "Overflows: 00000 00002"))
    with pytest.raises(ValueError, match=r"2 samples overflowed.*larger -h"):
        readers.load(p)
    (d,) = readers.load(p, allow_overflow=True)
    assert len(d.samples_ns) == 11 and "dropped" in d.notes[0]


@pytest.mark.parametrize("name, text, msg", [
    ("a.json", "{bad", r"a\.json: not valid JSON"),
    ("b.json", "[1,2]", "top level must be an object"),
    ("c.json", '{"samples_ns": [1, -3]}', r"samples_ns\[1\] = -3"),
    ("d.json", '{"samples_ns": [1, "x"]}', r"samples_ns\[1\] = 'x'"),
    ("e.json", '{"samples_ns": []}', "no samples"),
    ("f.json", '{"latencies": [1]}', "unknown JSON layout"),
    ("g.json", '{"format": "latency-ip-dump", "samples_cycles": [1], "clock_hz": 0}',
     "clock_hz 0 must be a positive"),
    ("h.csv", "latency_ms\n1\n", "exactly one of latency_ns"),
    ("i.csv", "latency_ns\n1\nabc\n", r"i\.csv:3: latency_ns 'abc' is not a number"),
    ("j.csv", "latency_ns,x\n1\n", r"j\.csv:2: 1 fields, header has 2"),
    ("k.txt", "5\n1.5\n", r"k\.txt:2: sample '1\.5' must be a whole number"),
    ("l.txt", "# only a comment\n", "no samples"),
    ("m.txt", "5\n-1\n", r"m\.txt:2: sample '-1' must be a finite non-negative"),
    ("n.hist", "# Histogram\n000001 000002\n000002 000001 000003\n",
     r"n\.hist:3: 2 count columns, earlier rows have 1"),
])
def test_bad_files_name_the_problem(tmp_path: Path, name: str, text: str, msg: str) -> None:
    with pytest.raises(ValueError, match=msg):
        readers.load(write(tmp_path, name, text))


def test_missing_file_and_bad_format(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        readers.load(tmp_path / "nope.json")
    with pytest.raises(ValueError, match="format: 'xml'"):
        readers.load(write(tmp_path, "x.txt", "1\n"), "xml")
