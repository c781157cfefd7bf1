/* Entry: the VMM starts the guest in 64-bit long mode with paging on and
 * RIP here; set the stack and call the C kernel. */
    .section .text.start, "ax"
    .globl _start
_start:
    mov $0x3ff000, %rsp
    xor %rbp, %rbp
    call kmain
1:  cli
    hlt
    jmp 1b

    .section .note.GNU-stack,"",@progbits
