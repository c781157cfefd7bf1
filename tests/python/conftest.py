"""Shared fixtures: `reproduced(name)` runs an `irqlab reproduce` experiment
once per test session (reduced, `quick=True`) so that the falsifier test and
the experiments' own tests share one run."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from irqlab import experiments


@pytest.fixture(scope="session")
def reproduced(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], experiments.Result]:
    cache: dict[str, experiments.Result] = {}

    def run(name: str) -> experiments.Result:
        if name not in cache:
            out: Path = tmp_path_factory.mktemp(name)
            cache[name] = experiments.run(name, out, quick=True)
        return cache[name]

    return run
