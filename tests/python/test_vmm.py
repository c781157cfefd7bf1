"""The real VMM from Python: ``irqlab reproduce vint-kvm-rtt --quick`` runs the
three schemes on KVM next to the simulator (skipped, with the kernel's
reason, where /dev/kvm cannot be used)."""

from __future__ import annotations

from pathlib import Path

import pytest

from irqlab import experiments, vmm


def test_vint_kvm_rtt_runs_on_the_real_vmm(tmp_path: Path) -> None:
    why = vmm.kvm_unavailable()
    if why is not None:
        pytest.skip(f"KVM unavailable: {why}")
    r = experiments.run("vint-kvm-rtt", tmp_path, quick=True)
    kvm = r.data["kvm"]
    assert set(kvm) == {"Baseline", "Baseline_1ms", "vINT"}
    for scheme, k in kvm.items():
        # Every request is accounted: injected, dropped or held by vINT.
        assert k["received"] == k["injected"] + k["dropped"] + k["pending"], scheme
        assert k["lost"] * 100 <= k["requests"], scheme  # replies within 100 ms of the end
        assert k["replies"] > 1000, scheme
    assert kvm["vINT"]["pseudo_slices"] > 0
    assert kvm["Baseline"]["pseudo_slices"] == 0
    accounting = [c for c in r.checks if c.claim.startswith("KVM: every request")]
    assert accounting and accounting[0].holds
    assert "vINT" in r.table and Path(r.files[0]).exists()


def test_kvm_unavailable_gives_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    def denied(path: str, flags: int) -> int:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(vmm.os, "open", denied)
    assert vmm.kvm_unavailable() == "open /dev/kvm: Permission denied"
