"""`irqlab report`'s page to explore (issue 38, item 3): the interactive
timeline zooms and pans under real input events in headless Chromium
(DevTools protocol over a pipe, tests/python/chromium_cdp.py) and its
screenshot shows the expected tracks; colours are fixed per name across
models and never reused for interrupt handlers; the verdict banner; the
per-CPU breakdown adds up to the run's duration; "not applicable" in place
of empty plots; the note on zero latencies; the Perfetto note. Screenshots
are kept in out/test-artifacts/ (not committed)."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import zlib
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from chromium_cdp import Browser, chromium_path

from irqlab import palette
from irqlab.cli import main
from irqlab.model import from_dict, scenario_path
from irqlab.report import write_report

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "out" / "test-artifacts"
GUTTER = 120  # the timeline's label column (report_assets/timeline.js)

TWO_CPU_LINUX = {
    "machine": {"cpus": 2, "path": "linux"},
    "simulation": {"duration": "500ms", "trace": True},
    "vcpus": [{"name": "ctl", "policy": "fifo", "priority": 50, "cpu": 0},
              {"name": "rx", "policy": "fifo", "priority": 40, "cpu": 1}],
    "tasks": [{"name": "control", "vcpu": "ctl", "period": "10ms",
               "program": [{"compute": "600us"}]},
              {"name": "reader", "vcpu": "rx",
               "program": [{"forever": [{"read": "stream"}, {"compute": "10us"}]}]}],
    "devices": [{"name": "stream", "kind": "nic", "class": "stream", "cpu": 1,
                 "arrival": {"kind": "periodic", "interval": "100us"},
                 "top_half": "2us", "bottom_half": "5us", "packet": "64B"}],
}

# Two sporadic VCPUs at 50 % + 45 %: over QUEST-VCPU Eq. 1's 82.8 % for two,
# yet harmonic, so the response-time analysis bounds every task.
EQ1_NOT_MET = {
    "machine": {"cpus": 1, "path": "quest"},
    "simulation": {"duration": "100ms", "trace": True},
    "vcpus": [{"name": "a", "policy": "sporadic", "budget": "1ms", "period": "2ms"},
              {"name": "b", "policy": "sporadic", "budget": "1800us", "period": "4ms"}],
    "tasks": [{"name": "fast", "vcpu": "a", "period": "10ms", "program": [{"compute": "1ms"}]},
              {"name": "slow", "vcpu": "b", "period": "20ms", "program": [{"compute": "2ms"}]}],
}


def simulate(scenario: str, out: Path, *extra: str) -> Path:
    assert main(["simulate", str(scenario_path(scenario)), "--out", str(out), "--no-plots",
                 *extra]) == 0
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("explore")
    out = {name: simulate(name, base / name, "--trace") for name in
           ("control-and-stream-linux", "control-and-flood", "control-and-flood-no-iovcpu")}
    out["vint-case"] = simulate("vint-case", base / "vint-case", "--trace", "--duration", "2s")
    from_dict(TWO_CPU_LINUX).simulate().write(base / "two-cpu-linux")
    out["two-cpu-linux"] = base / "two-cpu-linux"
    for name, d in out.items():
        write_report([d], d / "report.html")
        assert (d / "report.html").exists(), name
    return out


class Page(HTMLParser):
    """What the tests read back from a page: the breakdown tables' rows,
    the legend's swatches, the zero notes, the "not applicable" notes, the
    verdict banners and the timelines' JSON."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tables: list[dict[str, Any]] = []
        self.swatches: list[dict[str, str]] = []
        self.zero_notes: list[dict[str, str]] = []
        self.na: list[str] = []
        self.banners: list[dict[str, str]] = []
        self.meta: list[dict[str, Any]] = []
        self._in: str | None = None
        self._text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        cls = a.get("class", "")
        if tag == "div" and self._in == "verdict":
            self._depth += 1
            return
        if tag == "table" and cls == "breakdown":
            self.tables.append({**a, "rows": []})
        elif tag == "tr" and "data-part" in a and self.tables:
            self.tables[-1]["rows"].append({**a, "cells": []})
        elif tag == "span" and cls == "sw":
            self.swatches.append(a)
        elif tag == "p" and cls in ("zero-note", "na"):
            self._start(cls, a)
        elif tag == "div" and cls.startswith("verdict"):
            self._start("verdict", a)
        elif tag == "script" and cls == "tl-meta":
            self._start("meta", a)

    def _start(self, what: str, attrs: dict[str, str]) -> None:
        self._in, self._text, self._attrs, self._depth = what, [], attrs, 0

    def handle_endtag(self, tag: str) -> None:
        if self._in is None or tag not in ("p", "div", "script"):
            return
        if self._in == "verdict" and (tag != "div" or self._depth):
            self._depth -= tag == "div"
            return
        text = "".join(self._text)
        if self._in == "zero-note":
            self.zero_notes.append({**self._attrs, "text": text})
        elif self._in == "na":
            self.na.append(text)
        elif self._in == "verdict":
            self.banners.append({**self._attrs, "text": text})
        elif self._in == "meta":
            self.meta.append(json.loads(text))
        self._in = None

    def handle_data(self, data: str) -> None:
        if self._in is not None:
            self._text.append(data)
        if self.tables and self.tables[-1]["rows"]:
            self.tables[-1]["rows"][-1]["cells"].append(data)


