//! Boot: the PVH entry (QEMU `-kernel`) and the switch to long mode.
//!
//! What it is: an ELF note of type 18 (`XEN_ELFNOTE_PHYS32_ENTRY`) naming a
//! 32-bit entry point, which QEMU's PVH loader jumps to in flat protected
//! mode with paging off and `%ebx` pointing at the `hvm_start_info`. The stub
//! clears `.bss`, identity-maps 0-4 GiB with 2 MiB pages (RAM, the local
//! APIC at 0xFEE0_0000 and the xHCI BAR all lie below 4 GiB), enables PAE,
//! long mode and SSE, and calls `kmain(start_info)` on the boot stack.
//!
//! Design principles: nothing in Rust runs before SSE is on (the
//! precompiled `core` of the host target uses SSE, e.g. in integer
//! formatting: CR0.EM = 0, CR0.MP = 1, CR4.OSFXSR and CR4.OSXMMEXCPT); the
//! stub keeps `%ebx` untouched until it is handed to Rust; its GDT is
//! replaced by `cpu::init` (which adds the TSS and its IST stacks).

use core::arch::global_asm;

/// Size of the boot stack (also the stack `kmain` and the idle loop use).
pub const BOOT_STACK: usize = 64 * 1024;

#[repr(C, align(4096))]
pub struct PageTables {
    pml4: [u64; 512],
    pdpt: [u64; 512],
    pd: [u64; 4 * 512],
}

#[no_mangle]
static mut BOOT_PT: PageTables = PageTables {
    pml4: [0; 512],
    pdpt: [0; 512],
    pd: [0; 4 * 512],
};

#[repr(C, align(16))]
pub struct Stack(pub [u8; BOOT_STACK]);

#[no_mangle]
static mut BOOT_STACK_MEM: Stack = Stack([0; BOOT_STACK]);

global_asm!(
    r#"
    .section .note.pvh, "a", @note
    .balign 4
    .long 4
    .long 4
    .long 18
    .asciz "Xen"
    .balign 4
    .long pvh_start32

    .section .data
    .balign 16
boot_gdt:
    .quad 0
    .quad 0x00AF9A000000FFFF
    .quad 0x00CF92000000FFFF
boot_gdt_end:
boot_gdt_ptr:
    .word boot_gdt_end - boot_gdt - 1
    .long boot_gdt

    .section .text.boot, "ax"
    .code32
    .globl pvh_start32
pvh_start32:
    cli
    cld
    mov %ebx, %esi
    /* clear .bss (the page tables and the stacks live there) */
    mov $__bss_start, %edi
    mov $__bss_end, %ecx
    sub %edi, %ecx
    xor %eax, %eax
    rep stosb
    /* PML4[0] -> PDPT; PDPT[0..4] -> four page directories */
    mov $BOOT_PT, %edi
    lea 0x1003(%edi), %eax
    mov %eax, (%edi)
    lea 0x2003(%edi), %eax
    lea 0x1000(%edi), %ebx
    mov $4, %ecx
1:
    mov %eax, (%ebx)
    add $0x1000, %eax
    add $8, %ebx
    loop 1b
    /* 2048 2 MiB pages: 0-4 GiB, present, writable, PS */
    lea 0x2000(%edi), %ebx
    mov $0x83, %eax
    mov $2048, %ecx
2:
    mov %eax, (%ebx)
    movl $0, 4(%ebx)
    add $0x200000, %eax
    add $8, %ebx
    loop 2b
    mov %edi, %cr3
    /* CR4: PAE, OSFXSR, OSXMMEXCPT */
    mov %cr4, %eax
    or $0x620, %eax
    mov %eax, %cr4
    /* EFER.LME */
    mov $0xC0000080, %ecx
    rdmsr
    or $0x100, %eax
    wrmsr
    /* CR0: PE, MP, PG; EM and TS clear */
    mov %cr0, %eax
    and $0xFFFFFFF3, %eax
    or $0x80000003, %eax
    mov %eax, %cr0
    lgdt boot_gdt_ptr
    ljmp $0x08, $long_entry

    .code64
long_entry:
    mov $0x10, %ax
    mov %ax, %ds
    mov %ax, %es
    mov %ax, %ss
    mov %ax, %fs
    mov %ax, %gs
    lea BOOT_STACK_MEM(%rip), %rsp
    add ${stack}, %rsp
    fninit
    mov %esi, %edi
    xor %ebp, %ebp
    call kmain
3:
    cli
    hlt
    jmp 3b
"#,
    stack = const BOOT_STACK,
    options(att_syntax)
);
