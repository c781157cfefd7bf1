//! The running VMM: the guest's VCPU thread inside an irqlab-rt server,
//! host devices on the runtime's top half, a watchdog, and the report.
//!
//! What it is (DESIGN §11): `Vmm::start` creates the VM, declares the
//! VCPU's server (a sporadic server, VINT §III, or an unbounded one) in an
//! irqlab-rt runtime, spawns the VCPU thread as a managed thread of that
//! server (so the supervisor parks it when the server is out of budget:
//! the park signal makes `KVM_RUN` return `EINTR` and the thread waits in
//! the signal handler until the replenishment), registers each device's fd
//! as an upcall of the top half (the physical ISR), and starts a watchdog.
//! `stop` kicks the VCPU out of `KVM_RUN` (`immediate_exit` + a signal),
//! stops the runtime (joining every thread) and reports.
//!
//! Design principles: one scheduler (irqlab-core through irqlab-rt); a
//! guest failure stops everything and is returned with the guest RIP; the
//! guest TSC is converted to the host clock with a two-point fit (samples
//! of the TSC MSR through KVM at boot and at the stop).

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Once};
use std::thread::JoinHandle;
use std::time::Duration;

use irqlab_core::Nanos;
use irqlab_rt::{Runtime, UpcallBudget};
use kvm_ioctls::{VcpuExit, VcpuFd};
use serde::Serialize;

use crate::abi::*;
use crate::devices::{Backing, DevState, DeviceConfig, DeviceKind, DeviceReport, EventRecord};
use crate::error::{exception_name, VmmError};
use crate::vm::{tsc_sample, Vm};

/// The server the guest VCPU runs in.
#[derive(Clone, Copy, Debug)]
pub enum VcpuServer {
    /// A sporadic server (VINT §III: the VCPU's budget C per period T).
    Sporadic { budget: Nanos, period: Nanos },
    /// No budget: a plain SCHED_FIFO thread group.
    Unbounded,
}

/// How to run the VMM.
#[derive(Clone, Debug)]
pub struct VmmConfig {
    pub vcpu: VcpuServer,
    /// Runtime settings (managed CPUs, priorities); the VCPU goes on the
    /// first managed CPU.
    pub rt: irqlab_rt::Config,
    /// Guest behaviour flags (`abi::FLAG_*`).
    pub flags: u64,
    /// Work of the guest's DSR per descriptor.
    pub dsr_cost: Nanos,
    /// A step of the guest's busy loop longer than this is logged as a gap
    /// (time the VCPU did not run); zero: no gap log.
    pub gap_min: Nanos,
    pub devices: Vec<DeviceConfig>,
    /// No guest progress for this long stops the VM with an error.
    pub watchdog: Nanos,
    pub console_limit: usize,
    /// The guest image (default: the kernel built from `guest/`).
    pub image: Option<Vec<u8>>,
}

impl Default for VmmConfig {
    fn default() -> Self {
        VmmConfig {
            vcpu: VcpuServer::Unbounded,
            rt: irqlab_rt::Config::default(),
            flags: 0,
            dsr_cost: Nanos::ZERO,
            gap_min: Nanos::ZERO,
            devices: Vec::new(),
            watchdog: Nanos::from_ms(2000),
            console_limit: 64 << 10,
            image: None,
        }
    }
}

#[derive(Debug, Default, Serialize)]
pub struct ExitCounts {
    pub io: u64,
    pub done_port: u64,
    pub intr: u64,
}

pub(crate) struct Shared {
    vm: Vm,
    backings: Vec<Backing>,
    devs: Vec<Mutex<DevState>>,
    stop: AtomicBool,
    failure: Mutex<Option<VmmError>>,
    /// The watchdog wants the VCPU thread to stop with this reason.
    hang: Mutex<Option<(String, u64)>>,
    ready: AtomicBool,
    vcpu_tid: AtomicI32,
    kvm_run: AtomicUsize,
    console: Mutex<Vec<u8>>,
    exits_io: AtomicU64,
    exits_done: AtomicU64,
    exits_intr: AtomicU64,
    tsc_khz: AtomicU64,
    tsc_samples: Mutex<Vec<(u64, u64)>>,
    console_limit: usize,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    fn fail(&self, e: VmmError) {
        let mut f = lock(&self.failure);
        if f.is_none() {
            *f = Some(e);
        }
        drop(f);
        self.stop.store(true, Ordering::SeqCst);
    }

