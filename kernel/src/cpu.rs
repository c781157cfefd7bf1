//! The CPU: port and MSR access, the GDT with its TSS and IST stacks, the
//! IDT, and the one entry path every vector takes (`trap_common`).
//!
//! What it is: every interrupt and exception enters through a 16-byte stub
//! that pushes its vector (and a zero where the CPU pushes no error code),
//! then `trap_common` saves the 15 general registers and the whole FPU/SSE
//! state (`fxsave64`) into a [`TrapFrame`] on the vector's IST stack and
//! calls [`crate::trap`]. A context switch is a copy of that frame: the
//! running thread's frame is saved into its thread, the next thread's is
//! copied over it, and `trap_common` restores it and returns with `iretq`.
//!
//! Design principles (the host target's red zone and SSE):
//! * The precompiled `core`/`alloc` of `x86_64-unknown-linux-gnu` assume a
//!   128-byte red zone below `%rsp` and use SSE. Every IDT gate therefore
//!   names an IST stack (the CPU then never pushes onto the interrupted
//!   stack, so a thread's red zone survives), and the FPU/SSE state is
//!   saved before any Rust code of the handler runs (Rust code in the
//!   handler uses the XMM registers too).
//! * Gates are interrupt gates (IF cleared on entry) and no handler sets IF:
//!   a handler cannot be re-entered on its own IST stack. Exceptions (IST1),
//!   NMI/#DF/#MC (IST2), device and timer interrupts (IST3) and the kernel
//!   call `int 0x80` (IST4) have separate stacks, so a fault inside an
//!   interrupt handler is reported on a fresh stack.
//! * Only 7 IST slots exist, so "its own stack" is per kind of vector; the
//!   non-reentrancy above is what makes that sufficient.

use core::arch::{asm, global_asm};
use core::mem::size_of;

use crate::KCell;

pub const KERNEL_CS: u64 = 0x08;
pub const KERNEL_DS: u64 = 0x10;
const TSS_SEL: u16 = 0x18;

/// IST slots (1-based as in the gate descriptor).
pub const IST_EXC: u8 = 1;
pub const IST_FATAL: u8 = 2;
pub const IST_IRQ: u8 = 3;
pub const IST_CALL: u8 = 4;
const IST_SIZE: usize = 32 * 1024;

/// The vector of the kernel call (`int 0x80`).
pub const VEC_CALL: u8 = 0x80;

/// What `trap_common` saves: FPU/SSE state, general registers, the vector,
/// the error code and the CPU's interrupt frame, lowest address first.
#[repr(C, align(16))]
#[derive(Clone, Copy)]
pub struct TrapFrame {
    pub fx: [u8; 512],
    pub rax: u64,
    pub rbx: u64,
    pub rcx: u64,
    pub rdx: u64,
    pub rsi: u64,
    pub rdi: u64,
    pub rbp: u64,
    pub r8: u64,
    pub r9: u64,
    pub r10: u64,
    pub r11: u64,
    pub r12: u64,
    pub r13: u64,
    pub r14: u64,
    pub r15: u64,
    pub vector: u64,
    pub error: u64,
    pub rip: u64,
    pub cs: u64,
    pub rflags: u64,
    pub rsp: u64,
    pub ss: u64,
}

const _: () = assert!(size_of::<TrapFrame>() == 688);

impl TrapFrame {
    /// A frame that starts `entry(arg)` on the stack whose top is `top`
    /// (16-byte aligned), interrupts enabled, FPU/SSE in `fx`.
    pub fn new_thread(entry: extern "C" fn(u64) -> !, arg: u64, top: u64, fx: &[u8; 512]) -> Self {
        TrapFrame {
            fx: *fx,
            rax: 0,
            rbx: 0,
            rcx: 0,
            rdx: 0,
            rsi: 0,
            rdi: arg,
            rbp: 0,
            r8: 0,
            r9: 0,
            r10: 0,
            r11: 0,
            r12: 0,
            r13: 0,
            r14: 0,
            r15: 0,
            vector: 0,
            error: 0,
            rip: entry as usize as u64,
            cs: KERNEL_CS,
            rflags: 0x202,
            // as after a `call`: the return-address slot below an aligned top
            rsp: top - 8,
            ss: KERNEL_DS,
        }
    }
}

