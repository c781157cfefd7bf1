from collections.abc import Callable, Mapping
from os import PathLike
from typing import Any

from .model import System

class Outcome:
    def take_metrics(self) -> dict[str, Any]: ...
    def take_config(self) -> dict[str, Any]: ...

def run(config: System | Mapping[str, Any] | str,
        progress: Callable[[int, int, int], object] | None = None,
        trace_path: str | PathLike[str] | None = None, trace_format: str = "json",
        overrides: Mapping[str, Any] | None = None,
        ) -> tuple[Outcome, str, bool, dict[str, dict[str, bytes]]]: ...
def read_config(config: Mapping[str, Any] | str, direct_only: bool = False) -> str: ...
def metrics_schema() -> str: ...
