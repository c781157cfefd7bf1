//! The running VMM: the guest's VCPU thread inside an irqlab-rt server,
//! host devices on the runtime's top half, a watchdog, and the report.
//!
//! What it is (DESIGN §11): `Vmm::start` creates the VM (one or two
//! VCPUs; each device's interrupt routed to one), declares each VCPU's
//! server (sporadic or deferrable, VINT §III, or unbounded) in an
//! irqlab-rt runtime, spawns each VCPU's thread as a managed thread of its
//! server (so the supervisor parks it when the server is out of budget;
//! see `vcpu` for how a parked thread never holds the guest), and for each
//! vINT-managed interrupt a pseudo-VCPU server and thread (VINT §V, see
//! `vint`); registers each device's fd as an upcall of the top half (the
//! physical ISR); starts a watchdog and, with vINT, the releaser of held
//! events. `stop` kicks the VCPU out of `KVM_RUN` (`immediate_exit` + a
//! signal), stops the runtime (joining every thread) and reports.
//!
//! Design principles: one scheduler (irqlab-core through irqlab-rt); a
//! guest failure stops everything and is returned with the guest RIP; the
//! guest TSC is converted to the host clock with a two-point fit (samples
//! of the TSC MSR through KVM at boot and at the stop).

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Once, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

use irqlab_core::{Nanos, ServerPriority};
use irqlab_rt::{BudgetPolicy, Runtime, TaskHandle, UpcallBudget};
use kvm_ioctls::VcpuFd;
use serde::Serialize;

use crate::abi::*;
use crate::devices::{Backing, DevState, DeviceConfig, DeviceKind, DeviceReport, EventRecord};
use crate::error::VmmError;
use crate::tasks::{GuestSchedReport, GuestTask};
use crate::vint::{Counter, PseudoVcpu, Replenish};
use crate::vm::{Injection, Irqchip, Vm};

/// The server the guest VCPU runs in.
#[derive(Clone, Copy, Debug)]
pub enum VcpuServer {
    /// A sporadic server (VINT §III: the VCPU's budget C per period T).
    Sporadic { budget: Nanos, period: Nanos },
    /// A deferrable server (VINT §III: full budget at every period start).
    Deferrable { budget: Nanos, period: Nanos },
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
    /// Work of the guest's DSR per descriptor (every device)...
    pub dsr_cost: Nanos,
    /// ... unless given here per device (same index).
    pub dsr_costs: Vec<Nanos>,
    /// A step of the guest's busy loop longer than this is logged as a gap
    /// (time the VCPU did not run); zero: no gap log.
    pub gap_min: Nanos,
    pub devices: Vec<DeviceConfig>,
    /// Per device (same index), its DSR's priority in the guest scheduler
    /// (higher is more urgent); missing: above every task
    /// (`tasks::default_dsr_priority`).
    pub dsr_priorities: Vec<u64>,
    /// Periodic guest tasks, released by the guest's LAPIC timer.
    pub tasks: Vec<GuestTask>,
    /// Per device (same index), a pseudo-VCPU if vINT manages its virtual
    /// interrupt (VINT §V); missing or `None`: unmanaged.
    pub vint: Vec<Option<PseudoVcpu>>,
    /// No guest progress for this long stops the VM with an error.
    pub watchdog: Nanos,
    pub console_limit: usize,
    /// How virtual interrupts are injected (`KVM_SIGNAL_MSI` or irqfd).
    pub injection: Injection,
    /// The in-kernel irqchip: whole, or split (the guest's EOIs of device
    /// vectors exit to the VMM; VINT §V-B's nested handling switches
    /// pseudo-VCPUs at them).
    pub irqchip: Irqchip,
    /// Guest VCPUs (1 or 2). With 2 the guest starts its second VCPU (a
    /// paravirtual start, `vm::start_ap`), which runs in its own server
    /// ("vcpu1", the same budget and period as "vcpu0", on the second
    /// managed CPU if there is one).
    pub vcpus: usize,
    /// Per device (same index), the VCPU its interrupt is routed to
    /// (missing: VCPU 0). vINT-managed interrupts go to VCPU 0.
    pub irq_vcpu: Vec<usize>,
    /// The guest image (default: the kernel built from `guest/`).
    pub image: Option<Vec<u8>>,
    /// The watchdog raises a device again after 20 ms without progress on
    /// its injected events (`host::watchdog`); off only to study the
    /// stall it mitigates (`irqlab-vmm storm --no-reraise`, docs/vmm.md).
    pub reraise: bool,
}

