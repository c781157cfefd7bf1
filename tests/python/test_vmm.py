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
    assert "every request answered or counted lost (received = injected + dropped + " \
        "pending): yes" in r.table
    # every claim breaks under its falsifier (the other scheme's real run)
    assert all(c.falsifier is not None and c.falsifier.holds is False for c in r.checks)
    assert "vINT" in r.table and Path(r.files[0]).exists()


def test_kvm_unavailable_gives_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    def denied(path: str, flags: int) -> int:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(vmm.os, "open", denied)
    assert vmm.kvm_unavailable() == "open /dev/kvm: Permission denied"


def test_irqlab_vmm_runs_a_hypervisor_model(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    from irqlab.cli import main

    why = vmm.kvm_unavailable()
    if why is not None:
        pytest.skip(f"KVM unavailable: {why}")
    shipped = Path(vmm.REPO / "python/irqlab/scenarios/vint-case.yaml")
    # The shipped case study has a periodic decoder task: refused by field.
    assert main(["vmm", str(shipped), "--seconds", "1"]) == 2
    assert "tasks[1]: mplayer: periodic guest tasks" in capsys.readouterr().err
    model = tmp_path / "case.yaml"
    model.write_text("".join(line for line in shipped.read_text().splitlines(keepends=True)
                             if "mplayer" not in line))
    out = tmp_path / "r.json"
    assert main(["vmm", str(model), "--seconds", "2", "--json", str(out)]) == 0
    assert "vnic" in capsys.readouterr().out
    import json

    r = json.loads(out.read_text())
    d, src = r["devices"][0], r["sources"][0]
    # Every datagram sent is received, and injected or dropped or held.
    assert src["sent"] > 1000 and d["received"] == src["sent"]
    assert d["received"] == d["injected"] + d["dropped"] + d["pending"]
    assert d["injected"] == d["completed"] + d["in_guest"]
    assert {s["name"] for s in r["servers"]} == {"vcpu0", "pseudo-vnic"}
