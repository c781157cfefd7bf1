//! irqlab-kernel: a Quest-like x86_64 kernel whose scheduler is
//! `irqlab-core` (QUEST-VCPU: Main VCPUs as sporadic servers, I/O VCPUs as
//! PIBS), with an xHCI driver that gives each I/O class its own interrupter
//! and MSI-X vector (USB-DIFFSERV §III), run under QEMU.
//!
//! What it is: `boot` (PVH entry, long mode, SSE), `cpu` (GDT/TSS/IST,
//! IDT, the trap path and its frames), `serial` (COM1), `mem` (memory
//! primitives and the heap), `apic` (TSC clock, LAPIC one-shot timer,
//! watchdog), `sched` (threads and VCPUs, carried out as irqlab-core
//! decides), `pci` (bus scan, BARs, MSI-X), `xhci` (the host controller
//! driver), `usb` (enumeration, the FTDI class driver, fds in I/O classes,
//! top and bottom halves), `run` (the runs, their threads and checks),
//! `cmdline` (the PVH command line). `kmain` boots, reads the command line (QEMU `-append`), runs
//! the selected run and exits QEMU through `isa-debug-exit` with
//! [`EXIT_PASS`] or [`EXIT_FAIL`].
//!
//! Design principles: every scheduling decision is the core's (DESIGN §2,
//! "irqlab-core owns every scheduling decision"); the kernel feeds it `now`
//! and the events and carries out its `Dispatch`; all kernel state is
//! touched with interrupts off (one CPU, handlers never re-enabled), which
//! is what makes [`KCell`] sound; device-derived values are checked and
//! reported, never unwrapped.
#![no_std]
#![no_main]

extern crate alloc;

use core::cell::UnsafeCell;
use core::panic::PanicInfo;

pub mod apic;
pub mod boot;
pub mod cmdline;
pub mod cpu;
pub mod fwcfg;
pub mod mem;
pub mod pci;
pub mod run;
pub mod sched;
pub mod serial;
pub mod spec;
pub mod usb;
pub mod xhci;

#[global_allocator]
static HEAP: mem::KernelHeap = mem::KernelHeap;

/// QEMU's exit status for a passing run (`isa-debug-exit`: 2v+1 for v=0x10).
pub const EXIT_PASS: u8 = 0x10;
/// QEMU's exit status for a failing run (33 is pass, 35 is fail).
pub const EXIT_FAIL: u8 = 0x11;

/// A cell for kernel state on a single CPU, accessed only with interrupts
/// off (in a handler, or during boot before `sti`).
pub struct KCell<T>(UnsafeCell<T>);

// SAFETY: one CPU; every access is made with interrupts off (module doc).
unsafe impl<T> Sync for KCell<T> {}

impl<T> KCell<T> {
    pub const fn new(v: T) -> Self {
        KCell(UnsafeCell::new(v))
    }
    /// # Safety
    /// Interrupts off, and no other reference from `get` alive.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn get(&self) -> &mut T {
        &mut *self.0.get()
    }
}

/// Ends the run: QEMU exits with status `2 * code + 1`.
pub fn exit(code: u8) -> ! {
    cpu::outb(0xf4, code);
    cpu::halt_forever()
}

#[panic_handler]
fn panic(info: &PanicInfo) -> ! {
    cpu::irq_save();
    kprintln!("PANIC: {}", info);
    exit(EXIT_FAIL)
}

/// The precompiled `alloc` refers to it; with `panic = "abort"` it is never
/// called.
#[no_mangle]
pub extern "C" fn rust_eh_personality() {}

#[no_mangle]
pub extern "C" fn _Unwind_Resume() -> ! {
    exit(EXIT_FAIL)
}

