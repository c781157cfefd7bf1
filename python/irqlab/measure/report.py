"""Table-4-style latency report: Markdown, CSV, JSON and a PNG bar chart.

Mirrors the presentation of LATENCY-IP Table 4 (average, median, maximum,
jitter, deviation per scenario, ns) and Figures 8-9 (average and maximum per
scenario as bars), for any datasets: IP dumps, cyclictest histograms,
recorder JSON. Optionally each scenario whose name is a Table 4 row is set
next to the paper's numbers.

Design principles: the report is computed once (:func:`build`) and rendered
by pure functions; numbers are printed with two decimals like the paper;
plots use matplotlib's non-interactive Agg back end so reports work headless.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path

from irqlab.measure import stats, table4
from irqlab.measure.readers import Dataset

COLUMNS = ("n", "average", "median", "max", "min", "jitter", "dev")
HEADERS = ("N", "Avg.", "Median", "Max.", "Min.", "Jitter", "Dev.")


@dataclass(frozen=True)
class Report:
    rows: list[tuple[str, stats.LatencyStats]]
    notes: list[str]
    paper: bool = False


def build(datasets: list[Dataset], paper: bool = False) -> Report:
    if not datasets:
        raise ValueError("report: no datasets")
    names = [d.name for d in datasets]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"report: scenario names must be unique, repeated: {', '.join(dup)}")
    notes = [f"{d.name}: {n}" for d in datasets for n in d.notes]
    return Report([(d.name, stats.summarize(d.samples_ns)) for d in datasets], notes, paper)


def _fmt(v: float | int | None) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, int):
        return str(v)
    return f"{v:.2f}"


def to_markdown(rep: Report) -> str:
    lines = [
        "| Scenario | " + " | ".join(HEADERS) + " |",
        "|---|" + "---:|" * len(HEADERS),
    ]
    for name, s in rep.rows:
        lines.append(f"| {name} | " + " | ".join(_fmt(getattr(s, c)) for c in COLUMNS) + " |")
    out = "Latency (ns); jitter = max(max - avg, avg - min), dev = LATENCY-IP Eq. 4.\n\n"
    out += "\n".join(lines) + "\n"
    if rep.paper:
        cmp_lines = []
        for name, s in rep.rows:
            try:
                r = table4.row(name)
            except ValueError:
                continue
            cmp_lines.append(
                f"| {name} | {r.avg:.2f} / {s.average:.2f} | {r.median:.2f} / {s.median:.2f} | "
                f"{r.max:.2f} / {s.max:.2f} | {r.jitter:.2f} / {s.jitter:.2f} | "
                f"{r.dev:.2f} / {_fmt(s.dev)} |"
            )
        if cmp_lines:
            out += (
                "\nLATENCY-IP Table 4 (paper / measured, ns):\n\n"
                "| Scenario | Avg. | Median | Max. | Jitter | Dev. |\n"
                "|---|---:|---:|---:|---:|---:|\n" + "\n".join(cmp_lines) + "\n"
            )
    if rep.notes:
        out += "\n" + "\n".join(f"* {n}" for n in rep.notes) + "\n"
    return out


def to_csv(rep: Report) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(("scenario",) + COLUMNS)
    for name, s in rep.rows:
        w.writerow([name] + ["" if getattr(s, c) is None else getattr(s, c) for c in COLUMNS])
    return buf.getvalue()


def to_json(rep: Report) -> dict[str, object]:
    return {
        "unit": "ns",
        "scenarios": [{"scenario": name, **s.as_dict()} for name, s in rep.rows],
        "notes": rep.notes,
    }


def plot(rep: Report, path: Path) -> None:
    """Grouped bars of average and maximum per scenario (cf. LATENCY-IP Figures 8-9)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [n for n, _ in rep.rows]
    avg = [s.average for _, s in rep.rows]
    mx = [s.max for _, s in rep.rows]
    xs = range(len(names))
    fig, ax = plt.subplots(figsize=(max(5.0, 1.1 * len(names) + 2), 4.0))
    w = 0.38
    ax.bar([x - w / 2 for x in xs], avg, w, label="average")
    ax.bar([x + w / 2 for x in xs], mx, w, label="maximum")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(names, rotation=30, ha="right")
    ax.set_ylabel("latency (ns)")
    ax.set_title("Interrupt latency per scenario")
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write(rep: Report, outdir: Path, stem: str = "latency_report") -> dict[str, Path]:
    """Write ``stem``.md/.csv/.json/.png into ``outdir``; return the paths."""
    outdir.mkdir(parents=True, exist_ok=True)
    paths = {k: outdir / f"{stem}.{k}" for k in ("md", "csv", "json", "png")}
    paths["md"].write_text(to_markdown(rep))
    paths["csv"].write_text(to_csv(rep))
    paths["json"].write_text(json.dumps(to_json(rep), indent=2) + "\n")
    plot(rep, paths["png"])
    return paths
