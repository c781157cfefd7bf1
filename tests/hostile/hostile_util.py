"""Shared by the hostile-input tests: run an ``irqlab`` command in a child
process under a wall-clock timeout and an address-space cap, and check the
one-line error contract of the CLI."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

# Every hostile input must be answered within this time and memory.
TIMEOUT_S = 60
MEMORY_CAP = 4 << 30
# A model the checks accept must simulate "within seconds".
SIMULATE_TIMEOUT_S = 20


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


@dataclass
class Run:
    code: int
    out: str
    err: str


def irqlab(*args: str, cwd: Path | None = None, shell_tail: str | None = None) -> Run:
    """`python -m irqlab ARGS` (optionally piped into `shell_tail`)."""
    cmd = [sys.executable, "-m", "irqlab", *map(str, args)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("IRQLAB_DEBUG", None)
    if shell_tail:
        import shlex
        line = " ".join(shlex.quote(c) for c in cmd) + f" | {shell_tail}"
        p = subprocess.run(["bash", "-o", "pipefail", "-c", line], capture_output=True,
                           text=True, timeout=TIMEOUT_S, preexec_fn=_cap, cwd=cwd, env=env,
                           errors="replace")
    else:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S,
                           preexec_fn=_cap, cwd=cwd, env=env, errors="replace")
    return Run(p.returncode, p.stdout, p.stderr)


def assert_clean_error(r: Run, expect: str) -> None:
    """Exit 2; stderr is one error line (or a count line and one indented
    line per error) containing `expect`; no traceback, no raw escapes."""
    assert r.code == 2, f"exit {r.code}, stderr: {r.err[-2000:]}"
    assert "Traceback" not in r.err and "panicked" not in r.err, r.err[-2000:]
    assert "\x1b" not in r.err and "\r" not in r.err and "\x00" not in r.err, repr(r.err)
    lines = r.err.splitlines()
    assert lines, "no message"
    if ": error: " in lines[0]:
        assert len(lines) == 1, r.err
    else:
        assert lines[0].endswith("errors:"), r.err
        assert all(x.startswith("  ") for x in lines[1:]), r.err
    assert len(r.err) < 20_000, "message too long"
    assert expect in r.err, f"expected {expect!r} in: {r.err}"


def irqlab_fork(*args: str, timeout: float = TIMEOUT_S) -> Run:
    """`irqlab ARGS` in a forked child of this (already imported) process:
    the same caps as `irqlab` without an interpreter start per case. A
    child past `timeout` is killed and the run reported as a timeout."""
    import signal
    import tempfile
    import time

    from irqlab import cli

    _preload()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # child
            code = 70
            try:
                _cap()
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
                sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
                os.environ.pop("IRQLAB_DEBUG", None)
                code = cli.main([str(a) for a in args])
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 1
            except BaseException:  # noqa: BLE001 -- reported as a traceback
                import traceback
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        deadline = time.monotonic() + timeout
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise TimeoutError(f"irqlab {' '.join(map(str, args))}: over {timeout} s")
            time.sleep(0.01)
        code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Run(code, out.read().decode(errors="replace"), err.read().decode(errors="replace"))


_LOADED = False


def _preload() -> None:
    """Import the command modules (and plotting) once, before forking."""
    global _LOADED
    if not _LOADED:
        from irqlab import cli, plots  # noqa: F401

        cli.build_parser()
        _LOADED = True
