"""Plot helpers shared by experiments and reports (matplotlib, Agg backend,
PNG files). Kept small: a bar chart of groups and a line chart of series."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def bars(
    path: Path,
    groups: Mapping[str, Mapping[str, float]],
    *,
    title: str,
    ylabel: str,
) -> Path:
    """Grouped bars: one group per outer key, one bar per inner key."""
    names = list(groups)
    labels = list(next(iter(groups.values())))
    width = 0.8 / max(1, len(labels))
    fig, ax = plt.subplots(figsize=(7, 4))
    for i, label in enumerate(labels):
        xs = [g + i * width for g in range(len(names))]
        ax.bar(xs, [groups[n][label] for n in names], width, label=label)
    ax.set_xticks([g + width * (len(labels) - 1) / 2 for g in range(len(names))], names)
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def lines(
    path: Path,
    series: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
) -> Path:
    """One line per series: name -> (xs, ys)."""
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, (xs, ys) in series.items():
        ax.plot(xs, ys, marker="o", markersize=3, label=name)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
