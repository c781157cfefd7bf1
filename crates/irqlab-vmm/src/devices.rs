//! Virtual devices backed by host events: a paravirtual NIC on a UDP socket
//! (echo semantics: the guest's DSR completes a descriptor, the VMM sends
//! its payload back to the sender) and a tick device on a timerfd.
//!
//! What happens to a host event (VINT §III's physical interrupt, then the
//! virtual one): irqlab-rt's top half sees the fd ready and runs this
//! module's handler as an upcall (the "physical ISR", charged to the top
//! half); the handler copies the payload into the next free descriptor of
//! the device's ring in guest memory, publishes it (`DV_PROD`) and injects
//! the device's vector as an MSI into the in-kernel LAPIC. When the guest
//! reports completions on `PORT_DONE` (a VCPU exit), the VCPU thread
//! collects the guest's timestamps and, for the NIC, sends the reply.
//!
//! Accounting invariant (checked by the tests): every event read from the
//! fd is injected or dropped (ring full), `received = injected + dropped +
//! pending` with `pending` the events held by the host (none without vINT
//! deferral), and every injected descriptor is completed or still in the
//! guest at the stop.

use std::collections::VecDeque;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use irqlab_core::{LatencyRecorder, Nanos};
use serde::Serialize;

use crate::abi::*;
use crate::error::VmmError;
use crate::vm::Vm;

/// What backs a device.
#[derive(Clone, Debug)]
pub enum DeviceKind {
    /// A NIC: datagrams to this address are received by the guest, which
    /// echoes them (`127.0.0.1:0` picks a free port; see
    /// [`crate::Vmm::device_addr`]).
    Udp { bind: SocketAddr },
    /// A periodic tick (timerfd, CLOCK_MONOTONIC).
    Timer { period: Nanos },
}

#[derive(Clone, Debug)]
pub struct DeviceConfig {
    pub name: String,
    pub kind: DeviceKind,
}

pub(crate) enum Backing {
    Udp(UdpSocket),
    Timer(OwnedFd),
}

impl Backing {
    pub fn open(d: &DeviceConfig, field: &str) -> Result<Backing, VmmError> {
        match &d.kind {
            DeviceKind::Udp { bind } => {
                let s =
                    UdpSocket::bind(bind).map_err(VmmError::io(format!("{field}: bind {bind}")))?;
                s.set_nonblocking(true)
                    .map_err(VmmError::io("set_nonblocking"))?;
                Ok(Backing::Udp(s))
            }
            DeviceKind::Timer { period } => {
                if period.0 < 10_000 {
                    return Err(VmmError::config(
                        format!("{field}.period"),
                        format!("{} ns", period.0),
                        "a timer device period must be at least 10 us",
                    ));
                }
                // SAFETY: plain syscall; the fd is owned below.
                let fd = unsafe {
                    libc::timerfd_create(
                        libc::CLOCK_MONOTONIC,
                        libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
                    )
                };
                if fd < 0 {
                    return Err(VmmError::io("timerfd_create")(
                        std::io::Error::last_os_error(),
                    ));
                }
                // SAFETY: `fd` is a new descriptor nobody else owns.
                let fd = unsafe { OwnedFd::from_raw_fd(fd) };
                Ok(Backing::Timer(fd))
            }
        }
    }

    pub fn raw(&self) -> RawFd {
        match self {
            Backing::Udp(s) => s.as_raw_fd(),
            Backing::Timer(f) => f.as_raw_fd(),
        }
    }

    /// Arm a timer (first tick one period from now).
    pub fn arm(&self, period: Nanos) -> Result<(), VmmError> {
        if let Backing::Timer(fd) = self {
            let ts = libc::timespec {
                tv_sec: (period.0 / 1_000_000_000) as libc::time_t,
                tv_nsec: (period.0 % 1_000_000_000) as libc::c_long,
            };
            let spec = libc::itimerspec {
                it_interval: ts,
                it_value: ts,
            };
            // SAFETY: valid fd and itimerspec.
            if unsafe { libc::timerfd_settime(fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) } < 0
            {
                return Err(VmmError::io("timerfd_settime")(
                    std::io::Error::last_os_error(),
                ));
            }
        }
        Ok(())
    }
}

/// An event held by the host until the vINT counter has a credit.
#[derive(Clone, Debug)]
pub(crate) struct Held {
    pub payload: Vec<u8>,
    pub arrival: Nanos,
    pub peer: Option<SocketAddr>,
}

/// Most events held per managed device; more are dropped.
pub(crate) const HELD_MAX: usize = 4096;

/// Host-side record of an injected event, until the guest completes it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Meta {
    pub arrival: Nanos,
    pub inject: Nanos,
    pub peer: Option<SocketAddr>,
}

