//! Memory: the C memory primitives the compiler calls, and the heap behind
//! `alloc`.
//!
//! What it is: `memcpy`, `memmove`, `memset`, `memcmp` and `bcmp` (the host
//! target's `core` expects libc to provide them; this kernel links no libc)
//! written with string instructions so the compiler cannot turn them back
//! into calls to themselves; and a size-class allocator over a static arena
//! in `.bss`.
//!
//! Design principles: the heap is O(1) per operation (segregated free lists
//! of power-of-two classes from 16 bytes; a block is carved from the arena
//! aligned to its size, so every alignment up to the class size holds) and
//! never returns memory to the arena, which is enough for a kernel whose
//! data structures (irqlab-core's heaps and queues, the rings) are sized at
//! start and then recycle their blocks. It runs with interrupts off (the
//! top halves do not allocate, but the kernel calls do). Exhaustion is
//! reported by `alloc_error` -> the panic handler, never silent.

use core::alloc::{GlobalAlloc, Layout};
use core::arch::asm;
use core::ptr::null_mut;

use crate::cpu::{irq_restore, irq_save};
use crate::KCell;

/// # Safety
/// `dst` and `src` valid for `n` bytes, not overlapping.
#[no_mangle]
pub unsafe extern "C" fn memcpy(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    asm!("rep movsb", inout("rdi") dst => _, inout("rsi") src => _, inout("rcx") n => _, options(nostack, preserves_flags));
    dst
}

/// # Safety
/// `dst` and `src` valid for `n` bytes.
#[no_mangle]
pub unsafe extern "C" fn memmove(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    if (dst as usize) <= (src as usize) || (dst as usize) >= (src as usize).wrapping_add(n) {
        return memcpy(dst, src, n);
    }
    // overlapping with dst above src: copy backwards
    asm!(
        "std",
        "rep movsb",
        "cld",
        inout("rdi") dst.add(n - 1) => _,
        inout("rsi") src.add(n - 1) => _,
        inout("rcx") n => _,
        options(nostack)
    );
    dst
}

/// # Safety
/// `dst` valid for `n` bytes.
#[no_mangle]
pub unsafe extern "C" fn memset(dst: *mut u8, c: i32, n: usize) -> *mut u8 {
    asm!("rep stosb", inout("rdi") dst => _, inout("rcx") n => _, in("al") c as u8, options(nostack, preserves_flags));
    dst
}

/// # Safety
/// `a` and `b` valid for `n` bytes.
#[no_mangle]
pub unsafe extern "C" fn memcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    let mut i = 0;
    while i < n {
        let (x, y) = (
            core::ptr::read_volatile(a.add(i)),
            core::ptr::read_volatile(b.add(i)),
        );
        if x != y {
            return i32::from(x) - i32::from(y);
        }
        i += 1;
    }
    0
}

/// # Safety
/// `a` and `b` valid for `n` bytes.
#[no_mangle]
pub unsafe extern "C" fn bcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    memcmp(a, b, n)
}

/// The heap arena: 24 MiB of `.bss` (QEMU's default machine has 128 MiB).
const ARENA: usize = 24 << 20;
const CLASSES: usize = 32;
const MIN_SHIFT: u32 = 4;

#[repr(C, align(4096))]
struct Arena([u8; ARENA]);
static ARENA_MEM: KCell<Arena> = KCell::new(Arena([0; ARENA]));

struct Heap {
    next: usize,
    free: [*mut u8; CLASSES],
    used: usize,
    peak: usize,
}
static HEAP: KCell<Heap> = KCell::new(Heap {
    next: 0,
    free: [null_mut(); CLASSES],
    used: 0,
    peak: 0,
});

fn class_of(l: Layout) -> usize {
    let n = l.size().max(l.align()).max(1 << MIN_SHIFT);
    (n.next_power_of_two().trailing_zeros() - MIN_SHIFT) as usize
}

pub struct KernelHeap;

unsafe impl GlobalAlloc for KernelHeap {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let c = class_of(l);
        if c >= CLASSES {
            return null_mut();
        }
        let on = irq_save();
        let h = HEAP.get();
        let size = 1usize << (c as u32 + MIN_SHIFT);
        let p = if !h.free[c].is_null() {
            let p = h.free[c];
            h.free[c] = *(p as *mut *mut u8);
            p
        } else {
            let start = (h.next + size - 1) & !(size - 1);
            if start + size > ARENA {
                null_mut()
            } else {
                h.next = start + size;
                ARENA_MEM.get().0.as_mut_ptr().add(start)
            }
        };
        if !p.is_null() {
            h.used += size;
            h.peak = h.peak.max(h.used);
        }
        irq_restore(on);
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        let c = class_of(l);
        let on = irq_save();
        let h = HEAP.get();
        *(p as *mut *mut u8) = h.free[c];
        h.free[c] = p;
        h.used -= 1 << (c as u32 + MIN_SHIFT);
        irq_restore(on);
    }
}

/// Bytes in use now, at the peak, and carved from the arena so far.
pub fn heap_stats() -> (usize, usize, usize) {
    let on = irq_save();
    // SAFETY: read with interrupts off.
    let h = unsafe { HEAP.get() };
    let r = (h.used, h.peak, h.next);
    irq_restore(on);
    r
}
