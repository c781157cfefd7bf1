//! The VMM's host-side threads besides the VCPU runners: the top half's
//! handler of each device fd (the physical ISR, VINT §III), the vINT
//! releaser of held events (§V-B), and the watchdog on guest progress.
//!
//! Design principle: none of them runs the guest or holds a lock while
//! calling into the runtime (waking a pseudo-VCPU thread happens after the
//! device lock is released).

use std::sync::atomic::Ordering;
use std::time::Duration;

use irqlab_core::Nanos;
use irqlab_rt::RtHandle;

use crate::devices::Backing;
use crate::error::VmmError;
use crate::machine::{lock, lock_dev, Shared};
use crate::vint::Counter;

/// The top half's handler for device `d` (the physical ISR): drain the fd,
/// accept each event. Returns the number of events and whether any was
/// injected.
pub(crate) fn physical_isr(sh: &Shared, d: usize, arrival: Nanos) -> (u64, bool) {
    let mut st = lock_dev(&sh.devs[d]);
    let mut n = 0;
    let mut injected = false;
    let held_before = st.held.len();
    match &sh.backings[d] {
        Backing::Udp(s) => {
            let mut buf = [0u8; 2048];
            while let Ok((len, peer)) = s.recv_from(&mut buf) {
                injected |= st.accept(&sh.vm, d, &buf[..len], arrival, Some(peer));
                n += 1;
            }
        }
        Backing::Timer(fd) => {
            use std::os::fd::AsRawFd;
            let mut exp = 0u64;
            // SAFETY: reading 8 bytes into a u64 from our timerfd.
            let r = unsafe {
                libc::read(
                    fd.as_raw_fd(),
                    std::ptr::addr_of_mut!(exp).cast(),
                    std::mem::size_of::<u64>(),
                )
            };
            if r == 8 {
                for _ in 0..exp {
                    injected |= st.accept(&sh.vm, d, &[], arrival, None);
                    n += 1;
                }
            }
        }
    }
    // The releaser sleeps until the counter's next credit whenever events
    // are held; it needs waking only when the first one is held (a futex
    // wake per storm event cost the top half more than the event itself).
    if held_before == 0 && !st.held.is_empty() {
        if let Some(t) = sh.releaser.get() {
            t.unpark();
        }
    }
    (n, injected)
}

/// vINT: inject held events when their counter has credits again (VINT
/// §V-B) and wake the pseudo-VCPU thread. Runs at the top half's priority.
pub(crate) fn releaser(sh: &Shared, rt: &RtHandle) {
    let _ = irqlab_rt::sys::set_fifo(0, 95);
    while !sh.stopping() {
        let now = irqlab_rt::sys::now();
        let mut next = now + Nanos::from_ms(5);
        for (d, m) in sh.devs.iter().enumerate() {
            let mut st = lock_dev(m);
            if st.counter.is_none() {
                continue;
            }
            let n = st.release_held(&sh.vm, d, now);
            if !st.held.is_empty() {
                if let Some(t) = st.counter.as_ref().and_then(Counter::next_return) {
                    next = next.min(t);
                }
            }
            drop(st);
            if let (true, Some(t)) = (n > 0, sh.pseudo[d].get()) {
                rt.wake(*t);
                sh.reschedule();
            }
        }
        let wait = next
            .saturating_sub(irqlab_rt::sys::now())
            .max(Nanos::from_us(20));
        std::thread::park_timeout(Duration::from_nanos(wait.0.min(5_000_000)));
    }
}

/// No progress this long on injected events: raise the device again.
const RERAISE: Nanos = Nanos::from_ms(20);

