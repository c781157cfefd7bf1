//! Shared helpers of the VMM tests: skip (with the kernel's reason) where
//! /dev/kvm is absent or not permitted; start a VMM with test defaults.
#![allow(dead_code)]

use std::sync::{Mutex, MutexGuard};
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
        let _serial = common::serial();
        if let Some(why) = common::kvm_unavailable() {
            irqlab_rt::skipped!("{why}");
            return;
        }
    };
}

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// One VMM at a time per test binary (they compete for the same CPU at
/// SCHED_FIFO priorities).
pub fn serial() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// The names of this process's live threads that the VMM or its runtime
/// started (every one is named `irqlab-*`: supervisor, top half, VCPU and
/// pseudo-VCPU threads, the vINT releaser, the watchdog).
pub fn vmm_threads() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
        .map(|n| n.trim().to_string())
        .filter(|n| n.starts_with("irqlab-"))
        .collect()
}

/// A host stall of 2 ms or more during the run (see
/// `VmmReport::host_stall_ns`): timing-dependent checks cannot judge it.
/// The reason names which clock saw it (the supervisor's timer or an
/// unmanaged device's top half), so a skip can be told from a slow path.
pub fn host_stall(r: &irqlab_vmm::VmmReport) -> Option<String> {
    let ns = r.host_stall_ns().filter(|&m| m >= 2_000_000)?;
    let timer = r.runtime.as_ref().and_then(|rt| {
        rt.supervisors
            .iter()
            .filter_map(|s| s.timer_latency.max)
            .max()
    });
    let top: Vec<_> = r
        .devices
        .iter()
        .filter(|d| !d.managed)
        .map(|d| (d.name.as_str(), d.to_inject.max))
        .collect();
    Some(format!(
        "the host stalled the runtime for {ns} ns (supervisor timer latency max {timer:?} ns; \
         unmanaged top half to injection max {top:?} ns)"
    ))
}

/// Wait until device `d` completed `n` events. On a timeout stop the VM:
/// `None` (the test skips, saying why) if the host stalled, else fail with
/// the report.
pub fn wait_completed(vmm: Vmm, d: usize, n: u64, secs: u64) -> Option<Vmm> {
    wait_until(vmm, d, n, secs, |c| c == n)
}

/// As `wait_completed`, for at least `n` completions.
pub fn wait_completed_at_least(vmm: Vmm, d: usize, n: u64, secs: u64) -> Option<Vmm> {
    wait_until(vmm, d, n, secs, |c| c >= n)
}

fn wait_until(vmm: Vmm, d: usize, n: u64, secs: u64, done: impl Fn(u64) -> bool) -> Option<Vmm> {
    if vmm.wait_for(Duration::from_secs(secs), |v| done(v.completed(d))) {
        return Some(vmm);
    }
    let Stopped { report, error } = vmm.stop();
    if let (Some(why), None) = (host_stall(&report), &error) {
        irqlab_rt::skipped!("{why}");
        return None;
    }
    panic!(
        "device {d}: {n} completions expected; error {error:?}; devices {:?}; exits {:?}; parks {}",
        report.devices,
        report.exits,
        report.vcpu_parks.len()
    );
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