/// One completed event, host clock (ns, CLOCK_MONOTONIC) except the raw
/// guest TSC stamps, converted in the report.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct EventRecord {
    pub device: usize,
    pub seq: u64,
    pub arrival_ns: u64,
    pub inject_ns: u64,
    pub isr_ns: u64,
    /// The end of that guest ISR (just before its LAPIC EOI).
    pub isr_end_ns: u64,
    pub dsr_start_ns: u64,
    pub dsr_end_ns: u64,
    /// When the VMM saw the completion (and sent the reply, for a NIC).
    pub done_ns: u64,
    #[serde(skip)]
    pub(crate) raw: [u64; 4],
}

pub(crate) struct DevState {
    pub name: String,
    pub kind: &'static str,
    pub received: u64,
    pub injected: u64,
    pub dropped: u64,
    pub completed: u64,
    pub send_errors: u64,
    pub inject_errors: u64,
    /// Descriptors published (`DV_PROD`).
    pub prod: u64,
    /// Descriptors whose completion the host has processed.
    pub host_done: u64,
    pub meta: VecDeque<Meta>,
    pub records: Vec<EventRecord>,
    /// Completion time of the last completed event (watchdog progress).
    pub last_progress: Nanos,
    /// vINT injection counter (VINT §V-B) of a managed interrupt.
    pub counter: Option<crate::vint::Counter>,
    pub held: VecDeque<Held>,
}

/// Records kept per device (counters cover every event).
pub(crate) const RECORDS: usize = 1 << 16;

impl DevState {
    pub fn new(name: &str, kind: &'static str) -> DevState {
        DevState {
            name: name.to_string(),
            kind,
            received: 0,
            injected: 0,
            dropped: 0,
            completed: 0,
            send_errors: 0,
            inject_errors: 0,
            prod: 0,
            host_done: 0,
            meta: VecDeque::new(),
            records: Vec::new(),
            last_progress: Nanos::ZERO,
            counter: None,
            held: VecDeque::new(),
        }
    }

    /// One host event. Unmanaged: injected at once. Managed (vINT): injected
    /// if the counter has a credit, else held. Returns whether it was
    /// injected.
    pub fn accept(
        &mut self,
        vm: &Vm,
        d: usize,
        payload: &[u8],
        arrival: Nanos,
        peer: Option<SocketAddr>,
    ) -> bool {
        self.received += 1;
        if let Some(c) = self.counter.as_mut() {
            if !self.held.is_empty() || !c.take(irqlab_rt::sys::now()) {
                if self.held.len() >= HELD_MAX {
                    self.dropped += 1;
                } else {
                    self.held.push_back(Held {
                        payload: payload.to_vec(),
                        arrival,
                        peer,
                    });
                }
                return false;
            }
        }
        self.deliver(vm, d, payload, arrival, peer)
    }

    /// Inject held events for which the counter has credits again; returns
    /// how many were injected.
    pub fn release_held(&mut self, vm: &Vm, d: usize, now: Nanos) -> u64 {
        let mut n = 0;
        while let (Some(_), Some(c)) = (self.held.front(), self.counter.as_mut()) {
            if !c.take(now) {
                break;
            }
            if let Some(h) = self.held.pop_front() {
                if self.deliver(vm, d, &h.payload, h.arrival, h.peer) {
                    n += 1;
                }
            }
        }
        n
    }

    /// Put `payload` into the next descriptor and inject (an accepted
    /// event); returns whether it was injected (else dropped: ring full).
    fn deliver(
        &mut self,
        vm: &Vm,
        d: usize,
        payload: &[u8],
        arrival: Nanos,
        peer: Option<SocketAddr>,
    ) -> bool {
        if self.prod - self.host_done >= RING_SLOTS {
            self.dropped += 1;
            return false;
        }
        let base = desc(d, self.prod);
        let n = payload.len().min(MAX_PAYLOAD);
        let wrote = vm.store(base + 8 * D_SEQ, self.prod).and_then(|_| {
            vm.store(base + 8 * D_LEN, n as u64)?;
            for w in [D_ISR, D_ISR_END, D_DSR_START, D_DSR_END] {
                vm.store(base + 8 * w, 0)?;
            }
            vm.write(base + D_PAYLOAD, &payload[..n])
        });
        if wrote.is_err() {
            self.inject_errors += 1;
            self.dropped += 1;
            return false;
        }
        self.prod += 1;
        if vm.store(dev(d, DV_PROD), self.prod).is_err() {
            self.inject_errors += 1;
        }
        let inject = irqlab_rt::sys::now();
        self.meta.push_back(Meta {
            arrival,
            inject,
            peer,
        });
        self.injected += 1;
        // KVM_SIGNAL_MSI returns 1 even when the vector is already pending
        // in the LAPIC's IRR (the guest then sees one ISR for several
        // descriptors): coalescing shows as guest ISR entries < injected.
        if vm.raise(d).is_err() {
            self.inject_errors += 1;
        }
        true
    }

