//! Time: the TSC as the kernel's clock, the local APIC timer as its one
//! timer, both calibrated against the PIT.
//!
//! What it is: `now()` is nanoseconds since boot from `rdtsc`; `arm_at(t)`
//! programs the LAPIC timer in one-shot mode to fire at `t` (the core's
//! `next_update`, the LITMUS^RT reservation contract of DESIGN §2: update
//! time, call the scheduler, arm the timer); the watchdog deadline is
//! checked on every trap, and the timer is never armed further out than
//! `MAX_ARM`, so a kernel that stops making progress with interrupts on is
//! caught; one that hangs with interrupts off is caught by the host's
//! `timeout`.
//!
//! Design principles: one calibration at boot (PIT channel 2 gate, 20 ms)
//! gives both the TSC and the LAPIC timer rates, so the two clocks agree
//! under TCG with or without `-icount` (QEMU's LAPIC and PIT follow its
//! virtual clock; its TSC follows the host's TSC without `-icount`).
//! Conversions are integer (a 32.32 fixed-point multiplier).

use core::ptr::{read_volatile, write_volatile};

use crate::cpu::{inb, outb, rdmsr, rdtsc, wrmsr};
use crate::KCell;

pub const VEC_TIMER: u8 = 0x20;
pub const VEC_SPURIOUS: u8 = 0xff;
/// The timer is never armed further out than this (the watchdog's tick).
pub const MAX_ARM_NS: u64 = 5_000_000;

const LAPIC_ID: usize = 0x20;
const LAPIC_EOI: usize = 0xb0;
const LAPIC_SVR: usize = 0xf0;
const LAPIC_LVT_TIMER: usize = 0x320;
const LAPIC_INIT: usize = 0x380;
const LAPIC_CUR: usize = 0x390;
const LAPIC_DIV: usize = 0x3e0;

pub struct Clock {
    pub base: usize,
    pub tsc0: u64,
    pub tsc_hz: u64,
    pub lapic_hz: u64,
    /// ns = (tsc - tsc0) * ns_mult >> 32
    ns_mult: u128,
    pub watchdog_ns: u64,
    pub armed_at: u64,
}

pub static CLOCK: KCell<Clock> = KCell::new(Clock {
    base: 0,
    tsc0: 0,
    tsc_hz: 1,
    lapic_hz: 1,
    ns_mult: 0,
    watchdog_ns: u64::MAX,
    armed_at: 0,
});

fn reg(off: usize) -> *mut u32 {
    // SAFETY: CLOCK.base is set once in `init`, before any other access.
    (unsafe { CLOCK.get().base } + off) as *mut u32
}
fn rd(off: usize) -> u32 {
    // SAFETY: the LAPIC page is identity-mapped; 32-bit aligned registers.
    unsafe { read_volatile(reg(off)) }
}
fn wr(off: usize, v: u32) {
    // SAFETY: as `rd`.
    unsafe { write_volatile(reg(off), v) }
}

/// Enables the LAPIC and calibrates the TSC and the LAPIC timer.
pub fn init() {
    // SAFETY: single CPU, interrupts off, during boot.
    let c = unsafe { CLOCK.get() };
    legacy_pic_off();
    let apic_base = rdmsr(0x1b);
    wrmsr(0x1b, apic_base | (1 << 11));
    c.base = (apic_base & 0xf_ffff_f000) as usize;
    wr(LAPIC_SVR, 0x100 | u32::from(VEC_SPURIOUS));
    wr(LAPIC_DIV, 0xb); // divide by 1
    wr(LAPIC_LVT_TIMER, 1 << 16); // masked during calibration
                                  // PIT channel 2, mode 0, 20 ms; its output (port 0x61 bit 5) rises at
                                  // the terminal count.
    let ticks: u32 = 1_193_182 / 50;
    let gate = inb(0x61) & !0x03;
    outb(0x61, gate);
    outb(0x43, 0xb0);
    outb(0x42, ticks as u8);
    outb(0x42, (ticks >> 8) as u8);
    wr(LAPIC_INIT, u32::MAX);
    let t0 = rdtsc();
    outb(0x61, gate | 0x01);
    let mut spins: u64 = 0;
    while inb(0x61) & 0x20 == 0 {
        spins += 1;
        if spins > 2_000_000_000 {
            break;
        }
    }
    let t1 = rdtsc();
    let left = rd(LAPIC_CUR);
    outb(0x61, gate);
    let ns = u64::from(ticks) * 1_000_000_000 / 1_193_182;
    c.tsc_hz = ((t1 - t0) as u128 * 1_000_000_000 / ns as u128).max(1) as u64;
    c.lapic_hz = (u64::from(u32::MAX - left) as u128 * 1_000_000_000 / ns as u128).max(1) as u64;
    c.ns_mult = (1_000_000_000u128 << 32) / c.tsc_hz as u128;
    c.tsc0 = t1;
    wr(LAPIC_INIT, 0);
    wr(LAPIC_LVT_TIMER, u32::from(VEC_TIMER)); // one-shot
}

/// Remaps the 8259 PICs to vectors 0xf0-0xff (away from the exceptions:
/// the firmware leaves IRQ 0 on vector 8, the #DF vector) and masks every
/// line; the kernel takes only LAPIC and MSI-X interrupts.
fn legacy_pic_off() {
    for (cmd, data, base, cascade) in [(0x20u16, 0x21u16, 0xf0u8, 4u8), (0xa0, 0xa1, 0xf8, 2)] {
        outb(cmd, 0x11);
        outb(data, base);
        outb(data, cascade);
        outb(data, 0x01);
        outb(data, 0xff);
    }
}

pub fn lapic_id() -> u32 {
    rd(LAPIC_ID) >> 24
}

/// Nanoseconds since calibration.
#[inline]
pub fn now() -> u64 {
    // SAFETY: read-only after `init`.
    let c = unsafe { CLOCK.get() };
    tsc_to_ns(c, rdtsc())
}

#[inline]
pub fn tsc_to_ns(c: &Clock, tsc: u64) -> u64 {
    ((tsc.saturating_sub(c.tsc0) as u128 * c.ns_mult) >> 32) as u64
}

/// Arms the one-shot timer for `deadline` (ns), at most `MAX_ARM_NS` ahead.
pub fn arm_at(now: u64, deadline: u64) {
    // SAFETY: called with interrupts off (trap context or boot).
    let c = unsafe { CLOCK.get() };
    let d = deadline.min(now + MAX_ARM_NS);
    c.armed_at = d;
    let delta = d.saturating_sub(now);
    let count = (delta as u128 * c.lapic_hz as u128 / 1_000_000_000).clamp(1, u32::MAX as u128);
    wr(LAPIC_INIT, count as u32);
}

pub fn eoi() {
    wr(LAPIC_EOI, 0);
}

/// Sets the watchdog: the run fails if it is still going at `deadline`.
pub fn set_watchdog(deadline: u64) {
    // SAFETY: interrupts off (boot).
    unsafe { CLOCK.get().watchdog_ns = deadline };
}

/// `true` when the watchdog's deadline has passed.
pub fn watchdog_expired(now: u64) -> bool {
    // SAFETY: read of a word set at boot.
    now >= unsafe { CLOCK.get().watchdog_ns }
}