impl Default for VmmConfig {
    fn default() -> Self {
        VmmConfig {
            vcpu: VcpuServer::Unbounded,
            rt: irqlab_rt::Config::default(),
            flags: 0,
            dsr_cost: Nanos::ZERO,
            dsr_costs: Vec::new(),
            gap_min: Nanos::ZERO,
            devices: Vec::new(),
            dsr_priorities: Vec::new(),
            tasks: Vec::new(),
            vint: Vec::new(),
            watchdog: Nanos::from_ms(2000),
            console_limit: 64 << 10,
            injection: Injection::Msi,
            irqchip: Irqchip::Kernel,
            vcpus: 1,
            irq_vcpu: Vec::new(),
            image: None,
            reraise: true,
        }
    }
}

#[derive(Debug, Default, Serialize)]
pub struct ExitCounts {
    pub io: u64,
    pub done_port: u64,
    /// `KVM_RUN` interrupted by a signal (a park, a kick or a handoff).
    pub intr: u64,
    /// Slices of guest execution run by pseudo-VCPU threads (vINT).
    pub pseudo_slices: u64,
    /// Times the watchdog raised a device again after 20 ms without
    /// progress on its injected events (`host::watchdog`).
    pub reraises: u64,
    /// Per device, the guest's EOIs of its vector seen as
    /// `KVM_EXIT_IOAPIC_EOI` (split irqchip only).
    pub ioapic_eoi: Vec<u64>,
}

pub(crate) struct Shared {
    pub vm: Vm,
    /// The guest's VCPU: whoever holds it runs the guest (see `vcpu`).
    pub vcpu: Mutex<VcpuFd>,
    /// The guest's other VCPUs (APs), each run by its own thread.
    pub aps: Vec<Ap>,
    pub backings: Vec<Backing>,
    /// Per device, a timer's period: armed when the guest is ready
    /// (`PORT_READY`), so that no tick interrupts its boot (docs/vmm.md).
    pub timers: Vec<Option<Nanos>>,
    pub devs: Vec<Mutex<DevState>>,
    pub stop: AtomicBool,
    pub failure: Mutex<Option<VmmError>>,
    /// The watchdog wants the running thread to stop with this reason.
    pub hang: Mutex<Option<(String, u64)>>,
    pub ready: AtomicBool,
    /// The thread in `KVM_RUN` now (0: none).
    pub runner_tid: AtomicI32,
    kvm_run: AtomicUsize,
    /// Per device, the rank of its pseudo-VCPU (managed interrupts only;
    /// smaller is more urgent, VINT §V-A).
    pub ranks: Vec<Option<u64>>,
    /// Per device, its pseudo-VCPU thread is ready to run the guest (woken
    /// by an injection, not parked, handling not finished).
    pub active: Vec<AtomicBool>,
    /// Who holds the guest now: `RUNNER_NONE`, `RUNNER_VCPU` or the device
    /// whose pseudo-VCPU runs it.
    pub runner: AtomicUsize,
    /// Woken whenever the answer of `wanted` may have changed.
    pub handoff: (Mutex<()>, Condvar),
    /// Who ran the guest when (host ns), for the report and the trace.
    pub slices: Mutex<Vec<RunnerSlice>>,
    /// `KVM_EXIT_IOAPIC_EOI` exits per device (split irqchip).
    pub eois: Vec<AtomicU64>,
    /// Pseudo-VCPU thread per device (managed interrupts only).
    pub pseudo: Vec<OnceLock<TaskHandle>>,
    /// The vINT releaser thread (unparked when an event is held).
    pub releaser: OnceLock<std::thread::Thread>,
    /// Intervals (host ns) in which the VCPU thread was parked (its server
    /// out of budget).
    pub parks: Mutex<Vec<(u64, u64)>>,
    /// When a pseudo-VCPU thread last took the VCPU (host ns), and per
    /// pseudo-VCPU slice (asked for the VCPU, got it): the handoff from the
    /// regular to the pseudo-VCPU (VINT Table III's switch).
    pub token_ns: AtomicU64,
    pub handoffs: Mutex<Vec<(u64, u64)>>,
    pub console: Mutex<Vec<u8>>,
    pub exits_io: AtomicU64,
    pub exits_done: AtomicU64,
    pub exits_intr: AtomicU64,
    pub pseudo_slices: AtomicU64,
    pub reraises: AtomicU64,
    tsc_khz: AtomicU64,
    pub tsc_samples: Mutex<Vec<(u64, u64)>>,
    pub console_limit: usize,
    pub tasks: Vec<GuestTask>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A device's state, locked with parking deferred until the lock is
/// released. The top half (physical ISR) takes this lock at the highest
/// priority; a VCPU thread parked by its server's budget enforcement while
/// holding it would hold the top half, and every device's injection, until
/// its replenishment (VINT §III: physical interrupts preempt every VCPU).
pub(crate) struct DevGuard<'a> {
    // Drop order: the lock is released before a deferred park happens.
    st: MutexGuard<'a, DevState>,
    _park: irqlab_rt::park::Critical,
}

