"""docs/python.md is executed: every ```python block, in order, in one
namespace, in a scratch directory (its assertions are the checks)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "python.md"


def test_python_walkthrough_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pandas")
    blocks = re.findall(r"^```python\n(.*?)^```", DOC.read_text(), flags=re.S | re.M)
    assert len(blocks) >= 10
    monkeypatch.chdir(tmp_path)
    ns: dict[str, object] = {"__name__": "docs_python"}
    for i, code in enumerate(blocks):
        try:
            exec(compile(code, f"{DOC.name} block {i + 1}", "exec"), ns)  # noqa: S102
        except Exception as e:
            raise AssertionError(f"docs/python.md block {i + 1} failed: {e!r}\n{code}") from e
    assert (tmp_path / "report.html").exists() and (tmp_path / "latency_cdf.png").exists()
    assert (tmp_path / "sweep-out" / "results.parquet").exists()
