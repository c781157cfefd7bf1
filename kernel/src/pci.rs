//! PCI configuration space (mechanism #1, ports 0xCF8/0xCFC), the bus scan,
//! and MSI-X programming.
//!
//! What it is: `find(vendor, device)` scans every bus/device/function,
//! `bar_mem` decodes a memory BAR (32- or 64-bit), `MsiX` locates a
//! function's MSI-X capability and programs its table entries (one
//! LAPIC vector per entry, fixed delivery, edge) through the BAR that holds
//! the table.
//!
//! Design principles: everything read from the device is checked (a BAR
//! that is I/O or unassigned, a missing capability, a table BIR or offset
//! out of the BAR) and returned as an error string, never unwrapped.

use crate::cpu::{inl, outl};

#[derive(Clone, Copy, Debug)]
pub struct Func {
    pub bus: u8,
    pub dev: u8,
    pub func: u8,
}

fn addr(f: Func, off: u8) -> u32 {
    0x8000_0000
        | (u32::from(f.bus) << 16)
        | (u32::from(f.dev) << 11)
        | (u32::from(f.func) << 8)
        | u32::from(off & 0xfc)
}

pub fn read32(f: Func, off: u8) -> u32 {
    outl(0xcf8, addr(f, off));
    inl(0xcfc)
}

pub fn write32(f: Func, off: u8, v: u32) {
    outl(0xcf8, addr(f, off));
    outl(0xcfc, v);
}

pub fn read16(f: Func, off: u8) -> u16 {
    (read32(f, off) >> ((off & 2) * 8)) as u16
}

pub fn write16(f: Func, off: u8, v: u16) {
    let shift = (off & 2) * 8;
    let old = read32(f, off) & !(0xffff << shift);
    write32(f, off, old | (u32::from(v) << shift));
}

/// The first function with this vendor and device id.
pub fn find(vendor: u16, device: u16) -> Option<(Func, u32)> {
    for bus in 0..=255u8 {
        for dev in 0..32u8 {
            for func in 0..8u8 {
                let f = Func { bus, dev, func };
                let id = read32(f, 0);
                if id == 0xffff_ffff {
                    if func == 0 {
                        break;
                    }
                    continue;
                }
                if id as u16 == vendor && (id >> 16) as u16 == device {
                    return Some((f, read32(f, 8) >> 8));
                }
                // single-function device: skip functions 1-7
                if func == 0 && read32(f, 0x0c) & 0x0080_0000 == 0 {
                    break;
                }
            }
        }
    }
    None
}

/// Where `bar_mem` places a BAR the firmware left unassigned.
const ASSIGN_BASE: u64 = 0xe000_0000;

/// The memory BAR `n`: (physical address, size); assigned here if the
/// firmware did not.
pub fn bar_mem(f: Func, n: u8) -> Result<(u64, u64), &'static str> {
    let off = 0x10 + 4 * n;
    let lo = read32(f, off);
    if lo & 1 != 0 {
        return Err("BAR is an I/O BAR");
    }
    let is64 = (lo >> 1) & 3 == 2;
    let hi = if is64 { read32(f, off + 4) } else { 0 };
    // memory decoding off while the BAR reads back its size mask
    let cmd = read16(f, 4);
    write16(f, 4, cmd & !0x0002);
    // size: write all ones, read back, restore
    write32(f, off, 0xffff_ffff);
    let szlo = read32(f, off) & !0xf;
    write32(f, off, lo);
    let mut size = u64::from(!szlo).wrapping_add(1) & 0xffff_ffff;
    if is64 {
        write32(f, off + 4, 0xffff_ffff);
        let szhi = read32(f, off + 4);
        write32(f, off + 4, hi);
        size = (!((u64::from(szhi) << 32) | u64::from(szlo))).wrapping_add(1);
    }
    let mut base = (u64::from(hi) << 32) | u64::from(lo & !0xf);
    let restore = |r| {
        write16(f, 4, cmd);
        r
    };
    if size == 0 || size > 0x1000_0000 {
        return restore(Err("BAR size out of range"));
    }
    if base == 0 {
        // Firmware that assigns no BARs (qboot): place it ourselves, in the
        // PCI hole below the IOAPIC/LAPIC, aligned to its size.
        base = (ASSIGN_BASE + size - 1) & !(size - 1);
        write32(f, off, base as u32 | (lo & 0xf));
        if is64 {
            write32(f, off + 4, 0);
        }
    }
    if base + size > 0x1_0000_0000 {
        return restore(Err("BAR above 4 GiB (outside the identity map)"));
    }
    restore(Ok((base, size)))
}

/// Memory space and bus mastering on, legacy INTx off.
pub fn enable_mmio_dma(f: Func) {
    let cmd = read16(f, 4);
    write16(f, 4, cmd | 0x0002 | 0x0004 | 0x0400);
}

/// A capability's offset in configuration space.
pub fn find_cap(f: Func, id: u8) -> Option<u8> {
    if read16(f, 6) & 0x10 == 0 {
        return None;
    }
    let mut p = (read32(f, 0x34) & 0xfc) as u8;
    for _ in 0..48 {
        if p < 0x40 {
            return None;
        }
        let hdr = read32(f, p);
        if hdr as u8 == id {
            return Some(p);
        }
        p = ((hdr >> 8) & 0xfc) as u8;
    }
    None
}

/// A function's MSI-X capability and table.
pub struct MsiX {
    pub cap: u8,
    pub table: usize,
    pub size: u16,
}

impl MsiX {
    /// Locates the table (it must lie in memory BAR `bar` at `base`/`len`).
    pub fn new(f: Func, bar: u8, base: u64, len: u64) -> Result<MsiX, &'static str> {
        let cap = find_cap(f, 0x11).ok_or("no MSI-X capability")?;
        let ctrl = read16(f, cap + 2);
        let t = read32(f, cap + 4);
        if (t & 7) as u8 != bar {
            return Err("MSI-X table in another BAR");
        }
        let size = (ctrl & 0x7ff) + 1;
        let off = u64::from(t & !7);
        if off + 16 * u64::from(size) > len {
            return Err("MSI-X table outside its BAR");
        }
        Ok(MsiX {
            cap,
            table: (base + off) as usize,
            size,
        })
    }

    /// Entry `i` -> LAPIC `vector` on the CPU with APIC id `apic`, unmasked.
    pub fn set(&self, i: u16, apic: u32, vector: u8) -> Result<(), &'static str> {
        if i >= self.size {
            return Err("MSI-X entry beyond the table");
        }
        let e = (self.table + 16 * i as usize) as *mut u32;
        // SAFETY: the table lies inside the BAR (checked in `new`), which is
        // identity-mapped; 32-bit accesses as the PCI spec requires.
        unsafe {
            core::ptr::write_volatile(e, 0xfee0_0000 | (apic << 12));
            core::ptr::write_volatile(e.add(1), 0);
            core::ptr::write_volatile(e.add(2), u32::from(vector));
            core::ptr::write_volatile(e.add(3), 0);
        }
        Ok(())
    }

    /// MSI-X on, function mask off.
    pub fn enable(&self, f: Func) {
        let ctrl = read16(f, self.cap + 2);
        write16(f, self.cap + 2, (ctrl | 0x8000) & !0x4000);
    }
}