def page_of(run: Path) -> Page:
    return Page((run / "report.html").read_text())


def need_chromium() -> None:
    if chromium_path() is None:
        pytest.skip("no chromium on PATH (the Makefile installs Debian's chromium)")


def view(b: Browser, i: int = 0) -> tuple[float, float]:
    v = b.eval(f"(() => {{ const s = document.querySelectorAll('section.timeline')[{i}]; "
               "return [s.dataset.viewStartNs, s.dataset.viewEndNs]; })()")
    return float(v[0]), float(v[1])


def canvas_rect(b: Browser) -> list[float]:
    """Scroll the timeline to the top of the viewport; its canvas's rect."""
    return list(b.eval("(() => { const s = document.querySelector('section.timeline'); "
                       "s.scrollIntoView(); const c = s.querySelector('canvas')"
                       ".getBoundingClientRect(); return [c.x, c.y, c.width, c.height]; })()"))


def pixels(png: Path, rect: list[float]) -> np.ndarray:
    from PIL import Image

    img = np.asarray(Image.open(png).convert("RGB")).astype(int)
    x, y, w, h = (round(v) for v in rect)
    return img[y:y + h, x + GUTTER:x + w]


def count(px: np.ndarray, color: str, tol: int = 3) -> int:
    rgb = np.array([int(color[i:i + 2], 16) for i in (1, 3, 5)])
    return int((np.abs(px - rgb).max(axis=-1) <= tol).sum())


