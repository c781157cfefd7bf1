"""Bad ``irqlab`` calls, each with its expected one-line message (golden):
files that are directories or devices, outputs that cannot be written,
out-of-range options, a closed pipe, names with terminal escapes. Every
one exits 2 (141 for the closed pipe) without a traceback, under the
timeout and memory cap of ``conftest.py``."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile_util import assert_clean_error, irqlab, irqlab_fork

from irqlab.model import scenario_path

HERE = Path(__file__).parent
QUEST = str(scenario_path("quest-table1"))
NIC_OK = str(HERE / "models" / "window_above_duration.yaml")
DISK = str(HERE / "models" / "disk_ok.yaml")


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, str]:
    f = tmp_path / "a_file"
    f.write_text("x")
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    esc = tmp_path / "bad\x1b[31mname.yaml"
    return {"file": str(f), "dir": str(tmp_path), "binary": str(binary), "esc": str(esc),
            "out": str(tmp_path / "out")}


# (id, argv with {placeholders}, expected part of the one-line message)
CASES = [
    ("check_dir", ["check", "{dir}"], "is a directory, not a model file"),
    ("check_dev_zero", ["check", "/dev/zero"], "/dev/zero: not a regular file"),
    ("check_dev_null", ["check", "/dev/null"], "/dev/null: not a regular file"),
    ("check_missing", ["check", "/nonexistent.yaml"], "/nonexistent.yaml: no such model file"),
    ("check_binary", ["check", "{binary}"], "not a text file"),
    ("check_escaped_path", ["check", "{esc}"], "bad\\x1b[31mname.yaml: no such model file"),
    ("check_no_args", ["check"], "the following arguments are required: model"),
    ("check_unknown_option", ["check", "--bogus", QUEST], "unrecognized arguments: --bogus"),
    ("unknown_command", ["frobnicate"], "invalid choice: 'frobnicate'"),
    ("simulate_out_dev_null", ["simulate", NIC_OK, "--out", "/dev/null"],
     "--out: /dev/null exists and is not a directory"),
    ("simulate_out_file", ["simulate", NIC_OK, "--out", "{file}"],
     "exists and is not a directory"),
    ("simulate_out_unwritable", ["simulate", NIC_OK, "--out", "/proc/irqlab/out"],
     "/proc/irqlab"),
    ("simulate_no_out", ["simulate", NIC_OK], "the following arguments are required: --out"),
    ("simulate_model_dir", ["simulate", "{dir}", "--out", "{out}"], "is a directory"),
    ("simulate_duration_u64", ["simulate", NIC_OK, "--out", "{out}", "--duration",
                               "18446744073s"], "--duration: \"18446744073s\" exceeds the longest"),
    ("simulate_duration_negative", ["simulate", NIC_OK, "--out", "{out}", "--duration=-1s"],
     "--duration: \"-1s\" is negative"),
    ("simulate_duration_no_unit", ["simulate", NIC_OK, "--out", "{out}", "--duration", "10"],
     "--duration: \"10\" has no unit"),
    ("simulate_duration_windows", ["simulate", DISK, "--out", "{out}", "--duration",
                                   "100000s"], "windows: at most 1000000 per run"),
    ("simulate_seed_negative", ["simulate", NIC_OK, "--out", "{out}", "--seed", "-1"],
     "--seed: -1 must be a non-negative integer"),
    ("simulate_seed_huge", ["simulate", NIC_OK, "--out", "{out}", "--seed", str(2**70)],
     "--seed: 1180591620717411303424 must be below 2**64"),
    ("simulate_seed_text", ["simulate", NIC_OK, "--out", "{out}", "--seed", "abc"],
     "invalid int value: 'abc'"),
    ("simulate_trace_events_zero", ["simulate", NIC_OK, "--out", "{out}",
                                    "--trace-max-events", "0"], "must be positive"),
    ("simulate_trace_events_huge", ["simulate", NIC_OK, "--out", "{out}",
                                    "--trace-max-events", str(10**12)],
     "must be between 1 and 2000000"),
    ("analyze_dir", ["analyze", "{dir}"], "is a directory"),
    ("analyze_dev_zero", ["analyze", "/dev/zero"], "not a regular file"),
    ("analyze_json_dir", ["analyze", QUEST, "--json", "{dir}"], "Is a directory"),
    ("analyze_passwd", ["analyze", "/etc/passwd"], "characters ...]"),
    ("run_check_duration", ["run", "--check", "--duration=-5s", "{file}"],
     "--duration: \"-5s\" is negative"),
    ("run_no_model", ["run"], "the following arguments are required: model"),
    ("reproduce_unknown", ["reproduce", "no-such-experiment"], "no-such-experiment"),
    ("measure_no_subcommand", ["measure"], "error"),
    ("demo_bad_until", ["demo", "--until", "nonsense", "--out", "{out}"], "nonsense"),
]


@pytest.mark.parametrize(("argv", "expect"), [pytest.param(a, e, id=i) for i, a, e in CASES])
def test_bad_call(argv: list[str], expect: str, files: dict[str, str]) -> None:
    r = irqlab_fork(*[a.format(**files) for a in argv])
    assert_clean_error(r, expect)


def test_enough_cases() -> None:
    assert len(CASES) >= 30


def test_broken_pipe(tmp_path: Path) -> None:
    """`irqlab check M | head -1`: the reader leaves early; no traceback."""
    r = irqlab("check", QUEST, shell_tail="head -c 1")
    assert "Traceback" not in r.err and "BrokenPipe" not in r.err, r.err
    assert r.err == "", r.err
    assert r.code in (0, 141), r.code


def test_escaped_name_in_error(tmp_path: Path) -> None:
    """A name with an ANSI escape is refused and echoed escaped (a real
    interpreter: stderr is a pipe, as on a terminal session)."""
    r = irqlab("check", HERE / "models" / "name_vcpu_ansi.yaml")
    assert_clean_error(r, "no control characters")
    assert "\\u{1b}[31m" in r.err


def test_a_base_exception_is_one_line(monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    """A Rust panic that escaped the binding's guard reaches Python as pyo3's
    `PanicException`, a `BaseException`, not an `Exception`: the CLI still
    prints one line naming it, exit 2, no traceback."""
    from irqlab import cli
    from irqlab.commands import check

    class PanicException(BaseException):  # what pyo3 raises, by name
        pass

    def boom(*_: object, **__: object) -> None:
        raise PanicException("index out of bounds: the len is 0 but the index is 0\nmore")

    monkeypatch.delenv("IRQLAB_DEBUG", raising=False)
    monkeypatch.setattr(check, "run", boom)
    assert cli.main(["check", QUEST]) == 2
    err = capsys.readouterr().err
    assert err == ("irqlab check: error: internal error (PanicException): index out of "
                   "bounds: the len is 0 but the index is 0; please report it\n"), err
