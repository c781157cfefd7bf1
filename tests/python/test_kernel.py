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