def shot(b: Browser, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return b.screenshot(ARTIFACTS / name)


# ---- the timeline in Chromium ------------------------------------------------

def test_timeline_zooms_and_pans_under_input_events(runs: dict[str, Path]) -> None:
    """Wheel events zoom around the pointer, a drag pans by what it moved,
    a double-click shows the whole run again; the zoomed screenshot shows
    the control task, the reader and the softirq bottom halves in their
    colours, the whole-run one the run's full span."""
    need_chromium()
    run = runs["control-and-stream-linux"]
    dur = json.loads((run / "metrics.json").read_text())["duration_ns"]
    with Browser(1280, 900) as b:
        b.goto(run / "report.html")
        b.wait_for("document.querySelector('section.timeline').dataset.ready")
        rect = canvas_rect(b)
        b.frames()
        assert view(b) == (0, dur)  # the whole run, not a first window
        whole = pixels(shot(b, "timeline-whole.png"), rect)
        width = rect[2] - GUTTER
        x, y = rect[0] + GUTTER + 0.4 * width, rect[1] + 40
        anchor = 0.4 * dur
        b.wheel(x, y, -600)
        t0, t1 = view(b)
        assert (t1 - t0) / dur == pytest.approx(np.exp(-0.9), rel=1e-3)
        per_px = (t1 - t0) / width
        assert abs(t0 + 0.4 * (t1 - t0) - anchor) <= per_px  # the time under the pointer stays
        for _ in range(3):
            b.wheel(x, y, -600)
        t0, t1 = view(b)
        assert 0.02 * dur < t1 - t0 < 0.03 * dur and t0 < anchor < t1
        zoomed = pixels(shot(b, "timeline-zoomed.png"), rect)
        # hovering a control job names it
        jx = b.eval("(() => { const tl = window.irqlabTimelines[0], t = tl.tracks[0]; "
                    "for (let i = 0; i < t.s.length; i++) if (t.s[i] > tl.t0 && t.e[i] < tl.t1 "
                    "&& tl.meta.labels[t.l[i]].name === 'control') "
                    "return tl.xOf((t.s[i] + t.e[i]) / 2); return null; })()")
        assert jx is not None
        b.mouse("mouseMoved", rect[0] + jx, y)
        tip = b.eval("document.querySelector('.tl-tip').textContent")
        assert tip.startswith("control (server ctl) \u00b7 task"), tip
        # a piece of a 600 us job (softirq at IRQ exit preempts it every 100 us)
        piece = re.search(r"duration ([\d.]+) us", tip)
        assert piece and 0 < float(piece.group(1)) <= 600, tip
        b.mouse("mouseMoved", x, rect[1] + rect[3] + 50)  # off the canvas: the tip goes
        assert b.eval("document.querySelector('.tl-tip').style.display") == "none"
        # a drag of 300 px to the right shows what was 300 px to the left
        per_px = (t1 - t0) / width
        b.drag(x, y, x + 300)
        d0, d1 = view(b)
        assert d0 == pytest.approx(t0 - 300 * per_px, abs=per_px)
        assert d1 - d0 == pytest.approx(t1 - t0, abs=2)  # ns, rounded on the page
        # a sideways swipe pans by its distance
        b.mouse("mouseWheel", x, y, deltaX=100, deltaY=0)
        b.frames()
        s0, s1 = view(b)
        assert s0 == pytest.approx(d0 + 100 * per_px, abs=per_px) and s1 - s0 == \
            pytest.approx(d1 - d0, abs=2)
        b.wheel(x, y, +600)
        assert view(b)[1] - view(b)[0] > t1 - t0  # wheel the other way: out
        b.mouse("mousePressed", x, y, button="left", buttons=1, clickCount=2)
        b.mouse("mouseReleased", x, y, button="left", buttons=0, clickCount=2)
        b.frames()
        assert view(b) == (0, dur)
    # the zoomed view: control's 600 us jobs are ~20 px wide and 30 px tall
    # (two or three of them in the view), the reader's and the softirq's
    # 10 us and 5 us every 100 us are visible as bars of their own colours
    control, reader = palette.color_of("control"), palette.color_of("reader")
    softirq = palette.softirq_color("stream")
    assert count(zoomed, control) > 1000, "control's jobs not drawn"
    assert count(zoomed, reader) > 1500 and count(zoomed, softirq) > 800
    assert count(zoomed, palette.IDLE) > 20_000  # mostly idle: 79 % of the run
    # zooming changed the picture; the whole run is drawn too
    assert count(whole, control) > 50 and count(whole, palette.IDLE) > 1000
    assert (np.abs(zoomed - whole).sum(axis=-1) > 30).mean() > 0.05


def test_servers_and_budgets_on_demand(runs: dict[str, Path]) -> None:
    """Ticking "servers and budgets" (a real click) adds a row per server
    and its budget: the sporadic server ctl's budget line in its colour;
    a FIFO server's budget row says why there is none."""
    need_chromium()
    run = runs["control-and-flood"]
    with Browser(1280, 900) as b:
        b.goto(run / "report.html")
        b.wait_for("document.querySelector('section.timeline').dataset.ready")
        rect = canvas_rect(b)
        b.frames()
        rows = ("window.irqlabTimelines[0].rows.map(r => [r.type, r.srv ? r.srv.name : '', "
                "r.y, r.h])")
        assert [r[0] for r in b.eval(rows)] == ["cpu"]
        box = b.eval("(() => { const r = document.querySelector('input.tl-servers')"
                     ".getBoundingClientRect(); return [r.x + r.width / 2, "
                     "r.y + r.height / 2]; })()")
        b.mouse("mousePressed", box[0], box[1], button="left", buttons=1, clickCount=1)
        b.mouse("mouseReleased", box[0], box[1], button="left", buttons=0, clickCount=1)
        b.frames()
        assert b.eval("document.querySelector('input.tl-servers').checked") is True
        rect2 = canvas_rect(b)
        assert rect2[3] > rect[3] + 3 * 30  # three servers, each a row and a budget row
        layout = b.eval(rows)
        after = pixels(shot(b, "timeline-servers.png"), rect2)
    assert [r[0] for r in layout] == ["cpu"] + ["server", "budget"] * 3
    assert [r[1] for r in layout if r[0] == "budget"] == ["ctl", "io.sensor", "io.flood"]
    for kind, srv, y, h in layout:
        if kind == "budget":  # the step line of the remaining budget, in the server's colour
            band = after[round(y):round(y + h)]
            assert count(band, palette.color_of(srv), tol=3) > 100, srv
    linux = page_of(runs["control-and-stream-linux"]).meta[0]
    why = {s["name"]: s["no_budget"] for s in linux["servers"]}
    assert "FIFO" in why["ctl"] and "no budget" in why["ctl"]
    quest = {s["name"]: s for s in page_of(run).meta[0]["servers"]}
    assert quest["ctl"]["budget_ns"] == 500_000 and quest["ctl"]["no_budget"] is None
    assert quest["io.flood"]["budget_ns"] > 0  # PIBS: scaled to its counter's largest value


def decode(meta: dict[str, Any], blob: str) -> list[dict[str, np.ndarray]]:
    """The timeline's slices, decoded as the page does (LEB128 varints)."""
    data = zlib.decompress(base64.b64decode(blob))
    pos = 0

    def read(n: int) -> np.ndarray:
        nonlocal pos
        out = np.zeros(n, dtype=np.int64)
        for i in range(n):
            v = shift = 0
            while True:
                byte = data[pos]
                pos += 1
                v |= (byte & 0x7F) << shift
                shift += 7
                if byte < 0x80:
                    break
            out[i] = v
        return out

    tracks = []
    for t in meta["tracks"]:
        s = np.cumsum(read(t["n"]))
        tracks.append({"cpu": t["cpu"], "kind": t["kind"], "s": s, "d": read(t["n"]),
                       "l": read(t["n"])})
    return tracks


def test_the_page_holds_every_slice_of_a_2s_run_compactly(runs: dict[str, Path]) -> None:
    """control-and-flood simulates 2 s: the page's timeline holds every CPU
    slice of trace.json (decoded here and in Chromium), in well under a
    megabyte of page for a 4 MB trace."""
    run = runs["control-and-flood"]
    text = (run / "report.html").read_text()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text)  # no network
    trace = json.loads((run / "trace.json").read_text())
    want = sorted((round(e["ts"] * 1e3), round(e["dur"] * 1e3), e["name"])
                  for e in trace["traceEvents"] if e.get("ph") == "X" and e["pid"] < 1000
                  and e.get("tid", 0) == 0)
    meta = page_of(run).meta[0]
    blob = re.search(r"class='tl-blob'>([^<]*)<", text).group(1)  # type: ignore[union-attr]
    (track,) = [t for t in decode(meta, blob) if t["kind"] == "cpu"]
    got = sorted((int(s), int(d), meta["labels"][lab]["name"])
                 for s, d, lab in zip(track["s"], track["d"], track["l"], strict=True))
    assert got == want and len(got) > 10_000
    assert max(s + d for s, d, _ in got) == meta["end_ns"] > 1_990_000_000
    assert len(text) < 400_000, f"{len(text)} bytes"
    assert (run / "trace.json").stat().st_size > 3_000_000
    need_chromium()
    with Browser(1280, 900) as b:
        b.goto(run / "report.html")
        b.wait_for("document.querySelector('section.timeline').dataset.ready")
        n, end = b.eval("(() => { const t = window.irqlabTimelines[0].tracks"
                        ".filter(t => t.kind === 'cpu')[0]; return [t.s.length, "
                        "Math.max(...Array.from(t.e))]; })()")
    assert (n, end) == (len(want), meta["end_ns"])