    /// Get the VCPU out of `KVM_RUN`: `immediate_exit` covers a thread about
    /// to enter, the signal one inside.
    fn kick(&self) {
        let p = self.kvm_run.load(Ordering::SeqCst);
        if p != 0 {
            // SAFETY: the kvm_run mapping lives as long as the VcpuFd, which
            // the VCPU thread drops only after clearing `kvm_run`.
            unsafe {
                std::ptr::write_volatile(
                    std::ptr::addr_of_mut!((*(p as *mut kvm_bindings::kvm_run)).immediate_exit),
                    1,
                )
            };
        }
        let tid = self.vcpu_tid.load(Ordering::SeqCst);
        if tid > 0 {
            let _ = irqlab_rt::sys::tgkill(tid, kick_signal());
        }
    }

    /// Guest TSC to host ns: two-point fit of the samples (one sample and
    /// the VCPU's TSC frequency if the VM failed early).
    fn tsc_to_ns(&self) -> impl Fn(u64) -> u64 {
        let s = lock(&self.tsc_samples).clone();
        let khz = self.tsc_khz.load(Ordering::Relaxed).max(1) as f64;
        let (g0, h0) = s.first().copied().unwrap_or((0, 0));
        let rate = match (s.first(), s.last()) {
            (Some(a), Some(b)) if b.0 > a.0 + 1_000_000 => (b.1 - a.1) as f64 / (b.0 - a.0) as f64,
            _ => 1e6 / khz,
        };
        move |g| {
            if g == 0 {
                0
            } else {
                (h0 as f64 + (g as f64 - g0 as f64) * rate).max(0.0) as u64
            }
        }
    }
}

/// Signal that kicks the VCPU out of `KVM_RUN` (handler does nothing).
fn kick_signal() -> libc::c_int {
    libc::SIGRTMIN() + 4
}
extern "C" fn on_kick(_: libc::c_int) {}
fn install_kick() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: a sigaction with a valid no-op handler, no SA_RESTART.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_kick as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(kick_signal(), &sa, std::ptr::null_mut());
        }
    });
}

/// A running VMM.
pub struct Vmm {
    shared: Arc<Shared>,
    rt: Option<Runtime>,
    watchdog: Option<JoinHandle<()>>,
    t0: Nanos,
}

/// What `stop` returns: the report, and the guest's failure if any.
pub struct Stopped {
    pub report: VmmReport,
    pub error: Option<VmmError>,
}