#[inline]
pub fn outb(port: u16, v: u8) {
    // SAFETY: port I/O has no memory effects visible to Rust.
    unsafe { asm!("out dx, al", in("dx") port, in("al") v, options(nomem, nostack, preserves_flags)) }
}
#[inline]
pub fn inb(port: u16) -> u8 {
    let v: u8;
    // SAFETY: as `outb`.
    unsafe { asm!("in al, dx", out("al") v, in("dx") port, options(nomem, nostack, preserves_flags)) }
    v
}
#[inline]
pub fn outw(port: u16, v: u16) {
    // SAFETY: as `outb`.
    unsafe { asm!("out dx, ax", in("dx") port, in("ax") v, options(nomem, nostack, preserves_flags)) }
}
#[inline]
pub fn outl(port: u16, v: u32) {
    // SAFETY: as `outb`.
    unsafe { asm!("out dx, eax", in("dx") port, in("eax") v, options(nomem, nostack, preserves_flags)) }
}
#[inline]
pub fn inl(port: u16) -> u32 {
    let v: u32;
    // SAFETY: as `outb`.
    unsafe { asm!("in eax, dx", out("eax") v, in("dx") port, options(nomem, nostack, preserves_flags)) }
    v
}
#[inline]
pub fn rdtsc() -> u64 {
    let lo: u32;
    let hi: u32;
    // SAFETY: reads the time-stamp counter.
    unsafe { asm!("rdtsc", out("eax") lo, out("edx") hi, options(nomem, nostack, preserves_flags)) }
    (u64::from(hi) << 32) | u64::from(lo)
}
pub fn rdmsr(msr: u32) -> u64 {
    let lo: u32;
    let hi: u32;
    // SAFETY: the callers name architectural MSRs.
    unsafe {
        asm!("rdmsr", in("ecx") msr, out("eax") lo, out("edx") hi, options(nomem, nostack, preserves_flags))
    }
    (u64::from(hi) << 32) | u64::from(lo)
}
pub fn wrmsr(msr: u32, v: u64) {
    // SAFETY: the callers name architectural MSRs.
    unsafe {
        asm!("wrmsr", in("ecx") msr, in("eax") v as u32, in("edx") (v >> 32) as u32, options(nostack, preserves_flags))
    }
}
pub fn read_cr2() -> u64 {
    let v: u64;
    // SAFETY: reads CR2.
    unsafe { asm!("mov {}, cr2", out(reg) v, options(nomem, nostack, preserves_flags)) }
    v
}
pub fn cpuid(leaf: u32, sub: u32) -> [u32; 4] {
    let r = core::arch::x86_64::__cpuid_count(leaf, sub);
    [r.eax, r.ebx, r.ecx, r.edx]
}
/// Interrupts off; returns whether they were on.
#[inline]
pub fn irq_save() -> bool {
    let f: u64;
    // SAFETY: reads RFLAGS and clears IF.
    unsafe { asm!("pushfq", "pop {}", "cli", out(reg) f, options(preserves_flags)) }
    f & 0x200 != 0
}
#[inline]
pub fn irq_restore(on: bool) {
    if on {
        // SAFETY: sets IF again, as it was.
        unsafe { asm!("sti", options(nomem, nostack)) }
    }
}
pub fn halt_forever() -> ! {
    loop {
        // SAFETY: stops the CPU with interrupts off.
        unsafe { asm!("cli", "hlt", options(nomem, nostack)) }
    }
}
/// The FPU/SSE state as the CPU holds it now (used as every new thread's
/// initial state, taken right after `fninit` with the default MXCSR).
pub fn fxsave_now() -> [u8; 512] {
    #[repr(C, align(16))]
    struct Fx([u8; 512]);
    let mut fx = Fx([0; 512]);
    // SAFETY: writes 512 bytes into an aligned buffer.
    unsafe { asm!("fxsave64 [{}]", in(reg) fx.0.as_mut_ptr(), options(nostack)) }
    fx.0
}

#[repr(C, packed)]
struct Tss {
    _r0: u32,
    rsp: [u64; 3],
    _r1: u64,
    ist: [u64; 7],
    _r2: u64,
    _r3: u16,
    iomap: u16,
}

#[repr(C, align(16))]
struct IstStacks([[u8; IST_SIZE]; 4]);

static IST_STACKS: KCell<IstStacks> = KCell::new(IstStacks([[0; IST_SIZE]; 4]));
static TSS: KCell<Tss> = KCell::new(Tss {
    _r0: 0,
    rsp: [0; 3],
    _r1: 0,
    ist: [0; 7],
    _r2: 0,
    _r3: 0,
    iomap: 104,
});
static GDT: KCell<[u64; 5]> = KCell::new([0, 0x00AF_9A00_0000_FFFF, 0x00CF_9200_0000_FFFF, 0, 0]);

#[derive(Clone, Copy)]
#[repr(C)]
struct Gate {
    off_lo: u16,
    sel: u16,
    ist: u8,
    attr: u8,
    off_mid: u16,
    off_hi: u32,
    _r: u32,
}
static IDT: KCell<[Gate; 256]> = KCell::new(
    [Gate {
        off_lo: 0,
        sel: 0,
        ist: 0,
        attr: 0,
        off_mid: 0,
        off_hi: 0,
        _r: 0,
    }; 256],
);

