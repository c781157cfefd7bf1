//! Shared helpers of the VMM tests: skip (with the kernel's reason) where
//! /dev/kvm is absent or not permitted; start a VMM with test defaults.
#![allow(dead_code)]

use std::time::Duration;

use irqlab_vmm::{Stopped, Vmm, VmmConfig, VmmError};

/// `Some(reason)` if KVM cannot be used here (the test then skips).
pub fn kvm_unavailable() -> Option<String> {
    match irqlab_vmm::vm::open_kvm() {
        Ok(_) => None,
        Err(e) => Some(e.to_string()),
    }
}

#[macro_export]
macro_rules! require_kvm {
    () => {
        if let Some(why) = common::kvm_unavailable() {
            eprintln!("SKIPPED: {why}");
            return;
        }
    };
}

pub fn start(cfg: VmmConfig) -> Vmm {
    let vmm = Vmm::start(cfg).expect("VMM starts");
    assert!(
        vmm.wait_for(Duration::from_secs(5), |v| v.ready()),
        "guest did not boot"
    );
    vmm
}

/// Stop and return the report, failing the test on a guest error.
pub fn stop_ok(vmm: Vmm) -> irqlab_vmm::VmmReport {
    let Stopped { report, error } = vmm.stop();
    if let Some(e) = error {
        panic!("guest failed: {e}\nconsole:\n{}", report.console);
    }
    report
}

pub fn stop_err(vmm: Vmm) -> (irqlab_vmm::VmmReport, VmmError) {
    let Stopped { report, error } = vmm.stop();
    let e =
        error.unwrap_or_else(|| panic!("expected a guest failure; console:\n{}", report.console));
    (report, e)
}
