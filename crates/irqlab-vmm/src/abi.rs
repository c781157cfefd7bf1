//! The guest <-> VMM ABI, mirrored from `guest/abi.h`: memory map, shared
//! page word indices, descriptor layout, paravirtual ports and vectors.
//!
//! Design principle: one source of truth per side, checked by booting
//! (the integration tests read back every field the guest writes).

pub const ABI_MAGIC: u64 = 0x3156_4d42_4c51_5249;

pub const MEM_SIZE: u64 = 4 << 20;
pub const PML4_ADDR: u64 = 0x1000;
pub const PDPT_ADDR: u64 = 0x2000;
pub const PD_ADDR: u64 = 0x3000;
pub const GDT_ADDR: u64 = 0x8000;
pub const SHARED_ADDR: u64 = 0x10000;
pub const RING_ADDR: u64 = 0x20000;
pub const RING_SLOTS: u64 = 64;
pub const DESC_BYTES: u64 = 2048;
pub const RING_BYTES: u64 = RING_SLOTS * DESC_BYTES;
pub const NDEV: usize = 2;
pub const KERNEL_ADDR: u64 = 0x10_0000;
pub const STACK_TOP: u64 = 0x3f_f000;
pub const AP_STACK_TOP: u64 = 0x3f_0000;
pub const NCPU: usize = 2;
pub const LAPIC_ADDR: u64 = 0xfee0_0000;

pub const PORT_CONSOLE: u16 = 0x3f8;
pub const PORT_DONE: u16 = 0x510;
pub const PORT_PANIC: u16 = 0x511;
pub const PORT_READY: u16 = 0x512;
pub const PORT_EXIT: u16 = 0x513;
pub const PORT_PING: u16 = 0x514;
pub const PORT_START_AP: u16 = 0x515;
pub const PORT_AP_READY: u16 = 0x516;

pub const VEC_BASE: u8 = 0x40;

pub const FLAG_BUSY: u64 = 1;
pub const FLAG_FAULT: u64 = 2;
pub const FLAG_HANG: u64 = 4;
pub const FLAG_TRIPLE: u64 = 8;
pub const FLAG_FLOOD: u64 = 16;
pub const FLAG_PING: u64 = 32;
pub const PING_COUNT: u64 = 10000;

pub const D_SEQ: u64 = 0;
pub const D_LEN: u64 = 1;
pub const D_ISR: u64 = 2;
pub const D_DSR_START: u64 = 3;
pub const D_DSR_END: u64 = 4;
pub const D_ISR_END: u64 = 5;
pub const D_PAYLOAD: u64 = 8 * 8;
pub const MAX_PAYLOAD: usize = (DESC_BYTES - D_PAYLOAD) as usize;

pub const S_MAGIC: u64 = 0;
pub const S_FLAGS: u64 = 1;
pub const S_HEARTBEAT: u64 = 3;
pub const S_PANIC_VEC: u64 = 4;
pub const S_PANIC_ERR: u64 = 5;
pub const S_PANIC_RIP: u64 = 6;
pub const S_GAP_MIN: u64 = 7;
pub const S_GAP_COUNT: u64 = 8;
pub const S_PING_TSC: u64 = 9;
pub const S_CAL_TICKS: u64 = 10;
pub const S_NTASK: u64 = 11;
pub const S_TIMER_MODE: u64 = 12;
pub const S_TIMER_IRQS: u64 = 13;
pub const S_TASK_T0: u64 = 14;
pub const S_JOBS: u64 = 15;
pub const S_RDTSC_TSC: u64 = 32;
pub const S_NCPU: u64 = 33;
pub const S_AP_ENTRY: u64 = 34;
pub const S_AP_LAPIC_ID: u64 = 35;
pub const S_CPU_ISR: u64 = 36;
pub const S_DEV: u64 = 16;
pub const DV_PROD: u64 = 0;
pub const DV_CONS: u64 = 1;
pub const DV_ISR: u64 = 2;
pub const DV_DSR: u64 = 3;
pub const DV_COST: u64 = 4;
pub const DV_PRIO: u64 = 5;
pub const DV_SEEN: u64 = 6;
pub const S_GAPS: u64 = 64;
pub const GAP_SLOTS: u64 = 96;
pub const S_TASK: u64 = 256;
pub const TK_PRIO: u64 = 0;
pub const TK_PERIOD: u64 = 1;
pub const TK_WCET: u64 = 2;
pub const TK_OFFSET: u64 = 3;
pub const TK_RELEASES: u64 = 4;
pub const TK_DONE: u64 = 5;
pub const NTASK_MAX: usize = 4;
pub const CAL_ITERS: u64 = 256;
pub const TIMER_VEC: u8 = 0x30;
pub const JOB_ADDR: u64 = 0x11000;
pub const JOB_SLOTS: u64 = 1024;
pub const JOB_WORDS: u64 = 4;

/// Guest-physical address of shared word `i`.
pub const fn shared(i: u64) -> u64 {
    SHARED_ADDR + 8 * i
}
/// Guest-physical address of word `f` of device `d`'s block.
pub const fn dev(d: usize, f: u64) -> u64 {
    shared(S_DEV + d as u64 * 8 + f)
}
/// Guest-physical address of word `f` of task `t`'s block.
pub const fn task(t: usize, f: u64) -> u64 {
    shared(S_TASK + t as u64 * 8 + f)
}
/// Guest-physical address of word `w` of job record `i`.
pub const fn job(i: u64, w: u64) -> u64 {
    JOB_ADDR + (i * JOB_WORDS + w) * 8
}
/// Guest-physical address of descriptor `i` (mod the ring) of device `d`.
pub const fn desc(d: usize, i: u64) -> u64 {
    RING_ADDR + d as u64 * RING_BYTES + (i % RING_SLOTS) * DESC_BYTES
}
