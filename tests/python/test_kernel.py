"""The irqlab kernel (kernel/) under QEMU: boot, exception reports and the
watchdog. Each test boots the kernel with `-kernel` (PVH) under TCG, reads
its serial console, and asserts on the lines it prints and on its exit
status (isa-debug-exit: 33 pass, 35 fail). Skipped, with the reason, only
when qemu-system-x86_64 is missing (the Makefile installs it)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KDIR = ROOT / "kernel"
KERNEL = KDIR / "target" / "x86_64-unknown-linux-gnu" / "release" / "irqlab-kernel"
QEMU = shutil.which("qemu-system-x86_64")
PASS, FAIL = 33, 35

pytestmark = pytest.mark.skipif(
    QEMU is None, reason="qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)")


@pytest.fixture(scope="module")
def kernel() -> Path:
    # From kernel/ so that kernel/.cargo/config.toml (the link flags) applies.
    subprocess.run(["cargo", "build", "--release", "-q", "--target", "x86_64-unknown-linux-gnu"],
                   cwd=KDIR, check=True)
    return KERNEL


def boot(kernel: Path, append: str, extra: list[str] | None = None,
         timeout: float = 60) -> tuple[int, str]:
    """Boots the kernel; returns QEMU's exit status and the serial output."""
    assert QEMU is not None
    cmd = ["timeout", "--kill-after=5", str(timeout), QEMU, "-accel", "tcg", "-display", "none",
           "-serial", "stdio", "-monitor", "none", "-no-reboot", "-m", "128",
           "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
           "-kernel", str(kernel), "-append", append, *(extra or [])]
    p = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
    return p.returncode, p.stdout + p.stderr


def test_boots_calibrates_and_allocates(kernel: Path) -> None:
    rc, out = boot(kernel, "run=boot")
    assert rc == PASS, out
    assert 'cmdline "run=boot"' in out
    assert "heap: vec sum 332833500" in out, out  # sum of i*i for i < 1000


def test_exception_reports_vector_rip_and_faulting_address(kernel: Path) -> None:
    rc, out = boot(kernel, "selftest=pagefault")
    assert rc == FAIL, out
    assert "EXCEPTION vector=14 (#PF page fault)" in out, out
    assert "cr2=0x1000000000" in out, out


def test_watchdog_ends_a_hung_kernel(kernel: Path) -> None:
    rc, out = boot(kernel, "selftest=hang watchdog_ms=300")
    assert rc == FAIL, out
    assert "WATCHDOG: still running at" in out, out


ICOUNT = ["-icount", "shift=2,sleep=off"]  # emulated time, deterministic
TOLERANCE_NS = 50_000  # enforcement granularity (kernel/src/run.rs BUDGET_TOLERANCE_NS)


def records(out: str, tag: str) -> list[dict[str, str]]:
    """The `tag key=value ...` lines the kernel printed."""
    rows = []
    for line in out.splitlines():
        if line.startswith(tag + " "):
            rows.append(dict(w.split("=", 1) for w in line.split()[1:] if "=" in w))
    return rows


def budget_violations(out: str) -> list[str]:
    """Main VCPUs whose guest-measured CPU time in some period exceeds C
    (plus the tolerance), or in some window of length T exceeds 2C (a
    periodic task run back to back), or that got under 90% of C in a period
    although CPU-bound."""
    bad = []
    for v in records(out, "vcpu"):
        c = int(v["budget_ns"])
        if int(v["period_max_ns"]) > c + TOLERANCE_NS:
            bad.append(f"{v['name']}: {v['period_max_ns']} ns in a period, budget {c}")
        if int(v["window_max_ns"]) > 2 * c + TOLERANCE_NS:
            bad.append(f"{v['name']}: {v['window_max_ns']} ns in a window of one period")
        if int(v["period_min_ns"]) * 10 < 9 * c:
            bad.append(f"{v['name']}: only {v['period_min_ns']} ns in a period, budget {c}")
    return bad


def test_main_vcpus_never_exceed_their_budget_per_period(kernel: Path) -> None:
    rc, out = boot(kernel, "run=sched duration_ms=300", ICOUNT)
    assert rc == PASS, out
    vcpus = records(out, "vcpu")
    assert [v["name"] for v in vcpus] == ["main0", "main1", "main2"], out
    # 300 ms of 10, 20 and 50 ms periods, whole periods only
    assert [int(v["periods"]) for v in vcpus] == [30, 15, 6], out
    assert budget_violations(out) == [], out
    assert "fpu_errors=0" in out and "core_errors=0" in out, out


def test_budget_check_fails_without_enforcement(kernel: Path) -> None:
    """The falsifier: the timer not armed at the core's next_update."""
    rc, out = boot(kernel, "run=sched duration_ms=300 falsify=no-enforce", ICOUNT)
    assert rc == FAIL, out
    bad = budget_violations(out)
    assert any("main0" in b and "in a period" in b for b in bad), out
