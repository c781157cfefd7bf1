"""`irqlab report`: the demo's report (Linux next to Quest) rendered by
headless Chromium is not blank, is self-contained, and its tables hold the
runs' metrics.json numbers; a large model's report states what it cut.
The screenshot is kept in out/test-artifacts/ (not committed)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from irqlab.cli import main
from irqlab.model import from_dict
from irqlab.report import write_report

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "out" / "test-artifacts"


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    pytest.skip("no chromium on PATH (the Makefile installs Debian's chromium)")


def headless(page: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                           "--hide-scrollbars", "--window-size=1280,5000", *args,
                           page.as_uri()], capture_output=True, text=True, timeout=180,
                          check=True)


class Cells(HTMLParser):
    """Every (data-key, data-value) of the rendered page."""

    def __init__(self) -> None:
        super().__init__()
        self.cells: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("data-key") is not None:
            self.cells[str(a["data-key"])] = a.get("data-value") or ""


def dig(item: dict[str, Any], path: str) -> Any:
    v: Any = item
    for k in path.split("."):
        v = v.get(k) if isinstance(v, dict) else None
    return v


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo")
    assert main(["demo", "--out", str(out), "--no-rt", "--until", "1"]) == 0
    return out


def test_demo_report_in_chromium(demo: Path) -> None:
    page = demo / "report.html"
    text = page.read_text()
    # self-contained: no network references
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text)
    assert text.count("data:image/png;base64,") >= 4
    assert text.count('<section class="timeline" id=') == 2  # one per run, in place of Gantt PNGs
    dom = headless(page, "--dump-dom").stdout
    cells = Cells()
    cells.feed(dom)
    checked = 0
    for run in ("linux-fifo", "quest-2-interrupters"):
        m = json.loads((demo / run / "metrics.json").read_text())
        assert cells.cells[f"{run}.events"] == json.dumps(m["events"])
        for kind in ("tasks", "devices", "servers"):
            for item in m[kind]:
                for key, raw in cells.cells.items():
                    prefix = f"{run}.{kind}.{item['name']}."
                    if key.startswith(prefix):
                        want = dig(item, key.removeprefix(prefix))
                        assert raw == ("" if want is None else json.dumps(want)), key
                        checked += 1
    assert checked >= 100
    # the high task's worst response is in the page, and Quest beats Linux
    hi = {run: json.loads((demo / run / "metrics.json").read_text())["devices"][0]["latency"]
          for run in ("linux-fifo", "quest-2-interrupters")}
    assert cells.cells["quest-2-interrupters.devices.ttyACM0.latency.max_ns"] == \
        json.dumps(hi["quest-2-interrupters"]["max_ns"])
    assert hi["quest-2-interrupters"]["max_ns"] < hi["linux-fifo"]["max_ns"]
    # the screenshot is not blank
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "report-demo.png"
    shot.unlink(missing_ok=True)
    headless(page, f"--screenshot={shot}")
    import numpy as np
    from PIL import Image

    img = Image.open(shot).convert("RGB")
    assert img.size == (1280, 5000)
    px = np.asarray(img.resize((320, 1250))).reshape(-1, 3).astype(int)
    inked = float((px.sum(axis=1) < 600).mean())
    assert inked > 0.03, f"only {inked:.1%} of the page is drawn"
    colours = len(np.unique(px, axis=0))
    assert colours > 100, f"{colours} colours: plots missing?"


def test_large_model_report_is_bounded(tmp_path: Path) -> None:
    n = 150
    model = {
        "machine": {"cpus": 1, "path": "quest"},
        "simulation": {"duration": "100ms", "trace": True},
        "vcpus": [{"name": f"v{i}", "policy": "sporadic", "budget": "50us", "period": "10ms"}
                  for i in range(n)],
        "tasks": [{"name": f"t{i}", "vcpu": f"v{i}", "period": "10ms",
                   "program": [{"compute": "20us"}]} for i in range(n)],
    }
    r = from_dict(model).simulate()
    r.write(tmp_path / "big")
    page = write_report([tmp_path / "big"], tmp_path / "big.html")
    text = page.read_text()
    assert f"Showing the top 12 of {n}" in text and f"Busiest 12 of {n} servers" in text
    # the timeline holds every server (shown on demand), the plots only the busiest
    assert text.count('"server":"v') >= n
    assert "servers and budgets (the busiest 64 of 150)" in text
    assert text.count('"row":true') == 64
    assert "Tasks with the most jobs: 12 shown" in text
    assert "Bounds of the 24 tasks with the most jobs" in text
    assert text.count(".bound.task.") <= 2 * 24
    assert text.count("<img") <= 20


def test_report_cli_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path)]) == 2
    assert "no metrics.json" in capsys.readouterr().err
    assert main(["report", str(tmp_path), "--window", "5ms"]) == 2
    assert "--window: '5ms': write START:END" in capsys.readouterr().err


class Figures(HTMLParser):
    """Every ``<figure>`` of the page: its attributes and caption text."""

    def __init__(self) -> None:
        super().__init__()
        self.figures: list[dict[str, Any]] = []
        self.caption: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "figure":
            self.figures.append({**dict(attrs), "caption": ""})
        elif tag == "figcaption":
            self.caption = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "figcaption" and self.caption is not None:
            self.figures[-1]["caption"] = " ".join(self.caption)
            self.caption = None

    def handle_data(self, data: str) -> None:
        if self.caption is not None:
            self.caption.append(data)


def test_quest_bounds_drawn_on_the_plots(tmp_path: Path) -> None:
    """For quest models the report draws model_bounds (what `irqlab analyze`
    prints) on the plots: each bounded task's response bound on its CDF and
    histogram, each bounded read's latency bound on the I/O latency plot,
    equal to the Analysis table's bound; plots without a bound say why."""
    from irqlab.analysis import model_bounds
    from irqlab.model import load, scenario_path

    runs = {"cf": "control-and-flood", "mc": "usb-mode-change"}
    expect: dict[str, dict[str, Any]] = {}
    for name, scenario in runs.items():
        m = load(scenario_path(scenario))
        m.simulate(duration_ns=300_000_000).write(tmp_path / name)
        expect[name] = model_bounds(m.sim_config)
    text = write_report([tmp_path / n for n in runs], tmp_path / "r.html").read_text()
    cells, figs = Cells(), Figures()
    cells.feed(text)
    figs.feed(text)
    resp = {f["data-task"]: f for f in figs.figures if f.get("class") == "response"}
    (io,) = [f for f in figs.figures if f.get("class") == "io-latency"]
    io_lines = {label: ns for label, ns in json.loads(io["data-bounds"])}
    bounded_tasks = bounded_reads = 0
    for name, b in expect.items():
        metrics = json.loads((tmp_path / name / "metrics.json").read_text())
        # a task with one finished job gets a "not applicable" note, not a plot
        done = {t["name"] for t in metrics["tasks"] if t["response"]["count"] >= 2}
        for t in metrics["tasks"]:
            if t["response"]["count"] == 1:
                assert f"response times of {t['name']}: not applicable: one finished job" \
                    in text, t["name"]
        for t in b["tasks"]:
            if t["name"] not in done:
                continue
            fig = resp[t["name"]]
            lines = dict(json.loads(fig["data-bounds"]))
            if t["response"] is None:
                assert f"{name}: bound" not in lines
                assert f"no bound: {t['note'].removeprefix('no bound: ')}" in fig["caption"]
                continue
            assert lines[f"{name}: bound"] == t["response"], t["name"]
            assert cells.cells[f"{name}.bound.task.{t['name']}"] == json.dumps(t["response"])
            bounded_tasks += 1
        handled = {d["name"] for d in metrics["devices"] if d["latency"]["count"]}
        for r in b["io"]:
            label = f"{name}: bound read {r['task']} <- {r['device']}"
            key = f"{name}.bound.read.{r['task']}.{r['device']}"
            if r["latency"] is None:
                assert label not in io_lines and cells.cells[key] == ""
                assert f"{r['device']}: no bound: {r['note']}" in io["caption"]
                continue
            assert cells.cells[key] == json.dumps(r["latency"])
            if r["device"] in handled:
                assert io_lines[label] == r["latency"]
                bounded_reads += 1
    # the scenarios exercise both: a bounded quest task and bounded reads
    assert bounded_tasks >= 1 and bounded_reads >= 2