# ---- colours ---------------------------------------------------------------

def test_a_task_has_one_colour_across_models_and_never_an_interrupt_colour(
        runs: dict[str, Path]) -> None:
    """The same task name has the same colour in the quest, quest-no-iovcpu
    and linux runs (different models, different sets of names); no thread
    or server colour is an ISR red or a softirq magenta."""
    seen: dict[str, set[str]] = {}
    for name in ("control-and-flood", "control-and-flood-no-iovcpu",
                 "control-and-stream-linux"):
        p = page_of(runs[name])
        for sw in p.swatches:
            if sw.get("data-kind") in ("task", "thread", "isr", "softirq"):
                seen.setdefault(f"{sw['data-kind']}:{sw['data-name']}", set()).add(
                    sw["data-color"])
        for lab in p.meta[0]["labels"]:
            if lab["kind"] in ("task", "thread"):
                assert lab["color"] not in palette.ISR_PALETTE + palette.SOFTIRQ_PALETTE
            elif lab["kind"] == "isr":
                assert lab["color"] in palette.ISR_PALETTE, lab
            elif lab["kind"] == "softirq":
                assert lab["color"] in palette.SOFTIRQ_PALETTE, lab
    # stable across processes and versions, not Python's salted hash():
    # two processes with different hash seeds, and the colour pinned
    for name, seed in (("control-and-flood", "1"), ("control-and-stream-linux", "2")):
        out = runs[name] / f"report-seed{seed}.html"
        subprocess.run([sys.executable, "-m", "irqlab", "report", str(runs[name]), "--out",
                        str(out)], check=True, capture_output=True,
                       env={**os.environ, "PYTHONHASHSEED": seed})
        colours = {sw["data-name"]: sw["data-color"] for sw in Page(out.read_text()).swatches
                   if sw.get("data-kind") == "task"}
        assert colours["control"] == "#26c1d9" == palette.color_of("control"), colours
    assert seen["task:control"] == {palette.color_of("control")}
    assert seen["task:reader"] == {palette.color_of("reader")}
    assert all(len(c) == 1 for c in seen.values()), seen
    # names that an ISR-coloured legend once took: threads all the same
    for name in ("isr", "xhci0.int1", "irq", "vision", "ksoftirqd/0"):
        assert palette.color_of(name) in palette.THREAD_PALETTE
    for c in palette.THREAD_PALETTE:
        for fam in (palette.ISR_HUE, palette.SOFTIRQ_HUE):
            d = abs(palette.hue_of(c) - fam) % 360
            assert min(d, 360 - d) >= 25, (c, fam)