/// The common trap handler: every vector arrives here on its IST stack.
#[no_mangle]
extern "C" fn trap_entry(f: &mut cpu::TrapFrame) {
    let v = f.vector;
    if v < 32 {
        fatal_exception(f);
    }
    if v == u64::from(apic::VEC_SPURIOUS) {
        return;
    }
    let now = apic::now();
    if apic::watchdog_expired(now) {
        kprintln!("WATCHDOG: still running at {} ns (rip {:#x})", now, f.rip);
        exit(EXIT_FAIL);
    }
    // SAFETY: interrupts off (trap).
    let Some(k) = (unsafe { sched::KERNEL.get() }).as_mut() else {
        // no run started (the self-tests): only the watchdog's tick
        apic::eoi();
        apic::arm_at(now, u64::MAX);
        return;
    };
    k.enter(f, now);
    if v == u64::from(apic::VEC_TIMER) {
        apic::eoi();
        k.timer_irqs += 1;
        // SAFETY: interrupts off (trap).
        let armed = unsafe { apic::CLOCK.get().armed_at };
        k.timer_late_max = k.timer_late_max.max(now.saturating_sub(armed));
    } else if v == u64::from(cpu::VEC_CALL) {
        if !sched::call(k, f, now) {
            run::usb_call(k, f, now);
        }
    } else if (u64::from(xhci::VEC_XHCI0)..u64::from(xhci::VEC_XHCI0) + xhci::MAX_INTRS as u64).contains(&v) {
        if let Some(u) = usb::usb() {
            u.top_half(k, (v - u64::from(xhci::VEC_XHCI0)) as usize, now);
        }
        apic::eoi();
    }
    // SAFETY: interrupts off (trap).
    let end = unsafe { RUN_END.get() };
    if now >= end.1 {
        if spec::active() {
            spec::finish(k, end.0, now);
        }
        run::finish(k, end.0, now);
    }
    k.resched(f, now);
}

/// The run's start and end (ns).
pub static RUN_END: KCell<(u64, u64)> = KCell::new((0, u64::MAX));

fn fatal_exception(f: &cpu::TrapFrame) -> ! {
    kprintln!(
        "EXCEPTION vector={} ({}) error={:#x} rip={:#x} cr2={:#x} rsp={:#x}",
        f.vector,
        cpu::exception_name(f.vector),
        f.error,
        f.rip,
        cpu::read_cr2(),
        f.rsp
    );
    exit(EXIT_FAIL)
}

#[no_mangle]
extern "C" fn kmain(start_info: u32) -> ! {
    serial::init();
    cpu::init();
    let args = cmdline::Args::from_pvh(start_info);
    kprintln!(
        "irqlab-kernel: PVH boot, start_info at {:#x}, cmdline \"{}\"",
        start_info,
        args.raw()
    );
    apic::init();
    // SAFETY: read after `apic::init`, interrupts off.
    let (tsc_hz, lapic_hz) = unsafe { (apic::CLOCK.get().tsc_hz, apic::CLOCK.get().lapic_hz) };
    kprintln!(
        "clock: tsc {} Hz, lapic timer {} Hz (PIT-calibrated), lapic id {}, cpuid max leaf {:#x}, tsc-deadline {}",
        tsc_hz,
        lapic_hz,
        apic::lapic_id(),
        cpu::cpuid(0, 0)[0],
        cpu::cpuid(1, 0)[2] & (1 << 24) != 0
    );
    let watchdog = args.num("watchdog_ms").unwrap_or(10_000);
    apic::set_watchdog(apic::now().saturating_add(watchdog.saturating_mul(1_000_000)));
    selftest(&args);
    if args.has("debug", "runs") {
        run::DUMP_RUNS.store(1, core::sync::atomic::Ordering::Relaxed);
    }
    match args.get("run") {
        Some("sched") => start_sched(&args),
        Some("usb") => start_usb(&args),
        Some("spec") => start_spec(&args),
        Some("boot") | None => {}
        Some(other) => {
            kprintln!("unknown run \"{}\"", other);
            exit(EXIT_FAIL)
        }
    }
    let mut v = alloc::vec::Vec::new();
    for i in 0..1000u64 {
        v.push(i * i);
    }
    let sum: u64 = v.iter().sum();
    let (used, peak, carved) = mem::heap_stats();
    kprintln!(
        "heap: vec sum {} used {} peak {} carved {}",
        sum,
        used,
        peak,
        carved
    );
    exit(EXIT_PASS)
}

/// Starts `run=sched` (see `run`): never returns; the timer ends the run.
fn start_sched(args: &cmdline::Args) -> ! {
    sched::init(args.has("falsify", "no-enforce"), args.has("inherit", "strict"));
    let k = sched::kernel();
    k.charge_system = args.has("charge", "system");
    if let Err(e) = run::setup_sched(k) {
        kprintln!("setup failed: {}", e);
        exit(EXIT_FAIL);
    }
    let now = apic::now();
    let dur = args.num("duration_ms").unwrap_or(300).saturating_mul(1_000_000);
    // SAFETY: interrupts still off.
    unsafe { *RUN_END.get() = (now, now + dur) };
    kprintln!(
        "run=sched: {} VCPUs, {} threads, {} ms",
        k.vcpus.len(),
        k.threads.len(),
        dur / 1_000_000
    );
    // The first decision happens in the first trap: a timer due now.
    apic::arm_at(now, now);
    // SAFETY: the boot stack becomes the idle loop's until the first trap
    // switches away (it is never returned to).
    unsafe { core::arch::asm!("sti") };
    loop {
        // SAFETY: waits for interrupts.
        unsafe { core::arch::asm!("hlt") };
    }
}