/// Stops a guest that makes no progress: boot not finished, or injected
/// events not completed, for `limit`.
pub(crate) fn watchdog(sh: &Shared, limit: Nanos, reraise: bool) {
    let start = irqlab_rt::sys::now();
    let mut outstanding_since: Vec<Option<Nanos>> = vec![None; sh.devs.len()];
    let mut reraised: Vec<Nanos> = vec![Nanos::ZERO; sh.devs.len()];
    while !sh.stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(10));
        let now = irqlab_rt::sys::now();
        let mut hang = None;
        // A device whose injected events made no progress for RERAISE:
        // raise its vector again and kick the runner out of KVM_RUN, so
        // that KVM re-enters the guest and delivers what is pending (an
        // MSI injected while the guest had interrupts disabled waits for
        // a VM exit here, docs/vmm.md). Harmless otherwise: a vector
        // already pending merges, and an extra ISR finds nothing new.
        for (d, m) in sh.devs.iter().enumerate() {
            let stale = {
                let st = lock_dev(m);
                st.injected > st.completed
                    && outstanding_since[d]
                        .is_some_and(|t| now.saturating_sub(t.max(st.last_progress)) > RERAISE)
            };
            if reraise
                && stale
                && now.saturating_sub(reraised[d]) > RERAISE
                && sh.ready.load(Ordering::SeqCst)
            {
                reraised[d] = now;
                sh.reraises.fetch_add(1, Ordering::Relaxed);
                let _ = sh.vm.raise(d);
                sh.kick_all();
            }
        }
        if !sh.ready.load(Ordering::SeqCst) && now.saturating_sub(start) > limit {
            hang = Some("boot did not finish".to_string());
        }
        for (d, m) in sh.devs.iter().enumerate() {
            let st = lock_dev(m);
            let waiting = st.injected > st.completed;
            let since = match outstanding_since[d] {
                Some(t) if waiting => Some(t.max(st.last_progress)),
                None if waiting => Some(now),
                _ => None,
            };
            outstanding_since[d] = since;
            if let Some(t) = since {
                if now.saturating_sub(t) > limit {
                    hang = Some(format!(
                        "{} of device {} ({}) injected, none completed",
                        st.injected - st.completed,
                        d,
                        st.name
                    ));
                }
            }
        }
        if let Some(what) = hang {
            *lock(&sh.hang) = Some((what, limit.0 / 1_000_000));
            sh.kick_all();
            // The VCPU thread answers with the guest's RIP; if it cannot
            // (parked for good), fail without it.
            std::thread::sleep(Duration::from_millis(500));
            if let Some((what, ms)) = lock(&sh.hang).take() {
                sh.fail(VmmError::GuestHung {
                    what,
                    ms,
                    rip: None,
                });
            }
            return;
        }
    }
}

/// What a stalled guest looks like, for the watchdog's error: RFLAGS.IF,
/// the LAPIC's pending (IRR) and in-service (ISR) vectors, TPR and PPR,
/// KVM's pending-event state, and each device's ring and guest counters.
/// Read by the thread holding the VCPU (docs/vmm.md, the storm stall).
pub(crate) fn hang_state(sh: &Shared, vcpu: &kvm_ioctls::VcpuFd) -> String {
    use crate::abi::{dev, DV_CONS, DV_DSR, DV_ISR, DV_PROD};
    let mut out = Vec::new();
    if let Ok(r) = vcpu.get_regs() {
        out.push(format!("IF={}", (r.rflags >> 9) & 1));
    }
    if let Ok(l) = vcpu.get_lapic() {
        let word = |off: usize| {
            (0..4).fold(0u32, |a, i| {
                a | (u32::from(l.regs[off + i] as u8) << (8 * i))
            })
        };
        let vectors = |base: usize| {
            (0..8)
                .flat_map(|k| {
                    let w = word(base + 16 * k);
                    (0..32)
                        .filter(move |b| w >> b & 1 == 1)
                        .map(move |b| k * 32 + b)
                })
                .map(|v| format!("{v:#x}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        out.push(format!(
            "IRR=[{}] ISR=[{}] TPR={:#x} PPR={:#x}",
            vectors(0x200),
            vectors(0x100),
            word(0x80),
            word(0xa0)
        ));
    }
    if let Ok(e) = vcpu.get_vcpu_events() {
        out.push(format!(
            "events: irq injected={} nr={:#x} shadow={}",
            e.interrupt.injected, e.interrupt.nr, e.interrupt.shadow
        ));
    }
    for (d, m) in sh.devs.iter().enumerate() {
        let st = lock_dev(m);
        let g = |w| sh.vm.load(dev(d, w)).unwrap_or(u64::MAX);
        out.push(format!(
            "dev{d}: injected={} completed={} prod={} guest cons={} isr={} dsr={}",
            st.injected,
            st.completed,
            g(DV_PROD),
            g(DV_CONS),
            g(DV_ISR),
            g(DV_DSR)
        ));
    }
    out.join("; ")
}
