"""The real VMM (``crates/irqlab-vmm``) from Python: locate or build its
``irqlab-vmm`` binary, say why KVM cannot be used here, and run its
subcommands, each of which prints one JSON document.

Design principles: the VMM stays a separate process (it needs root, pins
SCHED_FIFO threads and owns /dev/kvm; a failure there must not take the
Python process with it); every reason for not running is returned as text,
never swallowed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def kvm_unavailable() -> str | None:
    """Why /dev/kvm cannot be used by this process, or None."""
    try:
        fd = os.open("/dev/kvm", os.O_RDWR | os.O_CLOEXEC)
    except OSError as e:
        return f"open /dev/kvm: {e.strerror}"
    os.close(fd)
    return None


def binary() -> Path:
    """The ``irqlab-vmm`` binary: ``$IRQLAB_VMM``, on PATH, or built with
    cargo in this repository (release profile)."""
    env = os.environ.get("IRQLAB_VMM")
    if env:
        return Path(env)
    found = shutil.which("irqlab-vmm")
    if found:
        return Path(found)
    cargo = shutil.which("cargo")
    if cargo is None or not (REPO / "crates" / "irqlab-vmm").is_dir():
        raise RuntimeError("irqlab-vmm not found: set IRQLAB_VMM or install cargo")
    subprocess.run([cargo, "build", "--release", "-q", "-p", "irqlab-vmm", "--bin", "irqlab-vmm"],
                   cwd=REPO, check=True)
    return REPO / "target" / "release" / "irqlab-vmm"


class VmmFailed(RuntimeError):
    """``irqlab-vmm`` exited with an error; ``message`` is its own one."""

    def __init__(self, args: tuple[str, ...], message: str) -> None:
        super().__init__(f"irqlab-vmm {' '.join(args)}: {message}")
        self.message = message


def run(*args: str, timeout: float = 300.0) -> dict[str, Any]:
    """Run ``irqlab-vmm ARGS`` and parse its JSON output."""
    p = subprocess.run([str(binary()), *args], capture_output=True, text=True, timeout=timeout,
                       check=False)
    if p.returncode != 0:
        raise VmmFailed(args, p.stderr.strip().removeprefix("irqlab-vmm: "))
    out: dict[str, Any] = json.loads(p.stdout)
    return out


def switch_overhead(default: int) -> int:
    """The simulator's VCPU switch overhead for an experiment on this machine:
    the VM exit round trip measured by the guest (``irqlab-vmm exits``), or
    ``default`` (the published estimate) when KVM cannot be used here."""
    if kvm_unavailable() is not None:
        return default
    return round(run("exits")["exit_round_trip_ns"])