# ---- the breakdown -----------------------------------------------------------

@pytest.mark.parametrize("name", ["two-cpu-linux", "control-and-flood",
                                  "control-and-stream-linux", "vint-case"])
def test_breakdown_adds_up_to_the_run_per_cpu(runs: dict[str, Path], name: str) -> None:
    """Per CPU, top halves + softirq + every server + idle = the run's
    duration (exact, in ns; the percentages to 100 within rounding); the
    totals are the metrics'; each server's threads (summed from the trace
    here, independently) add up to the server's time."""
    run = runs[name]
    m = json.loads((run / "metrics.json").read_text())
    trace = json.loads((run / "trace.json").read_text())
    tables = page_of(run).tables
    assert [int(t["data-cpu"]) for t in tables] == list(range(len(m["cpus"])))
    for t in tables:
        cpu, dur = int(t["data-cpu"]), int(t["data-duration-ns"])
        assert dur == m["duration_ns"]
        top = [r for r in t["rows"] if r["data-part"] == "top"]
        assert sum(int(r["data-ns"]) for r in top) == dur
        pct = [float(re.search(r"([\d.]+) %", "".join(r["cells"])).group(1))  # type: ignore
               for r in top]
        assert sum(pct) == pytest.approx(100, abs=0.01 * len(pct))
        c = m["cpus"][cpu]
        by_kind = {r["data-kind"]: int(r["data-ns"]) for r in top}
        assert by_kind["isr"] == c["isr_ns"] and by_kind["idle"] == c["idle_ns"]
        if m["path"] == "linux":
            assert by_kind["softirq"] == c["softirq_ns"]
        servers = [r for r in top if "".join(r["cells"]).startswith("server ")]
        assert len(servers) == sum(s["cpu"] == cpu for s in m["servers"])
        rows = t["rows"]
        for i, r in enumerate(rows):
            if r not in servers:
                continue
            srv = r["cells"][0].removeprefix("server ")
            subs = []
            for s in rows[i + 1:]:
                if s["data-part"] != "sub":
                    break
                subs.append(s)
            threads: dict[str, int] = {}
            for e in trace["traceEvents"]:
                if e.get("ph") == "X" and e["pid"] == cpu and e.get("tid", 0) == 0 \
                        and e.get("cat") == srv:
                    threads[e["name"]] = threads.get(e["name"], 0) + round(e["dur"] * 1e3)
            assert {s["cells"][0].strip(): int(s["data-ns"]) for s in subs} == threads
            assert sum(threads.values()) == int(r["data-ns"])
    if name == "two-cpu-linux":
        # the softirq is on CPU 1, where the NIC interrupts, not on CPU 0
        soft = [next(int(r["data-ns"]) for r in t["rows"] if r["data-kind"] == "softirq")
                for t in tables]
        assert soft[0] == 0 and soft[1] == m["cpus"][1]["softirq_ns"] > 0