/// Starts `run=usb` (see `usb` and `run`): enumerates, then readers,
/// bottom halves and a CPU-bound VCPU run until every read is done.
fn start_usb(args: &cmdline::Args) -> ! {
    sched::init(args.has("falsify", "no-enforce"), args.has("inherit", "strict"));
    if let Err(e) = usb::init(
        apic::lapic_id(),
        args.has("falsify", "int0"),
        args.num("classes").unwrap_or(2) as usize,
    ) {
        kprintln!("usb: {}", e);
        exit(EXIT_FAIL);
    }
    let k = sched::kernel();
    if let Some(n) = args.num("max_repl") {
        k.max_repl = n as usize;
    }
    k.charge_system = args.has("charge", "system");
    let reads = args.num("reads").unwrap_or(100);
    if let Err(e) = run::setup_usb(
        k,
        reads,
        !args.has("rebind", "off"),
        args.num("io_util").unwrap_or(10),
    ) {
        kprintln!("setup failed: {}", e);
        exit(EXIT_FAIL);
    }
    let now = apic::now();
    // SAFETY: interrupts still off.
    unsafe { *RUN_END.get() = (now, u64::MAX) };
    kprintln!(
        "run=usb: {} VCPUs, {} threads, {} reads per fd",
        k.vcpus.len(),
        k.threads.len(),
        reads
    );
    apic::arm_at(now, now);
    // SAFETY: as in `start_sched`.
    unsafe { core::arch::asm!("sti") };
    loop {
        // SAFETY: waits for interrupts.
        unsafe { core::arch::asm!("hlt") };
    }
}

/// Starts `run=spec` (see `spec`): the host's workload from fw_cfg.
fn start_spec(args: &cmdline::Args) -> ! {
    sched::init(args.has("falsify", "no-enforce"), args.has("inherit", "strict"));
    let s = match spec::load() {
        Ok(s) => s,
        Err(e) => {
            kprintln!("spec: {}", e);
            exit(EXIT_FAIL)
        }
    };
    if s.uses_usb() {
        if let Err(e) = usb::init(apic::lapic_id(), args.has("falsify", "int0"), s.io_count()) {
            kprintln!("usb: {}", e);
            exit(EXIT_FAIL);
        }
    }
    let k = sched::kernel();
    if let Some(n) = args.num("max_repl") {
        k.max_repl = n as usize;
    }
    k.charge_system = args.has("charge", "system");
    // (printed first: QEMU's UART takes emulated time per character, which
    // would otherwise delay the tasks' first releases)
    kprintln!("run=spec: {} VCPUs, {} tasks", s.vcpus.len(), s.tasks.len());
    if let Err(e) = spec::setup(k, s) {
        kprintln!("spec: {}", e);
        exit(EXIT_FAIL);
    }
    let now = apic::now();
    let end = s.duration.map_or(u64::MAX, |d| now.saturating_add(d));
    // SAFETY: interrupts still off.
    unsafe { *RUN_END.get() = (now, end) };
    apic::arm_at(now, now);
    // SAFETY: as in `start_sched`.
    unsafe { core::arch::asm!("sti") };
    loop {
        // SAFETY: waits for interrupts.
        unsafe { core::arch::asm!("hlt") };
    }
}

/// `selftest=...`: deliberate faults that show the exception report and
/// the watchdog work (tests/python/test_kernel.py runs them).
fn selftest(args: &cmdline::Args) {
    match args.get("selftest") {
        Some("pagefault") => {
            kprintln!("selftest: reading unmapped address 0x1_0000_0000_0");
            // SAFETY: deliberately faults (above the 4 GiB identity map).
            let x = unsafe { core::ptr::read_volatile(0x10_0000_0000 as *const u64) };
            kprintln!("unreachable {}", x);
        }
        Some("hang") => {
            kprintln!("selftest: spinning with interrupts on");
            apic::arm_at(apic::now(), u64::MAX);
            // SAFETY: interrupts on for the timer (the watchdog's tick).
            unsafe { core::arch::asm!("sti") };
            loop {
                core::hint::spin_loop();
            }
        }
        Some(other) => kprintln!("selftest: unknown \"{}\"", other),
        None => {}
    }
}
