//! The serial console on COM1 (0x3F8), polled.
//!
//! What it is: the kernel's only output; QEMU connects it to stdio and the
//! test parses it. Design principles: polled (no interrupt, so printing
//! works in any context, including exception reports and the top halves);
//! every line is written with interrupts off so lines never interleave.

use core::fmt::{self, Write};

use crate::cpu::{inb, irq_restore, irq_save, outb};

const COM1: u16 = 0x3f8;

pub fn init() {
    outb(COM1 + 1, 0x00); // no interrupts
    outb(COM1 + 3, 0x80); // DLAB
    outb(COM1, 0x01); // 115200 baud
    outb(COM1 + 1, 0x00);
    outb(COM1 + 3, 0x03); // 8N1
    outb(COM1 + 2, 0xc7); // FIFO on, cleared
    outb(COM1 + 4, 0x03); // DTR, RTS
}

fn put(b: u8) {
    // Transmit holding register empty; bounded so a missing UART cannot hang.
    for _ in 0..100_000 {
        if inb(COM1 + 5) & 0x20 != 0 {
            break;
        }
    }
    outb(COM1, b);
}

pub struct Console;

impl Write for Console {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for b in s.bytes() {
            if b == b'\n' {
                put(b'\r');
            }
            put(b);
        }
        Ok(())
    }
}

pub fn print(args: fmt::Arguments) {
    let on = irq_save();
    let _ = Console.write_fmt(args);
    irq_restore(on);
}

#[macro_export]
macro_rules! kprint {
    ($($a:tt)*) => { $crate::serial::print(format_args!($($a)*)) };
}
#[macro_export]
macro_rules! kprintln {
    ($($a:tt)*) => { $crate::serial::print(format_args!("{}\n", format_args!($($a)*))) };
}