# ---- the banner, not applicable, zeros, Perfetto -------------------------------

def test_verdict_banner(runs: dict[str, Path], tmp_path: Path) -> None:
    """The banner gives the analysis verdict, the misses and the drops;
    QUEST-VCPU Eq. 1 not met is shown as the sufficient test it is, not as
    a failure; an analysis.json in the run directory is the verdict used."""
    (ok,) = page_of(runs["control-and-stream-linux"]).banners
    assert ok["data-status"] == "ok" and ok["data-analysis-ok"] == "true"
    assert "every server, task and flow is bounded" in ok["text"]
    bad_run = runs["control-and-flood-no-iovcpu"]
    m = json.loads((bad_run / "metrics.json").read_text())
    (bad,) = page_of(bad_run).banners
    misses = sum(t["deadline_misses"] for t in m["tasks"])
    drops = sum(d["dropped"] for d in m["devices"])
    assert misses > 0 and drops > 0
    assert bad["data-status"] == "fail" and int(bad["data-misses"]) == misses
    assert int(bad["data-drops"]) == drops and "analysis: FAILS" in bad["text"]
    assert f"task control: {m['tasks'][0]['deadline_misses']} deadline misses" in bad["text"]
    # Eq. 1 not met, every task bounded: the banner is not a failure
    from_dict(EQ1_NOT_MET).simulate().write(tmp_path / "eq1")
    page = write_report([tmp_path / "eq1"], tmp_path / "eq1.html").read_text()
    (b,) = Page(page).banners
    assert b["data-status"] == "ok", b["text"]
    assert "Eq. 1, a sufficient utilization test (not part of the verdict" in b["text"]
    assert "not met" in b["text"] and "FAILS" not in b["text"]
    row = page.split("QUEST-VCPU Eq. 1 (sufficient test")[1].split("</tr>")[0]
    assert "not met (inconclusive)" in row and "FAILS" not in row
    # the user's analysis.json decides
    (tmp_path / "eq1" / "analysis.json").write_text(json.dumps(
        {"verdict": {"ok": False, "failures": ["task slow: made-up failure"]}}))
    page = write_report([tmp_path / "eq1"], tmp_path / "eq1b.html").read_text()
    (b,) = Page(page).banners
    assert b["data-status"] == "fail" and "task slow: made-up failure" in b["text"]
    assert "analysis.json" in b["text"]