impl std::ops::Deref for DevGuard<'_> {
    type Target = DevState;
    fn deref(&self) -> &DevState {
        &self.st
    }
}

impl std::ops::DerefMut for DevGuard<'_> {
    fn deref_mut(&mut self) -> &mut DevState {
        &mut self.st
    }
}

/// Lock a device's state (see `DevGuard`).
pub(crate) fn lock_dev(m: &Mutex<DevState>) -> DevGuard<'_> {
    let park = irqlab_rt::park::Critical::enter();
    DevGuard {
        st: lock(m),
        _park: park,
    }
}

impl Shared {
    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Injected but not yet completed events of device `d`.
    pub fn outstanding(&self, d: usize) -> u64 {
        self.devs.get(d).map_or(0, |m| {
            let st = lock_dev(m);
            st.injected - st.completed
        })
    }

    /// Has device `d` an ISR pending (injected, its ISR not yet at its
    /// EOI)? The guest's ISR publishes how far it saw (`DV_SEEN`) before
    /// its EOI; a later injection raises the vector again.
    pub fn isr_pending(&self, d: usize) -> bool {
        let prod = self.devs.get(d).map_or(0, |m| lock_dev(m).prod);
        prod > self.vm.load(dev(d, DV_SEEN)).unwrap_or(0)
    }

    /// VINT §V-B, nested interrupt handling (Figure 3): the device whose
    /// pseudo-VCPU the guest runs on now, or `None` for the VCPU's own
    /// server. Among the managed interrupts whose pseudo-VCPU is ready
    /// (`active`) and which are not completed: the most urgent one with
    /// its ISR pending (the guest runs the most urgent pending ISR first;
    /// at each EOI the next pending one takes over), else the most urgent
    /// one still being handled (its DSR: the pseudo-VCPUs' order follows
    /// the DSR tasks', so this is the DSR the guest runs).
    pub fn wanted(&self) -> Option<usize> {
        let mut isr: Option<(u64, usize)> = None;
        let mut any: Option<(u64, usize)> = None;
        for (d, r) in self.ranks.iter().enumerate() {
            let Some(r) = *r else { continue };
            if !self.active[d].load(Ordering::SeqCst) || self.outstanding(d) == 0 {
                continue;
            }
            if self.isr_pending(d) && isr.is_none_or(|(b, _)| r < b) {
                isr = Some((r, d));
            }
            if any.is_none_or(|(b, _)| r < b) {
                any = Some((r, d));
            }
        }
        isr.or(any).map(|(_, d)| d)
    }

    /// The answer of `wanted` may have changed: wake the threads waiting
    /// for the guest, and kick the runner if it is not the one wanted.
    pub fn reschedule(&self) {
        self.handoff.1.notify_all();
        let want = self.wanted().unwrap_or(RUNNER_VCPU);
        let now = self.runner.load(Ordering::SeqCst);
        if now != RUNNER_NONE && now != want {
            self.kick();
        }
    }

    pub fn fail(&self, e: VmmError) {
        let mut f = lock(&self.failure);
        if f.is_none() {
            *f = Some(e);
        }
        drop(f);
        self.stop.store(true, Ordering::SeqCst);
    }