    /// The guest reported completions of device `d` (on the VCPU thread).
    pub fn complete(&mut self, vm: &Vm, d: usize, backing: &Backing) -> Result<(), VmmError> {
        let cons = vm.load(dev(d, DV_CONS))?.min(self.prod);
        let now = irqlab_rt::sys::now();
        let mut buf = [0u8; MAX_PAYLOAD];
        while self.host_done < cons {
            let base = desc(d, self.host_done);
            let Some(m) = self.meta.pop_front() else {
                break;
            };
            let raw = [
                vm.load(base + 8 * D_ISR)?,
                vm.load(base + 8 * D_DSR_START)?,
                vm.load(base + 8 * D_DSR_END)?,
                vm.load(base + 8 * D_ISR_END)?,
            ];
            if let (Backing::Udp(s), Some(peer)) = (backing, m.peer) {
                let len = (vm.load(base + 8 * D_LEN)? as usize).min(MAX_PAYLOAD);
                vm.read(base + D_PAYLOAD, &mut buf[..len])?;
                if s.send_to(&buf[..len], peer).is_err() {
                    self.send_errors += 1;
                }
            }
            if self.records.len() < RECORDS {
                self.records.push(EventRecord {
                    device: d,
                    seq: self.host_done,
                    arrival_ns: m.arrival.0,
                    inject_ns: m.inject.0,
                    isr_ns: 0,
                    isr_end_ns: 0,
                    dsr_start_ns: 0,
                    dsr_end_ns: 0,
                    done_ns: irqlab_rt::sys::now().0,
                    raw,
                });
            }
            self.host_done += 1;
            self.completed += 1;
        }
        self.last_progress = now;
        Ok(())
    }
}

/// Per-device summary of a run.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceReport {
    pub name: String,
    pub kind: &'static str,
    pub vector: u8,
    /// The guest VCPU its interrupt is routed to.
    pub vcpu: usize,
    /// Managed by vINT (its events may be held by the injection counter).
    pub managed: bool,
    /// Host events read from the fd.
    pub received: u64,
    /// Descriptors published and interrupts injected.
    pub injected: u64,
    /// Events lost because the ring was full.
    pub dropped: u64,
    /// Events held by the host at the stop (vINT deferral; 0 otherwise).
    pub pending: u64,
    /// Descriptors the guest completed.
    pub completed: u64,
    /// Injected but not completed at the stop.
    pub in_guest: u64,
    /// ISR entries counted by the guest (fewer than `injected` when
    /// injections merged with one already pending).
    pub guest_isr_entries: u64,
    pub guest_dsr_runs: u64,
    pub send_errors: u64,
    pub inject_errors: u64,
    /// Host event arrival (top half) to the injection ioctl (for a managed
    /// interrupt this includes the time an event was held by the counter).
    pub to_inject: irqlab_rt::report::Latency,
    /// Arrival to guest ISR entry.
    pub to_isr: irqlab_rt::report::Latency,
    /// The first 1024 arrival-to-ISR-entry latencies in order (replayed
    /// through the Latencies IP by `irqlab reproduce latency-ip-table4`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub to_isr_samples_ns: Vec<u64>,
    /// Arrival to guest DSR start.
    pub to_dsr_start: irqlab_rt::report::Latency,
    /// Arrival to guest DSR end (VINT Def. 2's handling time, measured from
    /// the host event).
    pub to_dsr_end: irqlab_rt::report::Latency,
    /// Arrival to the VMM's completion (reply sent, for a NIC).
    pub to_done: irqlab_rt::report::Latency,
}

impl DeviceReport {
    pub(crate) fn of(st: &DevState, d: usize, guest: (u64, u64)) -> DeviceReport {
        let mut rec = [(); 5].map(|_| LatencyRecorder::new(1024, None));
        for e in &st.records {
            let a = e.arrival_ns;
            for (r, t) in rec.iter_mut().zip([
                e.inject_ns,
                e.isr_ns,
                e.dsr_start_ns,
                e.dsr_end_ns,
                e.done_ns,
            ]) {
                r.record(Nanos(t.saturating_sub(a)));
            }
        }
        let l = |i: usize| irqlab_rt::report::Latency::of(&rec[i]);
        DeviceReport {
            name: st.name.clone(),
            kind: st.kind,
            vector: VEC_BASE + d as u8,
            vcpu: 0,
            managed: st.counter.is_some(),
            received: st.received,
            injected: st.injected,
            dropped: st.dropped,
            pending: st.held.len() as u64,
            completed: st.completed,
            in_guest: st.injected - st.completed,
            guest_isr_entries: guest.0,
            guest_dsr_runs: guest.1,
            send_errors: st.send_errors,
            inject_errors: st.inject_errors,
            to_inject: l(0),
            to_isr: l(1),
            to_isr_samples_ns: rec[1].samples().iter().map(|s| s.0).collect(),
            to_dsr_start: l(2),
            to_dsr_end: l(3),
            to_done: l(4),
        }
    }
}