def test_not_applicable_instead_of_empty_or_two_point_plots(runs: dict[str, Path],
                                                            tmp_path: Path) -> None:
    """Without a trace, 2 windows of CPU share are no curve: the page says
    so and why, and draws no timeline; with the trace the CPU-use plot has
    100 points over the 2 s."""
    run = simulate("control-and-flood", tmp_path / "notrace")
    page = write_report([run], tmp_path / "notrace.html").read_text()
    p = Page(page)
    assert any("CPU share over time: not applicable" in n and "2 window(s)" in n
               for n in p.na), p.na
    assert any(n.startswith("timeline: not applicable: no trace") for n in p.na)
    assert '<figure class="share"' not in page
    traced = (runs["control-and-flood"] / "report.html").read_text()
    assert re.search(r'<figure class="share" data-run="control-and-flood" data-bins="100">',
                     traced)
    assert "not applicable" not in traced.split("<h2>CPU use over time</h2>")[1].split("<script")[0]
    # a task with one finished job: a note, not a one-point CDF
    model = json.loads(json.dumps(EQ1_NOT_MET))
    model["tasks"].append({"name": "boot", "vcpu": "a", "program": [{"compute": "100us"}]})
    from_dict(model).simulate().write(tmp_path / "once")
    page = write_report([tmp_path / "once"], tmp_path / "once.html").read_text()
    assert "response times of boot: not applicable: one finished job, no distribution" in page
    figs = re.findall(r'<figure class="response" data-task="([^"]+)"', page)
    assert figs == ["fast", "slow"]


def test_zero_latencies_are_counted_and_left_off_the_log_axis(runs: dict[str, Path],
                                                              tmp_path: Path) -> None:
    """The NIC flood's reads mostly find a packet already buffered: the
    page gives their share (the metrics' [0, 1) bin), explains it and plots
    the rest; a run without zero latencies has no such note."""
    run = runs["control-and-flood"]
    m = json.loads((run / "metrics.json").read_text())
    flood = next(d for d in m["devices"] if d["name"] == "flood")["latency"]
    zeros = sum(c for lo, hi, c in flood["histogram_ns"] if (lo, hi) == (0, 1))
    assert zeros / flood["count"] > 0.5  # dominated by zeros
    page = (run / "report.html").read_text()
    notes = {n["data-class"]: n for n in Page(page).zero_notes}
    note = notes["flood"]
    assert int(note["data-zeros"]) == zeros and int(note["data-count"]) == flood["count"]
    assert float(note["data-zero-fraction"]) == pytest.approx(zeros / flood["count"], abs=1e-4)
    assert "exactly 0 ns" in note["text"] and "already buffered" in note["text"]
    assert "docs/metrics.md" in note["text"] and "other" in note["text"]
    usb = simulate("usb-throughput", tmp_path / "usb", "--duration", "500ms")
    assert not Page(write_report([usb], tmp_path / "usb.html").read_text()).zero_notes


def test_perfetto_note(runs: dict[str, Path]) -> None:
    run = runs["control-and-flood"]
    page = (run / "report.html").read_text()
    size = (run / "trace.json").stat().st_size / 1e6
    note = page.split("<details class='perfetto'>")[1].split("</details>")[0]
    assert f"trace.json</code> ({size:.1f} MB)" in note
    assert "ui.perfetto.dev" in note and "Open trace file" in note
    assert "does not upload" in note and "chrome://tracing" in note


def test_a_trace_of_part_of_the_run_is_said_to_be_so(tmp_path: Path) -> None:
    """With simulation.trace_until the trace covers the run's start: the
    timeline opens on that part and hatches the rest (not idle), the
    breakdown and the CPU-use plot say what their split covers, while the
    breakdown's totals stay the whole run's."""
    model = json.loads(json.dumps(EQ1_NOT_MET))
    model["simulation"]["trace_until"] = "30ms"
    from_dict(model).simulate().write(tmp_path / "part")
    page = write_report([tmp_path / "part"], tmp_path / "part.html").read_text()
    p = Page(page)
    meta = p.meta[0]
    assert meta["trace_end_ns"] == 30_000_000 and meta["initial"] == [0, 30_000_000]
    assert meta["duration_ns"] == 100_000_000
    assert "Only [0, 30.000 ms) of the 100.000 ms run is drawn" in page
    assert "The split by device and thread (trace) covers [0, 30.000 ms) only" in page
    assert "The plot covers [0, 30.000 ms)" in page
    (t,) = p.tables
    assert sum(int(r["data-ns"]) for r in t["rows"] if r["data-part"] == "top") == 100_000_000
    (b,) = p.banners
    assert "the trace covers the first 30.000 ms" in b["text"]