impl Vmm {
    pub fn start(cfg: VmmConfig) -> Result<Vmm, VmmError> {
        if cfg.devices.len() > NDEV {
            return Err(VmmError::config(
                "devices",
                cfg.devices.len(),
                format!("the guest has {NDEV} device slots"),
            ));
        }
        if cfg.watchdog.0 < 50_000_000 {
            return Err(VmmError::config(
                "watchdog",
                format!("{} ns", cfg.watchdog.0),
                "must be at least 50 ms",
            ));
        }
        install_kick();
        let image = cfg.image.as_deref().unwrap_or(crate::GUEST_ELF);
        let vm = Vm::new(image)?;
        let vcpu = vm.create_vcpu()?;
        let khz = vcpu
            .get_tsc_khz()
            .map_err(VmmError::kvm("KVM_GET_TSC_KHZ"))? as u64;
        let ticks = |n: Nanos| n.0.saturating_mul(khz) / 1_000_000;
        vm.store(shared(S_MAGIC), ABI_MAGIC)?;
        vm.store(shared(S_FLAGS), cfg.flags)?;
        vm.store(shared(S_DSR_COST), ticks(cfg.dsr_cost))?;
        vm.store(shared(S_GAP_MIN), ticks(cfg.gap_min))?;
        let mut backings = Vec::new();
        let mut devs = Vec::new();
        for (i, d) in cfg.devices.iter().enumerate() {
            backings.push(Backing::open(d, &format!("devices[{i}]"))?);
            let kind = match d.kind {
                DeviceKind::Udp { .. } => "udp",
                DeviceKind::Timer { .. } => "timer",
            };
            devs.push(Mutex::new(DevState::new(&d.name, kind)));
        }
        let shared = Arc::new(Shared {
            vm,
            backings,
            devs,
            stop: AtomicBool::new(false),
            failure: Mutex::new(None),
            hang: Mutex::new(None),
            ready: AtomicBool::new(false),
            vcpu_tid: AtomicI32::new(0),
            kvm_run: AtomicUsize::new(0),
            console: Mutex::new(Vec::new()),
            exits_io: AtomicU64::new(0),
            exits_done: AtomicU64::new(0),
            exits_intr: AtomicU64::new(0),
            tsc_khz: AtomicU64::new(khz),
            tsc_samples: Mutex::new(Vec::new()),
            console_limit: cfg.console_limit,
        });

        let mut rt = Runtime::new(cfg.rt.clone())?;
        let cpu = cfg.rt.cpus.first().copied();
        let server = match cfg.vcpu {
            VcpuServer::Sporadic { budget, period } => {
                rt.main_vcpu("vcpu0", budget, period, cpu)?
            }
            VcpuServer::Unbounded => rt.unbounded("vcpu0", 1_000_000_000, cpu)?,
        };
        for (d, b) in shared.backings.iter().enumerate() {
            let sh = shared.clone();
            let name = format!("{}-physical-isr", cfg.devices[d].name);
            // The physical ISR runs without a budget of its own (VINT §III:
            // physical interrupts preempt every VCPU).
            let budget = UpcallBudget {
                budget: Nanos::from_ms(1),
                period: Nanos::from_ms(1),
            };
            rt.register_upcall(&name, b.raw(), budget, move |ev| {
                physical_isr(&sh, d, ev.arrival)
            })?;
        }
        let sh = shared.clone();
        let mut vcpu_slot = Some(vcpu);
        rt.spawn(server, "vcpu0", 0, move |_ctx| {
            if let Some(v) = vcpu_slot.take() {
                vcpu_thread(&sh, v)
            }
        })?;
        rt.start()?;
        for (i, d) in cfg.devices.iter().enumerate() {
            if let DeviceKind::Timer { period } = d.kind {
                shared.backings[i].arm(period)?;
            }
        }
        let sh = shared.clone();
        let wd = cfg.watchdog;
        let watchdog = std::thread::Builder::new()
            .name("irqlab-vmm-watchdog".into())
            .spawn(move || watchdog(&sh, wd))
            .map_err(VmmError::io("spawn watchdog"))?;
        Ok(Vmm {
            shared,
            rt: Some(rt),
            watchdog: Some(watchdog),
            t0: irqlab_rt::sys::now(),
        })
    }

    /// The local address of device `d` (a UDP NIC), to send it datagrams.
    pub fn device_addr(&self, d: usize) -> Option<std::net::SocketAddr> {
        match self.shared.backings.get(d)? {
            Backing::Udp(s) => s.local_addr().ok(),
            Backing::Timer(_) => None,
        }
    }

    /// Has the guest finished booting (interrupts enabled)?
    pub fn ready(&self) -> bool {
        self.shared.ready.load(Ordering::SeqCst)
    }
    /// Has the VM stopped (a guest failure or a stop)?
    pub fn stopped(&self) -> bool {
        self.shared.stop.load(Ordering::SeqCst)
    }
    /// Has the guest finished its exit round-trip measurement (`FLAG_PING`)?
    pub fn ping_done(&self) -> bool {
        self.shared.vm.load(shared(S_PING_TSC)).unwrap_or(0) != 0
    }
    /// Events of device `d` the guest completed so far.
    pub fn completed(&self, d: usize) -> u64 {
        self.shared.devs.get(d).map_or(0, |m| lock(m).completed)
    }