    /// Get every VCPU out of `KVM_RUN` (the stop, a hang).
    pub fn kick_all(&self) {
        self.kick();
        for a in &self.aps {
            a.kick();
        }
    }

    /// Get the VCPU out of `KVM_RUN`: `immediate_exit` covers a thread about
    /// to enter, the signal one inside.
    pub fn kick(&self) {
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
        let tid = self.runner_tid.load(Ordering::SeqCst);
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

/// A guest VCPU other than 0 (see `vcpu::ap_body`).
pub(crate) struct Ap {
    pub fd: Mutex<VcpuFd>,
    /// Its thread while in `KVM_RUN` (0: none), and its `kvm_run` page.
    pub tid: AtomicI32,
    pub kvm_run: usize,
    /// The guest asked to start it here (`PORT_START_AP`; 0: not yet).
    pub entry: AtomicU64,
    /// It runs with its LAPIC enabled (`PORT_AP_READY`).
    pub ready: AtomicBool,
}

impl Ap {
    fn kick(&self) {
        // SAFETY: as `Shared::kick`: the page lives as long as `fd`.
        unsafe {
            std::ptr::write_volatile(
                std::ptr::addr_of_mut!(
                    (*(self.kvm_run as *mut kvm_bindings::kvm_run)).immediate_exit
                ),
                1,
            )
        };
        let tid = self.tid.load(Ordering::SeqCst);
        if tid > 0 {
            let _ = irqlab_rt::sys::tgkill(tid, kick_signal());
        }
    }
}

/// `Shared::runner` when nobody holds the guest.
pub(crate) const RUNNER_NONE: usize = usize::MAX;
/// `Shared::runner` when the VCPU's own thread holds it.
pub(crate) const RUNNER_VCPU: usize = usize::MAX - 1;

/// A stretch in which one thread ran the guest (host ns).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct RunnerSlice {
    /// The guest VCPU that ran.
    pub vcpu: usize,
    /// `None`: the VCPU's own thread (its server); `Some(d)`: the
    /// pseudo-VCPU of device `d`.
    pub pseudo: Option<usize>,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// Slices kept in the log (the first ones).
pub(crate) const SLICES: usize = 1 << 17;

/// Signal that kicks the VCPU out of `KVM_RUN` (handler does nothing).
pub(crate) fn kick_signal() -> libc::c_int {
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

/// Declare the server of a guest VCPU (VINT §III).
fn vcpu_server(
    rt: &mut Runtime,
    v: VcpuServer,
    name: &str,
    cpu: Option<usize>,
) -> Result<irqlab_rt::ServerHandle, VmmError> {
    let (policy, budget, period) = match v {
        VcpuServer::Sporadic { budget, period } => (BudgetPolicy::Sporadic, budget, period),
        VcpuServer::Deferrable { budget, period } => (BudgetPolicy::Deferrable, budget, period),
        VcpuServer::Unbounded => return Ok(rt.unbounded(name, 1_000_000_000, cpu)?),
    };
    Ok(rt.budget_server(
        name,
        policy,
        budget,
        period,
        ServerPriority::RateMonotonic,
        cpu,
    )?)
}

/// A running VMM.
pub struct Vmm {
    shared: Arc<Shared>,
    rt: Option<Runtime>,
    watchdog: Option<JoinHandle<()>>,
    releaser: Option<JoinHandle<()>>,
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
        crate::tasks::check(&cfg.tasks)?;
        if let Some(d) = cfg.dsr_priorities.iter().position(|&p| p == 0) {
            return Err(VmmError::config(
                format!("dsr_priorities[{d}]"),
                0,
                "must be at least 1 (0 is the background loop)",
            ));
        }
        if cfg.dsr_priorities.len() > cfg.devices.len() {
            return Err(VmmError::config(
                "dsr_priorities",
                format!("{} entries", cfg.dsr_priorities.len()),
                format!("at most one per device ({})", cfg.devices.len()),
            ));
        }
        if cfg.vint.len() > cfg.devices.len() {
            return Err(VmmError::config(
                "vint",
                format!("{} entries", cfg.vint.len()),
                format!("at most one per device ({})", cfg.devices.len()),
            ));
        }
        let vcpu_period = match cfg.vcpu {
            VcpuServer::Sporadic { period, .. } | VcpuServer::Deferrable { period, .. } => {
                Some(period)
            }
            VcpuServer::Unbounded => None,
        };
        for (d, p) in cfg.vint.iter().enumerate() {
            let Some(p) = p else { continue };
            if p.min_interarrival.is_zero() || p.period < p.min_interarrival {
                return Err(VmmError::config(
                    format!("vint[{d}].period"),
                    format!("{} ns (T_i {} ns)", p.period.0, p.min_interarrival.0),
                    "VINT §V: T_i > 0 and the pseudo-VCPU period T_p >= T_i",
                ));
            }
            // §V-A: a pseudo-VCPU ranks above every regular VCPU (ranks and
            // rate-monotonic periods share one scale).
            if vcpu_period.is_none_or(|t| p.rank >= t.0) {
                return Err(VmmError::config(
                    format!("vint[{d}].rank"),
                    p.rank,
                    "VINT §V-A: must be more urgent than the VCPU (a budgeted VCPU, rank below its period in ns)",
                ));
            }
        }
        if !(1..=NCPU).contains(&cfg.vcpus) {
            return Err(VmmError::config(
                "vcpus",
                cfg.vcpus,
                format!("the guest runs 1 to {NCPU} VCPUs"),
            ));
        }
        if cfg.irq_vcpu.len() > cfg.devices.len() {
            return Err(VmmError::config(
                "irq_vcpu",
                format!("{} entries", cfg.irq_vcpu.len()),
                format!("at most one per device ({})", cfg.devices.len()),
            ));
        }
        for (d, &v) in cfg.irq_vcpu.iter().enumerate() {
            if v >= cfg.vcpus {
                return Err(VmmError::config(
                    format!("irq_vcpu[{d}]"),
                    v,
                    format!("a VCPU of the guest (0..{})", cfg.vcpus),
                ));
            }
            if v != 0 && cfg.vint.get(d).is_some_and(Option::is_some) {
                return Err(VmmError::config(
                    format!("irq_vcpu[{d}]"),
                    v,
                    "a vINT-managed interrupt goes to VCPU 0 (its pseudo-VCPU runs VCPU 0)",
                ));
            }
        }
        install_kick();
        let image = cfg.image.as_deref().unwrap_or(crate::GUEST_ELF);
        let mut vm = Vm::new(image, cfg.irqchip)?;
        let vcpu = vm.create_vcpu()?;
        let mut aps = Vec::new();
        for id in 1..cfg.vcpus as u64 {
            let mut fd = vm.create_vcpu_at(id, 0, AP_STACK_TOP - 8)?;
            crate::vcpu::set_run_sigmask(&fd)?;
            let kvm_run = fd.get_kvm_run() as *mut kvm_bindings::kvm_run as usize;
            aps.push(Ap {
                fd: Mutex::new(fd),
                tid: AtomicI32::new(0),
                kvm_run,
                entry: AtomicU64::new(0),
                ready: AtomicBool::new(false),
            });
        }
        let dests: Vec<u8> = (0..cfg.devices.len())
            .map(|d| cfg.irq_vcpu.get(d).copied().unwrap_or(0) as u8)
            .collect();
        vm.set_lines(&dests, cfg.injection)?;
        vm.store(shared(S_NCPU), cfg.vcpus as u64)?;
        let khz = vcpu
            .get_tsc_khz()
            .map_err(VmmError::kvm("KVM_GET_TSC_KHZ"))? as u64;
        let ticks = |n: Nanos| n.0.saturating_mul(khz) / 1_000_000;
        vm.store(shared(S_MAGIC), ABI_MAGIC)?;
        vm.store(shared(S_FLAGS), cfg.flags)?;
        for d in 0..cfg.devices.len() {
            let cost = cfg.dsr_costs.get(d).copied().unwrap_or(cfg.dsr_cost);
            vm.store(dev(d, DV_COST), ticks(cost))?;
            let prio = cfg
                .dsr_priorities
                .get(d)
                .copied()
                .unwrap_or_else(|| crate::tasks::default_dsr_priority(d));
            vm.store(dev(d, DV_PRIO), prio)?;
        }
        vm.store(shared(S_GAP_MIN), ticks(cfg.gap_min))?;
        crate::tasks::write_table(&vm, &cfg.tasks, ticks)?;
        let mut backings = Vec::new();
        let mut devs = Vec::new();
        for (i, d) in cfg.devices.iter().enumerate() {
            backings.push(Backing::open(d, &format!("devices[{i}]"))?);
            let kind = match d.kind {
                DeviceKind::Udp { .. } => "udp",
                DeviceKind::Timer { .. } => "timer",
            };
            let mut st = DevState::new(&d.name, kind);
            if let Some(Some(p)) = cfg.vint.get(i) {
                st.counter = Some(Counter::new(
                    p.counter_max(),
                    p.policy,
                    p.period,
                    irqlab_rt::sys::now(),
                ));
            }
            devs.push(Mutex::new(st));
        }
        crate::vcpu::set_run_sigmask(&vcpu)?;
        let kvm_run = {
            let mut v = vcpu;
            let p = v.get_kvm_run() as *mut kvm_bindings::kvm_run as usize;
            (v, p)
        };
        let (vcpu, kvm_run) = kvm_run;
        let ndev = devs.len();
        let shared = Arc::new(Shared {
            vm,
            vcpu: Mutex::new(vcpu),
            aps,
            backings,
            timers: cfg
                .devices
                .iter()
                .map(|d| match d.kind {
                    DeviceKind::Timer { period } => Some(period),
                    DeviceKind::Udp { .. } => None,
                })
                .collect(),
            devs,
            stop: AtomicBool::new(false),
            failure: Mutex::new(None),
            hang: Mutex::new(None),
            ready: AtomicBool::new(false),
            runner_tid: AtomicI32::new(0),
            kvm_run: AtomicUsize::new(kvm_run),
            ranks: (0..ndev)
                .map(|d| cfg.vint.get(d).copied().flatten().map(|p| p.rank))
                .collect(),
            active: (0..ndev).map(|_| AtomicBool::new(false)).collect(),
            runner: AtomicUsize::new(RUNNER_NONE),
            handoff: (Mutex::new(()), Condvar::new()),
            slices: Mutex::new(Vec::new()),
            eois: (0..ndev).map(|_| AtomicU64::new(0)).collect(),
            pseudo: (0..ndev).map(|_| OnceLock::new()).collect(),
            releaser: OnceLock::new(),
            parks: Mutex::new(Vec::new()),
            token_ns: AtomicU64::new(0),
            handoffs: Mutex::new(Vec::new()),
            console: Mutex::new(Vec::new()),
            exits_io: AtomicU64::new(0),
            exits_done: AtomicU64::new(0),
            exits_intr: AtomicU64::new(0),
            pseudo_slices: AtomicU64::new(0),
            reraises: AtomicU64::new(0),
            tsc_khz: AtomicU64::new(khz),
            tsc_samples: Mutex::new(Vec::new()),
            console_limit: cfg.console_limit,
            tasks: cfg.tasks.clone(),
        });

        let mut rt = Runtime::new(cfg.rt.clone())?;
        let cpu = cfg.rt.cpus.first().copied();
        let server = vcpu_server(&mut rt, cfg.vcpu, "vcpu0", cpu)?;
        for (d, p) in cfg.vint.iter().enumerate() {
            let Some(p) = p else { continue };
            let name = format!("pseudo-{}", cfg.devices[d].name);
            let policy = match p.policy {
                Replenish::Deferrable => BudgetPolicy::Deferrable,
                Replenish::Sporadic => BudgetPolicy::Sporadic,
            };
            let server = rt.budget_server(
                &name,
                policy,
                p.budget,
                p.period,
                ServerPriority::Rank(p.rank),
                cpu,
            )?;
            let sh = shared.clone();
            let task = rt.spawn(server, &name, 0, move |ctx| {
                crate::vcpu::pseudo_body(&sh, ctx, d)
            })?;
            let _ = shared.pseudo[d].set(task);
        }
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
                let (n, injected) = crate::host::physical_isr(&sh, d, ev.arrival);
                if let (true, Some(t)) = (injected, sh.pseudo[d].get()) {
                    ev.wake(*t);
                    sh.reschedule();
                }
                n
            })?;
        }
        let sh = shared.clone();
        rt.spawn(server, "vcpu0", 0, move |ctx| {
            crate::vcpu::vcpu_body(&sh, ctx)
        })?;
        for i in 0..shared.aps.len() {
            let name = format!("vcpu{}", i + 1);
            let cpu = cfg.rt.cpus.get(1).copied().or(cpu);
            let server = vcpu_server(&mut rt, cfg.vcpu, &name, cpu)?;
            let sh = shared.clone();
            rt.spawn(server, &name, 0, move |ctx| {
                crate::vcpu::ap_body(&sh, ctx, i)
            })?;
        }
        // The run starts before the VCPU thread can: the guest's own clock
        // (its task releases) never runs ahead of `duration_ns`.
        let t0 = irqlab_rt::sys::now();
        rt.start()?;
        let releaser = if cfg.vint.iter().any(Option::is_some) {
            let sh = shared.clone();
            let h = rt.handle();
            let j = std::thread::Builder::new()
                .name("irqlab-vmm-vint".into())
                .spawn(move || crate::host::releaser(&sh, &h))
                .map_err(VmmError::io("spawn vINT releaser"))?;
            let _ = shared.releaser.set(j.thread().clone());
            Some(j)
        } else {
            None
        };
        let sh = shared.clone();
        let (wd, reraise) = (cfg.watchdog, cfg.reraise);
        let watchdog = std::thread::Builder::new()
            .name("irqlab-vmm-watchdog".into())
            .spawn(move || crate::host::watchdog(&sh, wd, reraise))
            .map_err(VmmError::io("spawn watchdog"))?;
        Ok(Vmm {
            shared,
            rt: Some(rt),
            watchdog: Some(watchdog),
            releaser,
            t0,
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
    /// The guest-physical word at `addr` now (`None` outside memory).
    pub fn guest_word(&self, addr: u64) -> Option<u64> {
        self.shared.vm.load(addr).ok()
    }
    /// Events of device `d` the guest completed so far.
    pub fn completed(&self, d: usize) -> u64 {
        self.shared.devs.get(d).map_or(0, |m| lock_dev(m).completed)
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
        self.shared.kick_all();
        let rt_report = self.rt.take().map(|rt| rt.stop());
        for w in [self.watchdog.take(), self.releaser.take()]
            .into_iter()
            .flatten()
        {
            let _ = w.join();
        }
        let t_end = irqlab_rt::sys::now();
        let sh = &self.shared;
        let conv = sh.tsc_to_ns();
        let mut devices = Vec::new();
        let mut events = Vec::new();
        for (d, m) in sh.devs.iter().enumerate() {
            let mut st = lock_dev(m);
            // The guest stamps an ISR's end on the last descriptor it saw:
            // give it to every descriptor with that ISR's entry stamp.
            let mut group = (0, 0);
            for e in st.records.iter_mut().rev() {
                if e.raw[3] != 0 {
                    group = (e.raw[0], e.raw[3]);
                } else if e.raw[0] != 0 && e.raw[0] == group.0 {
                    e.raw[3] = group.1;
                }
            }
            for e in st.records.iter_mut() {
                e.isr_ns = conv(e.raw[0]);
                e.dsr_start_ns = conv(e.raw[1]);
                e.dsr_end_ns = conv(e.raw[2]);
                e.isr_end_ns = conv(e.raw[3]);
            }
            let g = (
                sh.vm.load(dev(d, DV_ISR)).unwrap_or(0),
                sh.vm.load(dev(d, DV_DSR)).unwrap_or(0),
            );
            let mut rep = DeviceReport::of(&st, d, g);
            rep.vcpu = sh.vm.lines.get(d).map_or(0, |l| usize::from(l.dest));
            devices.push(rep);
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
        // Mean cost of one of the guest's PING_COUNT timed operations.
        let khz = sh.tsc_khz.load(Ordering::Relaxed).max(1) as f64;
        let per_ping = |w| match sh.vm.load(shared(w)).unwrap_or(0) {
            0 => None,
            t => Some(t as f64 * 1e6 / khz / PING_COUNT as f64),
        };
        let report = VmmReport {
            duration_ns: t_end.saturating_sub(self.t0).0,
            tsc_khz: sh.tsc_khz.load(Ordering::Relaxed),
            console: String::from_utf8_lossy(&lock(&sh.console)).into_owned(),
            heartbeat: sh.vm.load(shared(S_HEARTBEAT)).unwrap_or(0),
            exit_round_trip_ns: per_ping(S_PING_TSC),
            rdtsc_ns: per_ping(S_RDTSC_TSC),
            exits: ExitCounts {
                io: sh.exits_io.load(Ordering::Relaxed),
                done_port: sh.exits_done.load(Ordering::Relaxed),
                intr: sh.exits_intr.load(Ordering::Relaxed),
                pseudo_slices: sh.pseudo_slices.load(Ordering::Relaxed),
                reraises: sh.reraises.load(Ordering::Relaxed),
                ioapic_eoi: sh.eois.iter().map(|c| c.load(Ordering::Relaxed)).collect(),
            },
            runner_slices: lock(&sh.slices).clone(),
            vcpus: 1 + sh.aps.len(),
            ap_lapic_ids: sh
                .aps
                .iter()
                .map(|a| {
                    let up = a.ready.load(Ordering::SeqCst);
                    let id = sh.vm.load(shared(S_AP_LAPIC_ID)).unwrap_or(0);
                    (up && id > 0).then(|| id - 1)
                })
                .collect(),
            guest_isr_per_vcpu: (0..1 + sh.aps.len())
                .map(|c| sh.vm.load(shared(S_CPU_ISR + c as u64)).unwrap_or(0))
                .collect(),
            vcpu_parks: lock(&sh.parks).clone(),
            pseudo_handoffs: lock(&sh.handoffs).clone(),
            devices,
            events,
            gaps,
            guest: crate::tasks::collect(
                &sh.vm,
                &sh.tasks,
                &conv,
                sh.tsc_khz.load(Ordering::Relaxed),
            ),
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
            self.shared.kick_all();
            if let Some(rt) = self.rt.take() {
                rt.stop();
            }
            for w in [self.watchdog.take(), self.releaser.take()]
                .into_iter()
                .flatten()
            {
                let _ = w.join();
            }
        }
    }
}

impl VmmReport {
    /// The longest host stall of the run, in ns: how late the runtime's
    /// supervisor timer woke, or how long the top half took from an event
    /// to its injection on an unmanaged device (nothing of the VMM's runs
    /// above either; another user's real-time threads can).
    pub fn host_stall_ns(&self) -> Option<u64> {
        let sup = self
            .runtime
            .as_ref()
            .into_iter()
            .flat_map(|r| r.supervisors.iter().filter_map(|s| s.timer_latency.max));
        // A managed interrupt's events may be held by the vINT counter on
        // purpose: only unmanaged devices show the top half's delay.
        let top = self
            .devices
            .iter()
            .filter(|d| !d.managed)
            .filter_map(|d| d.to_inject.max);
        sup.chain(top).max()
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
    /// Mean cost of one `rdtsc` in the guest (`FLAG_PING`).
    pub rdtsc_ns: Option<f64>,
    pub exits: ExitCounts,
    pub devices: Vec<DeviceReport>,
    /// Every completed event (up to 65536 per device), host clock.
    pub events: Vec<EventRecord>,
    /// Intervals (host clock) in which the busy guest did not run.
    pub gaps: Vec<(u64, u64)>,
    /// Intervals (host clock) in which the VCPU thread was parked: its
    /// server out of budget.
    pub vcpu_parks: Vec<(u64, u64)>,
    /// Who ran the guest when: the VCPU's own thread or a pseudo-VCPU's
    /// (the first 131072 stretches).
    pub runner_slices: Vec<RunnerSlice>,
    pub vcpus: usize,
    /// Per AP (VCPU 1...): the LAPIC ID it read once up (`None`: it never
    /// reported `PORT_AP_READY`).
    pub ap_lapic_ids: Vec<Option<u64>>,
    /// Device ISRs the guest took on each VCPU (told apart by the stack
    /// the ISR ran on).
    pub guest_isr_per_vcpu: Vec<u64>,
    /// Per pseudo-VCPU slice (host ns, the first 65536): when its thread
    /// asked for the VCPU (kicking the runner) and when it got it.
    pub pseudo_handoffs: Vec<(u64, u64)>,
    /// The guest's scheduler: timer, periodic tasks, their jobs.
    pub guest: GuestSchedReport,
    pub runtime: Option<irqlab_rt::Report>,
}
