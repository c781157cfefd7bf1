//! Who runs the guest's VCPUs, and the VM-exit handling.
//!
//! What it is: VCPU 0 is one KVM VCPU fd behind a mutex (the "token"). Its
//! own thread runs in the VCPU's server; each vINT-managed virtual
//! interrupt has a pseudo-VCPU thread in the pseudo-VCPU's server (VINT
//! §V). Whoever holds the token runs `KVM_RUN` in slices, and who should
//! is `Shared::wanted` (VINT §V-B, nested handling, Figure 3):
//! * the VCPU thread runs while no pseudo-VCPU is wanted, until a signal
//!   (the supervisor's park: out of budget; a kick) interrupts it;
//! * a pseudo-VCPU thread, woken by an injection of its interrupt, becomes
//!   ready and runs the guest whenever it is the one wanted -- the most
//!   urgent ready pseudo-VCPU with an ISR pending, else the most urgent one
//!   whose interrupt is not completed (`PORT_DONE`, the end of ISR + DSR).
//!   A more urgent interrupt's pseudo-VCPU thus takes the guest over in
//!   the middle of a less urgent one's handling (its ISR and DSR nest in
//!   the guest) and hands it back when done; every stretch is charged to
//!   the budget of the thread that ran it, at its priority, also while
//!   the VCPU's own server is out of budget. A pseudo-VCPU parked out of
//!   budget is not ready; the next one wanted (or the VCPU) continues.
//!   The wanted one is rechecked after every exit (the split irqchip's EOI
//!   exits make that the end of each ISR) and at each injection.
//! * Another VCPU (an AP) has its own fd and thread in its own server and
//!   no pseudo-VCPUs; the guest starts it (`PORT_START_AP`).
//!
//! Signals: every kind of thread blocks the park and kick signals; KVM runs
//! the guest with an empty mask (`KVM_SET_SIGNAL_MASK`), so a signal
//! interrupts `KVM_RUN` (`EINTR`) but is never delivered to a handler while
//! the token is held. After releasing the token the thread consumes the
//! pending signals and parks cooperatively (`TaskCtx::checkpoint`) if its
//! server wants it. A parked thread thus never holds the guest.
//!
//! Design principle: the exit handling is one function used by every
//! runner; errors carry the guest RIP.

use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use irqlab_rt::TaskCtx;
use kvm_ioctls::{VcpuExit, VcpuFd};

use crate::abi::*;
use crate::error::{exception_name, VmmError};
use crate::machine::{
    kick_signal, lock, lock_dev, RunnerSlice, Shared, RUNNER_NONE, RUNNER_VCPU, SLICES,
};
use crate::vm::tsc_sample;

fn guarded_signals() -> libc::sigset_t {
    // SAFETY: sigset manipulation on a local set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, irqlab_rt::park::park_signal());
        libc::sigaddset(&mut set, kick_signal());
        set
    }
}

/// Block the park and kick signals on the calling thread.
fn block_signals() {
    let set = guarded_signals();
    // SAFETY: a valid set; the old mask is not needed.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
}

/// Consume pending park/kick signals (their meaning is in the park cell and
/// the VMM's flags).
fn drain_signals() {
    let set = guarded_signals();
    let zero = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid set and timeout; no siginfo wanted.
    while unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &zero) } > 0 {}
}