    /// Wait until `cond(self)` holds, the VM stops, or `timeout` passes;
    /// returns whether `cond` held.
    pub fn wait_for(&self, timeout: Duration, cond: impl Fn(&Vmm) -> bool) -> bool {
        let end = std::time::Instant::now() + timeout;
        loop {
            if cond(self) {
                return true;
            }
            if self.stopped() || std::time::Instant::now() >= end {
                return cond(self);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Stop the VM and every thread; report.
    pub fn stop(mut self) -> Stopped {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.kick();
        let rt_report = self.rt.take().map(|rt| rt.stop());
        if let Some(w) = self.watchdog.take() {
            let _ = w.join();
        }
        let t_end = irqlab_rt::sys::now();
        let sh = &self.shared;
        let conv = sh.tsc_to_ns();
        let mut devices = Vec::new();
        let mut events = Vec::new();
        for (d, m) in sh.devs.iter().enumerate() {
            let mut st = lock(m);
            for e in st.records.iter_mut() {
                e.isr_ns = conv(e.raw[0]);
                e.dsr_start_ns = conv(e.raw[1]);
                e.dsr_end_ns = conv(e.raw[2]);
            }
            let g = (
                sh.vm.load(dev(d, DV_ISR)).unwrap_or(0),
                sh.vm.load(dev(d, DV_DSR)).unwrap_or(0),
            );
            devices.push(DeviceReport::of(&st, d, g));
            events.extend(st.records.iter().copied());
        }
        let ngaps = sh.vm.load(shared(S_GAP_COUNT)).unwrap_or(0).min(GAP_SLOTS);
        let gaps = (0..ngaps)
            .map(|i| {
                let a = sh.vm.load(shared(S_GAPS + 2 * i)).unwrap_or(0);
                let b = sh.vm.load(shared(S_GAPS + 2 * i + 1)).unwrap_or(0);
                (conv(a), conv(b))
            })
            .collect();
        let report = VmmReport {
            duration_ns: t_end.saturating_sub(self.t0).0,
            tsc_khz: sh.tsc_khz.load(Ordering::Relaxed),
            console: String::from_utf8_lossy(&lock(&sh.console)).into_owned(),
            heartbeat: sh.vm.load(shared(S_HEARTBEAT)).unwrap_or(0),
            exit_round_trip_ns: match sh.vm.load(shared(S_PING_TSC)).unwrap_or(0) {
                0 => None,
                t => Some(
                    t as f64 * 1e6
                        / sh.tsc_khz.load(Ordering::Relaxed).max(1) as f64
                        / PING_COUNT as f64,
                ),
            },
            exits: ExitCounts {
                io: sh.exits_io.load(Ordering::Relaxed),
                done_port: sh.exits_done.load(Ordering::Relaxed),
                intr: sh.exits_intr.load(Ordering::Relaxed),
            },
            devices,
            events,
            gaps,
            runtime: rt_report,
        };
        let error = lock(&sh.failure).take();
        Stopped { report, error }
    }
}

impl Drop for Vmm {
    fn drop(&mut self) {
        if self.rt.is_some() {
            self.shared.stop.store(true, Ordering::SeqCst);
            self.shared.kick();
            if let Some(rt) = self.rt.take() {
                rt.stop();
            }
            if let Some(w) = self.watchdog.take() {
                let _ = w.join();
            }
        }
    }
}

/// The report of a run.
#[derive(Debug, Serialize)]
pub struct VmmReport {
    pub duration_ns: u64,
    pub tsc_khz: u64,
    pub console: String,
    pub heartbeat: u64,
    /// Mean cost of a port-I/O exit round trip (guest `out` to the VMM and
    /// back), measured by the guest with `FLAG_PING`.
    pub exit_round_trip_ns: Option<f64>,
    pub exits: ExitCounts,
    pub devices: Vec<DeviceReport>,
    /// Every completed event (up to 65536 per device), host clock.
    pub events: Vec<EventRecord>,
    /// Intervals (host clock) in which the busy guest did not run.
    pub gaps: Vec<(u64, u64)>,
    pub runtime: Option<irqlab_rt::Report>,
}

/// The top half's handler for device `d` (the physical ISR): drain the fd,
/// deliver each event. Returns the number of events.
fn physical_isr(sh: &Shared, d: usize, arrival: Nanos) -> u64 {
    let mut st = lock(&sh.devs[d]);
    let mut n = 0;
    match &sh.backings[d] {
        Backing::Udp(s) => {
            let mut buf = [0u8; 2048];
            while let Ok((len, peer)) = s.recv_from(&mut buf) {
                st.deliver(&sh.vm, d, &buf[..len], arrival, Some(peer));
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
                    st.deliver(&sh.vm, d, &[], arrival, None);
                    n += 1;
                }
            }
        }
    }
    n
}

/// What a VCPU exit asks the VMM to do (computed while the exit borrows
/// the VCPU, carried out after).
enum Action {
    Go,
    Done(usize),
    Fail(Box<dyn FnOnce(u64) -> VmmError>),
}

fn vcpu_thread(sh: &Arc<Shared>, mut vcpu: VcpuFd) {
    sh.vcpu_tid
        .store(irqlab_rt::sys::gettid(), Ordering::SeqCst);
    sh.kvm_run
        .store(vcpu.get_kvm_run() as *mut _ as usize, Ordering::SeqCst);
    if sh.stop.load(Ordering::SeqCst) {
        vcpu.set_kvm_immediate_exit(1);
    }
    match tsc_sample(&vcpu) {
        Ok(s) => lock(&sh.tsc_samples).push(s),
        Err(e) => sh.fail(e),
    }
    if let Err(e) = run_loop(sh, &mut vcpu) {
        sh.fail(e);
    }
    if let Ok(s) = tsc_sample(&vcpu) {
        lock(&sh.tsc_samples).push(s);
    }
    sh.stop.store(true, Ordering::SeqCst);
    sh.vcpu_tid.store(0, Ordering::SeqCst);
    sh.kvm_run.store(0, Ordering::SeqCst);
}

fn rip(vcpu: &VcpuFd) -> u64 {
    vcpu.get_regs().map(|r| r.rip).unwrap_or(u64::MAX)
}

fn run_loop(sh: &Shared, vcpu: &mut VcpuFd) -> Result<(), VmmError> {
    loop {
        if let Some((what, ms)) = lock(&sh.hang).take() {
            let rip = rip(vcpu);
            return Err(VmmError::GuestHung { what, ms, rip });
        }
        if sh.stop.load(Ordering::SeqCst) {
            return Ok(());
        }
        let action = match vcpu.run() {
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
                            Action::Fail(Box::new(move |rip| VmmError::ConsoleFlood { limit, rip }))
                        } else {
                            Action::Go
                        }
                    }
                    PORT_DONE => Action::Done(word as usize),
                    PORT_PING => Action::Go,
                    PORT_READY => {
                        sh.ready.store(true, Ordering::SeqCst);
                        Action::Go
                    }
                    PORT_PANIC => {
                        let vector = sh.vm.load(shared(S_PANIC_VEC))?;
                        let error = sh.vm.load(shared(S_PANIC_ERR))?;
                        let rip = sh.vm.load(shared(S_PANIC_RIP))?;
                        Action::Fail(Box::new(move |_| VmmError::GuestException {
                            vector,
                            name: exception_name(vector),
                            error,
                            rip,
                        }))
                    }
                    PORT_EXIT => {
                        Action::Fail(Box::new(move |_| VmmError::GuestExit { code: word }))
                    }
                    p => Action::Fail(Box::new(move |rip| VmmError::Unhandled {
                        what: format!("port write {p:#x} = {word:#x}"),
                        rip,
                    })),
                }
            }
            Ok(VcpuExit::IoIn(port, _)) => Action::Fail(Box::new(move |rip| VmmError::Unhandled {
                what: format!("port read {port:#x}"),
                rip,
            })),
            Ok(VcpuExit::MmioRead(a, _)) | Ok(VcpuExit::MmioWrite(a, _)) => {
                Action::Fail(Box::new(move |rip| VmmError::Unhandled {
                    what: format!("MMIO access at {a:#x} (no memory or device there)"),
                    rip,
                }))
            }
            Ok(VcpuExit::Shutdown) => Action::Fail(Box::new(|rip| VmmError::TripleFault { rip })),
            Ok(VcpuExit::FailEntry(reason, _)) => {
                Action::Fail(Box::new(move |rip| VmmError::FailEntry { reason, rip }))
            }
            Ok(VcpuExit::InternalError) => {
                let sub = vcpu.get_kvm_run();
                // SAFETY: the exit reason says the `internal` union member is valid.
                let (suberror, data) = unsafe {
                    let i = &sub.__bindgen_anon_1.internal;
                    let n = (i.ndata as usize).min(i.data.len());
                    (i.suberror, i.data[..n].to_vec())
                };
                Action::Fail(Box::new(move |rip| VmmError::InternalError {
                    suberror,
                    data,
                    rip,
                }))
            }
            Ok(VcpuExit::Intr) => {
                sh.exits_intr.fetch_add(1, Ordering::Relaxed);
                Action::Go
            }
            Ok(other) => {
                let what = format!("VM exit {other:?}");
                Action::Fail(Box::new(move |rip| VmmError::Unhandled { what, rip }))
            }
            Err(e) if e.errno() == libc::EINTR || e.errno() == libc::EAGAIN => {
                // A park (budget exhausted: the signal handler waited for the
                // replenishment) or a kick.
                sh.exits_intr.fetch_add(1, Ordering::Relaxed);
                Action::Go
            }
            Err(e) => return Err(VmmError::kvm("KVM_RUN")(e)),
        };
        match action {
            Action::Go => {}
            Action::Done(d) => {
                sh.exits_done.fetch_add(1, Ordering::Relaxed);
                let (Some(m), Some(b)) = (sh.devs.get(d), sh.backings.get(d)) else {
                    let rip = rip(vcpu);
                    return Err(VmmError::Unhandled {
                        what: format!("completion for device {d}, which does not exist"),
                        rip,
                    });
                };
                lock(m).complete(&sh.vm, d, b)?;
            }
            Action::Fail(f) => {
                let rip = rip(vcpu);
                return Err(f(rip));
            }
        }
    }
}

/// Stops a guest that makes no progress: boot not finished, or injected
/// events not completed, for `limit`.
fn watchdog(sh: &Shared, limit: Nanos) {
    let start = irqlab_rt::sys::now();
    let mut outstanding_since: Vec<Option<Nanos>> = vec![None; sh.devs.len()];
    while !sh.stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(10));
        let now = irqlab_rt::sys::now();
        let mut hang = None;
        if !sh.ready.load(Ordering::SeqCst) && now.saturating_sub(start) > limit {
            hang = Some("boot did not finish".to_string());
        }
        for (d, m) in sh.devs.iter().enumerate() {
            let st = lock(m);
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
            sh.kick();
            // The VCPU thread answers with the guest's RIP; if it cannot
            // (parked for good), fail without it.
            std::thread::sleep(Duration::from_millis(500));
            if let Some((what, ms)) = lock(&sh.hang).take() {
                sh.fail(VmmError::GuestHung {
                    what,
                    ms,
                    rip: u64::MAX,
                });
            }
            return;
        }
    }
}