def test_two_runs_share_one_view_until_unlinked(runs: dict[str, Path], tmp_path: Path) -> None:
    """Design A next to design B: zooming one timeline zooms the other to
    the same range; with "same view" unticked on B, B stays put."""
    need_chromium()
    page = write_report([runs["control-and-flood"], runs["control-and-flood-no-iovcpu"]],
                        tmp_path / "ab.html")
    with Browser(1280, 900) as b:
        b.goto(page)
        b.wait_for("document.querySelectorAll('section.timeline[data-ready]').length == 2")
        assert b.eval("getComputedStyle(document.querySelector('.tl-link-label')).display") \
            != "none"
        rect = canvas_rect(b)
        x, y = rect[0] + GUTTER + 0.25 * (rect[2] - GUTTER), rect[1] + 40
        b.wheel(x, y, -600)
        a = view(b, 0)
        assert a[1] - a[0] < 1e9 and view(b, 1) == a
        b.eval("document.querySelectorAll('input.tl-link')[1].click()")
        b.wheel(x, y, -600)
        assert view(b, 0)[1] - view(b, 0)[0] < a[1] - a[0] and view(b, 1) == a


def test_a_run_that_measures_less_says_so(runs: dict[str, Path], tmp_path: Path) -> None:
    """A real run's directory (irqlab vmm --out) leaves out misses, per-CPU
    accounting and servers' busy time (irqlab.compare.VMM_LEFT_OUT): the
    banner does not count 0 misses, the breakdown is "not applicable"
    without a trace."""
    import shutil

    src = runs["control-and-flood"]
    run = tmp_path / "real"
    run.mkdir()
    shutil.copy(src / "config.json", run / "config.json")
    m = json.loads((src / "metrics.json").read_text())
    m["events"] = 0
    m["cpus"] = [{} for _ in m["cpus"]]
    for t in m["tasks"]:
        del t["deadline_misses"]
    for s in m["servers"]:
        del s["busy_ns"], s["background_ns"]
    (run / "metrics.json").write_text(json.dumps(m))
    page = write_report([run], tmp_path / "real.html").read_text()
    p = Page(page)
    (b,) = p.banners
    assert "measured 2000.000 ms: deadline misses not measured" in b["text"]
    assert not p.tables
    assert any(n.startswith("real: CPU time breakdown: not applicable") for n in p.na), p.na


def test_window_sets_the_first_view(runs: dict[str, Path], tmp_path: Path) -> None:
    """``--window`` (``window=``) opens the timeline on that range; the page
    still holds the whole run."""
    run = runs["control-and-flood"]
    assert main(["report", str(run), "--out", str(tmp_path / "w.html"),
                 "--window", "100ms:200ms"]) == 0
    meta = Page((tmp_path / "w.html").read_text()).meta[0]
    assert meta["initial"] == [100_000_000, 200_000_000]
    assert meta["end_ns"] > 1_990_000_000


def test_a_cut_perfetto_trace_is_drawn_as_cut(tmp_path: Path) -> None:
    """trace.pftrace has no otherData: the metrics' trace_truncated tells
    the report where the trace stops."""
    run = simulate("quest-table1", tmp_path / "cut", "--duration", "200ms", "--trace",
                   "--trace-format", "perfetto", "--trace-max-events", "5000")
    m = json.loads((run / "metrics.json").read_text())
    assert m["trace_truncated"] and (run / "trace.pftrace").exists()
    meta = Page(write_report([run], tmp_path / "cut.html").read_text()).meta[0]
    assert 0 < meta["trace_end_ns"] == meta["end_ns"] < m["duration_ns"]
    assert meta["initial"] == [0, meta["trace_end_ns"]]