/// `KVM_SET_SIGNAL_MASK`: run the guest with no signal blocked.
pub(crate) fn set_run_sigmask(vcpu: &VcpuFd) -> Result<(), VmmError> {
    #[repr(C)]
    struct Mask {
        len: u32,
        set: [u8; 8],
    }
    let m = Mask {
        len: 8,
        set: [0; 8],
    };
    const KVM_SET_SIGNAL_MASK: libc::c_ulong = 0x4004_ae8b; // _IOW(0xae, 0x8b, 4)
                                                            // SAFETY: the ioctl reads `len` and `len` bytes of the set from `m`.
    let r = unsafe { libc::ioctl(vcpu.as_raw_fd(), KVM_SET_SIGNAL_MASK as _, &m) };
    if r < 0 {
        return Err(VmmError::io("KVM_SET_SIGNAL_MASK")(
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}

#[derive(Copy, Clone, PartialEq, Eq)]
enum Role {
    Vcpu,
    Pseudo(usize),
    /// VCPU `i + 1` (an AP), on its own thread.
    Ap(usize),
}

/// Wait on the handoff condition while `wait()` holds (1 ms timeouts: a
/// missed notification costs at most that).
fn wait_while(sh: &Shared, wait: impl Fn() -> bool) {
    let mut g = lock(&sh.handoff.0);
    while wait() && !sh.stopping() {
        g = sh
            .handoff
            .1
            .wait_timeout(g, Duration::from_millis(1))
            .map(|r| r.0)
            .unwrap_or_else(|e| e.into_inner().0);
    }
}

/// The VCPU's own thread (a managed thread of the VCPU server).
pub(crate) fn vcpu_body(sh: &Arc<Shared>, ctx: &TaskCtx) {
    block_signals();
    match tsc_sample(&lock(&sh.vcpu)) {
        Ok(s) => lock(&sh.tsc_samples).push(s),
        Err(e) => sh.fail(e),
    }
    while !sh.stopping() {
        // A pseudo-VCPU that wants the guest goes first.
        wait_while(sh, || sh.wanted().is_some());
        if let Err(e) = slice(sh, Role::Vcpu) {
            sh.fail(e);
            break;
        }
        after_slice(sh, ctx, true);
    }
    if let Ok(s) = tsc_sample(&lock(&sh.vcpu)) {
        lock(&sh.tsc_samples).push(s);
    }
    sh.stop.store(true, Ordering::SeqCst);
}

/// The thread of device `d`'s pseudo-VCPU (a managed thread of its
/// server): woken by an injection, it runs the guest whenever `wanted`
/// names it, until every injected instance of its interrupt is completed
/// (VINT §V-B; a more urgent pending interrupt's pseudo-VCPU takes the
/// guest over in between, Figure 3).
pub(crate) fn pseudo_body(sh: &Arc<Shared>, ctx: &TaskCtx, d: usize) {
    block_signals();
    while ctx.wait_wake() {
        while !sh.stopping() && sh.outstanding(d) > 0 {
            sh.active[d].store(true, Ordering::SeqCst);
            let asked = irqlab_rt::sys::now().0;
            sh.reschedule();
            wait_while(sh, || sh.wanted() != Some(d) && sh.outstanding(d) > 0);
            if sh.wanted() != Some(d) {
                continue;
            }
            let r = slice(sh, Role::Pseudo(d));
            let mut h = lock(&sh.handoffs);
            if h.len() < 1 << 16 {
                h.push((asked, sh.token_ns.load(Ordering::SeqCst)));
            }
            drop(h);
            if let Err(e) = r {
                sh.fail(e);
                return;
            }
            if let Ok(false) = r {
                continue; // handed over: no signal, no park to take
            }
            // Interrupted by a signal: perhaps the supervisor's park (out
            // of budget). Not ready while parked: the VCPU (or another
            // pseudo-VCPU) goes on meanwhile.
            sh.active[d].store(false, Ordering::SeqCst);
            sh.handoff.1.notify_all();
            after_slice(sh, ctx, false);
        }
        sh.active[d].store(false, Ordering::SeqCst);
        sh.handoff.1.notify_all();
    }
}

/// The thread of AP `i` (VCPU `i + 1`, a managed thread of its own
/// server): waits for the guest's start request (`PORT_START_AP`, on VCPU
/// 0), starts the AP there (`vm::start_ap`) and runs it like VCPU 0's own
/// thread (no pseudo-VCPUs: managed interrupts go to VCPU 0).
pub(crate) fn ap_body(sh: &Arc<Shared>, ctx: &TaskCtx, i: usize) {
    block_signals();
    let Some(ap) = sh.aps.get(i) else { return };
    let entry = loop {
        if sh.stopping() {
            return;
        }
        match ap.entry.load(Ordering::SeqCst) {
            0 => std::thread::sleep(Duration::from_millis(1)),
            e => break e,
        }
    };
    if let Err(e) = crate::vm::start_ap(&lock(&ap.fd), entry, AP_STACK_TOP - 8) {
        sh.fail(e);
        return;
    }
    while !sh.stopping() {
        if let Err(e) = slice(sh, Role::Ap(i)) {
            sh.fail(e);
            break;
        }
        after_slice(sh, ctx, false);
    }
}

fn after_slice(sh: &Shared, ctx: &TaskCtx, log_park: bool) {
    drain_signals();
    let t0 = irqlab_rt::sys::now();
    ctx.checkpoint();
    let t1 = irqlab_rt::sys::now();
    if log_park && t1.0 - t0.0 > 20_000 {
        let mut p = lock(&sh.parks);
        if p.len() < 1 << 16 {
            p.push((t0.0, t1.0));
        }
    }
}

fn rip(vcpu: &VcpuFd) -> u64 {
    vcpu.get_regs().map(|r| r.rip).unwrap_or(u64::MAX)
}

/// What one exit asks for.
enum Step {
    Go,
    Done(usize),
    /// `KVM_RUN` was interrupted (park or kick): give the token back.
    Yield,
    Fail(Box<dyn FnOnce(u64) -> VmmError>),
}

/// Hold the token and run the guest until the role's reason to stop.
/// `Ok(true)`: `KVM_RUN` was interrupted by a signal (a park or a kick);
/// `Ok(false)`: the guest was handed over or the role has nothing to do.
fn slice(sh: &Shared, role: Role) -> Result<bool, VmmError> {
    if let Role::Ap(i) = role {
        let Some(ap) = sh.aps.get(i) else {
            return Ok(false);
        };
        let mut fd = lock(&ap.fd);
        ap.tid.store(irqlab_rt::sys::gettid(), Ordering::SeqCst);
        if !sh.stopping() {
            fd.set_kvm_immediate_exit(0);
        }
        let t0 = irqlab_rt::sys::now();
        let r = run(sh, &mut fd, role);
        let t1 = irqlab_rt::sys::now();
        ap.tid.store(0, Ordering::SeqCst);
        drop(fd);
        log_slice(sh, i + 1, None, t0, t1);
        return r;
    }
    let mut vcpu = lock(&sh.vcpu);
    sh.runner_tid
        .store(irqlab_rt::sys::gettid(), Ordering::SeqCst);
    sh.runner.store(
        match role {
            Role::Pseudo(d) => d,
            _ => RUNNER_VCPU,
        },
        Ordering::SeqCst,
    );
    if !sh.stopping() {
        vcpu.set_kvm_immediate_exit(0);
    }
    if let Role::Pseudo(_) = role {
        sh.token_ns.store(irqlab_rt::sys::now().0, Ordering::SeqCst);
        sh.pseudo_slices.fetch_add(1, Ordering::Relaxed);
    }
    let t0 = irqlab_rt::sys::now();
    let r = run(sh, &mut vcpu, role);
    // The end before the guest is handed on (the next runner may preempt
    // this thread at once).
    let t1 = irqlab_rt::sys::now();
    sh.runner.store(RUNNER_NONE, Ordering::SeqCst);
    sh.runner_tid.store(0, Ordering::SeqCst);
    drop(vcpu);
    sh.handoff.1.notify_all();
    let pseudo = match role {
        Role::Pseudo(d) => Some(d),
        _ => None,
    };
    log_slice(sh, 0, pseudo, t0, t1);
    r
}

/// Log a stretch `[t0, t1)` of guest execution.
fn log_slice(
    sh: &Shared,
    vcpu: usize,
    pseudo: Option<usize>,
    t0: irqlab_core::Nanos,
    t1: irqlab_core::Nanos,
) {
    let mut l = lock(&sh.slices);
    if l.len() < SLICES && t1 > t0 {
        l.push(RunnerSlice {
            vcpu,
            pseudo,
            start_ns: t0.0,
            end_ns: t1.0,
        });
    }
}

fn run(sh: &Shared, vcpu: &mut VcpuFd, role: Role) -> Result<bool, VmmError> {
    loop {
        if let Some((what, ms)) = lock(&sh.hang).take() {
            let rip = Some(rip(vcpu));
            let what = format!("{what} [{}]", crate::host::hang_state(sh, vcpu));
            return Err(VmmError::GuestHung { what, ms, rip });
        }
        if sh.stopping() {
            return Ok(false);
        }
        let keep = match role {
            Role::Vcpu => sh.wanted().is_none(),
            Role::Pseudo(d) => sh.wanted() == Some(d),
            Role::Ap(_) => true,
        };
        if !keep {
            return Ok(false);
        }
        match exit(sh, vcpu) {
            Step::Go => {}
            Step::Yield => return Ok(true),
            Step::Done(d) => {
                sh.exits_done.fetch_add(1, Ordering::Relaxed);
                let (Some(m), Some(b)) = (sh.devs.get(d), sh.backings.get(d)) else {
                    let rip = rip(vcpu);
                    return Err(VmmError::Unhandled {
                        what: format!("completion for device {d}, which does not exist"),
                        rip,
                    });
                };
                lock_dev(m).complete(&sh.vm, d, b)?;
            }
            Step::Fail(f) => {
                let rip = rip(vcpu);
                return Err(f(rip));
            }
        }
    }
}

/// Run the guest once and classify the exit.
fn exit(sh: &Shared, vcpu: &mut VcpuFd) -> Step {
    match vcpu.run() {
        Ok(VcpuExit::IoOut(port, data)) => {
            sh.exits_io.fetch_add(1, Ordering::Relaxed);
            let word = data
                .iter()
                .rev()
                .fold(0u32, |a, &b| (a << 8) | u32::from(b));
            match port {
                PORT_CONSOLE => {
                    let mut c = lock(&sh.console);
                    c.extend_from_slice(data);
                    if c.len() > sh.console_limit {
                        let limit = sh.console_limit;
                        Step::Fail(Box::new(move |rip| VmmError::ConsoleFlood { limit, rip }))
                    } else {
                        Step::Go
                    }
                }
                PORT_DONE => Step::Done(word as usize),
                PORT_PING => Step::Go,
                PORT_START_AP => {
                    // The guest (VCPU 0) starts its AP at S_AP_ENTRY.
                    let entry = sh.vm.load(shared(S_AP_ENTRY)).unwrap_or(0);
                    match sh.aps.first() {
                        Some(ap) if entry != 0 => {
                            ap.entry.store(entry, Ordering::SeqCst);
                            Step::Go
                        }
                        _ => Step::Fail(Box::new(move |rip| VmmError::Unhandled {
                            what: format!(
                                "AP start at {entry:#x} (the VM has no second VCPU, or no entry)"
                            ),
                            rip,
                        })),
                    }
                }
                PORT_AP_READY => {
                    // Interrupts routed to the AP before its LAPIC was
                    // enabled were discarded (as at PORT_READY).
                    if let Some(ap) = sh.aps.first() {
                        ap.ready.store(true, Ordering::SeqCst);
                    }
                    for (d, l) in sh.vm.lines.iter().enumerate() {
                        if l.dest != 0
                            && sh.devs.get(d).is_some_and(|m| lock_dev(m).prod > 0)
                            && sh.vm.raise(d).is_err()
                        {
                            if let Some(m) = sh.devs.get(d) {
                                lock_dev(m).inject_errors += 1;
                            }
                        }
                    }
                    Step::Go
                }
                PORT_READY => {
                    sh.ready.store(true, Ordering::SeqCst);
                    // Timer devices start now: a storm during the boot
                    // (interrupts disabled, the work loop calibrating)
                    // slowed the guest down and once stopped it.
                    for (b, p) in sh.backings.iter().zip(&sh.timers) {
                        if let Some(Err(e)) = p.map(|p| b.arm(p)) {
                            return Step::Fail(Box::new(move |_| e));
                        }
                    }
                    // An MSI that arrived before the guest enabled its LAPIC
                    // was discarded (a software-disabled LAPIC accepts no
                    // fixed interrupts), and a full ring injects no more:
                    // the guest would never see those events. Raise each
                    // device with published descriptors once more.
                    for (d, m) in sh.devs.iter().enumerate() {
                        if lock_dev(m).prod > 0 && sh.vm.raise(d).is_err() {
                            lock_dev(m).inject_errors += 1;
                        }
                    }
                    Step::Go
                }
                PORT_PANIC => {
                    let w = |i| sh.vm.load(shared(i)).unwrap_or(u64::MAX);
                    let (vector, error, rip) = (w(S_PANIC_VEC), w(S_PANIC_ERR), w(S_PANIC_RIP));
                    Step::Fail(Box::new(move |_| VmmError::GuestException {
                        vector,
                        name: exception_name(vector),
                        error,
                        rip,
                    }))
                }
                PORT_EXIT => Step::Fail(Box::new(move |_| VmmError::GuestExit { code: word })),
                p => Step::Fail(Box::new(move |rip| VmmError::Unhandled {
                    what: format!("port write {p:#x} = {word:#x}"),
                    rip,
                })),
            }
        }
        Ok(VcpuExit::IoIn(port, _)) => Step::Fail(Box::new(move |rip| VmmError::Unhandled {
            what: format!("port read {port:#x}"),
            rip,
        })),
        Ok(VcpuExit::MmioRead(a, _)) | Ok(VcpuExit::MmioWrite(a, _)) => {
            Step::Fail(Box::new(move |rip| VmmError::Unhandled {
                what: format!("MMIO access at {a:#x} (no memory or device there)"),
                rip,
            }))
        }
        Ok(VcpuExit::Shutdown) => Step::Fail(Box::new(|rip| VmmError::TripleFault { rip })),
        Ok(VcpuExit::FailEntry(reason, _)) => {
            Step::Fail(Box::new(move |rip| VmmError::FailEntry { reason, rip }))
        }
        Ok(VcpuExit::InternalError) => {
            let run = vcpu.get_kvm_run();
            // SAFETY: the exit reason says the `internal` member is valid.
            let (suberror, data) = unsafe {
                let i = &run.__bindgen_anon_1.internal;
                let n = (i.ndata as usize).min(i.data.len());
                (i.suberror, i.data[..n].to_vec())
            };
            Step::Fail(Box::new(move |rip| VmmError::InternalError {
                suberror,
                data,
                rip,
            }))
        }
        Ok(VcpuExit::IoapicEoi(v)) => {
            // Split irqchip: the guest's LAPIC EOI of a device vector (its
            // ISR ended, VINT §V-B). The next `wanted` sees DV_SEEN.
            if let Some(c) = v
                .checked_sub(VEC_BASE)
                .and_then(|d| sh.eois.get(d as usize))
            {
                c.fetch_add(1, Ordering::Relaxed);
            }
            Step::Go
        }
        Ok(VcpuExit::Intr) => {
            sh.exits_intr.fetch_add(1, Ordering::Relaxed);
            Step::Yield
        }
        Ok(other) => {
            let what = format!("VM exit {other:?}");
            Step::Fail(Box::new(move |rip| VmmError::Unhandled { what, rip }))
        }
        Err(e) if e.errno() == libc::EINTR || e.errno() == libc::EAGAIN => {
            sh.exits_intr.fetch_add(1, Ordering::Relaxed);
            Step::Yield
        }
        Err(e) => {
            let err = VmmError::kvm("KVM_RUN")(e);
            let msg = err.to_string();
            Step::Fail(Box::new(move |rip| VmmError::Unhandled { what: msg, rip }))
        }
    }
}
