"""Shared fixtures: `reproduced(name)` runs an `irqlab reproduce` experiment
once per test session (reduced, `quick=True`) so that the falsifier test and
the experiments' own tests share one run; `sigint` gives a Ctrl-C test the
SIGINT a terminal delivers, whatever the test run inherited."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
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


@pytest.fixture
def sigint() -> Iterator[None]:
    """Python's KeyboardInterrupt handler on SIGINT for the test. A test run
    started in the background (a shell's `&`, nohup, some CI runners)
    inherits SIGINT ignored, and so does every process it starts: a Ctrl-C
    test would send a signal nobody sees (the in-process run went on, the
    CLI ran to its end). A handled signal is reset to the default at exec,
    so the processes the test starts get Python's handler too."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