#[repr(C, packed)]
struct DescPtr {
    limit: u16,
    base: u64,
}

extern "C" {
    static trap_stubs: u8;
}

/// The IST stack of each kind of vector.
fn ist_of(vector: usize) -> u8 {
    match vector {
        2 | 8 | 18 => IST_FATAL,
        0..=31 => IST_EXC,
        v if v == VEC_CALL as usize => IST_CALL,
        _ => IST_IRQ,
    }
}

/// Loads the kernel's GDT (with the TSS and its IST stacks) and the IDT.
pub fn init() {
    // SAFETY: single CPU, interrupts off, before anything uses these tables.
    unsafe {
        let stacks = IST_STACKS.get();
        let tss = TSS.get();
        for i in 0..4 {
            let top = stacks.0[i].as_ptr() as u64 + IST_SIZE as u64;
            tss.ist[i] = top & !0xf;
        }
        let base = tss as *const Tss as u64;
        let limit = (size_of::<Tss>() - 1) as u64;
        let gdt = GDT.get();
        gdt[3] = (limit & 0xffff)
            | ((base & 0xff_ffff) << 16)
            | (0x89u64 << 40)
            | (((limit >> 16) & 0xf) << 48)
            | (((base >> 24) & 0xff) << 56);
        gdt[4] = base >> 32;
        let gp = DescPtr {
            limit: (size_of::<[u64; 5]>() - 1) as u16,
            base: gdt.as_ptr() as u64,
        };
        asm!(
            "lgdt [{gp}]",
            "push {cs}",
            "lea {tmp}, [rip + 2f]",
            "push {tmp}",
            "retfq",
            "2:",
            "mov ds, {ds:x}",
            "mov es, {ds:x}",
            "mov ss, {ds:x}",
            "ltr {tss:x}",
            gp = in(reg) &gp,
            cs = in(reg) KERNEL_CS,
            tmp = out(reg) _,
            ds = in(reg) KERNEL_DS,
            tss = in(reg) TSS_SEL,
        );
        let idt = IDT.get();
        let stubs = &trap_stubs as *const u8 as u64;
        for (v, g) in idt.iter_mut().enumerate() {
            let off = stubs + 16 * v as u64;
            *g = Gate {
                off_lo: off as u16,
                sel: KERNEL_CS as u16,
                ist: ist_of(v),
                attr: 0x8e,
                off_mid: (off >> 16) as u16,
                off_hi: (off >> 32) as u32,
                _r: 0,
            };
        }
        let ip = DescPtr {
            limit: (size_of::<[Gate; 256]>() - 1) as u16,
            base: idt.as_ptr() as u64,
        };
        asm!("lidt [{}]", in(reg) &ip, options(nostack));
    }
}

global_asm!(
    r#"
    .section .text
    .balign 16
    .globl trap_stubs
trap_stubs:
    .set vec, 0
    .rept 256
    .balign 16
    .if (vec == 8) || ((vec >= 10) && (vec <= 14)) || (vec == 17) || (vec == 21) || (vec == 29) || (vec == 30)
    .else
    pushq $0
    .endif
    pushq $vec
    jmp trap_common
    .set vec, vec + 1
    .endr

    .balign 16
trap_common:
    push %r15
    push %r14
    push %r13
    push %r12
    push %r11
    push %r10
    push %r9
    push %r8
    push %rbp
    push %rdi
    push %rsi
    push %rdx
    push %rcx
    push %rbx
    push %rax
    sub $512, %rsp
    fxsave64 (%rsp)
    cld
    mov %rsp, %rdi
    call trap_entry
    fxrstor64 (%rsp)
    add $512, %rsp
    pop %rax
    pop %rbx
    pop %rcx
    pop %rdx
    pop %rsi
    pop %rdi
    pop %rbp
    pop %r8
    pop %r9
    pop %r10
    pop %r11
    pop %r12
    pop %r13
    pop %r14
    pop %r15
    add $16, %rsp
    iretq
"#,
    options(att_syntax)
);

/// Names of the exception vectors, for the report.
pub fn exception_name(v: u64) -> &'static str {
    match v {
        0 => "#DE divide error",
        1 => "#DB debug",
        2 => "NMI",
        3 => "#BP breakpoint",
        4 => "#OF overflow",
        5 => "#BR bound range",
        6 => "#UD invalid opcode",
        7 => "#NM device not available",
        8 => "#DF double fault",
        10 => "#TS invalid TSS",
        11 => "#NP segment not present",
        12 => "#SS stack fault",
        13 => "#GP general protection",
        14 => "#PF page fault",
        16 => "#MF x87 error",
        17 => "#AC alignment check",
        18 => "#MC machine check",
        19 => "#XM SIMD exception",
        _ => "exception",
    }
}
