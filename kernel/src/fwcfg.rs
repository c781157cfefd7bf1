//! QEMU's firmware configuration interface (fw_cfg), I/O-port access: how
//! the host hands the kernel a file (`-fw_cfg name=opt/irqlab/spec,file=F`).
//!
//! What it is: the signature check, the file directory (selector 0x19:
//! a big-endian count, then 64-byte entries of size, selector and name),
//! and reading a file byte by byte from the data port.
//!
//! Design principles: read once at boot, bounded (a file larger than the
//! caller's limit is refused, not truncated), no DMA interface.

use alloc::vec::Vec;

use crate::cpu::{inb, outw};

const SELECTOR: u16 = 0x510;
const DATA: u16 = 0x511;
const SIGNATURE: u16 = 0x0000;
const FILE_DIR: u16 = 0x0019;

fn select(s: u16) {
    outw(SELECTOR, s);
}

fn read_bytes(n: usize, out: &mut Vec<u8>) {
    for _ in 0..n {
        out.push(inb(DATA));
    }
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// The contents of the fw_cfg file `name`, if QEMU has one (at most
/// `limit` bytes; a larger file is an error).
pub fn file(name: &str, limit: usize) -> Result<Option<Vec<u8>>, &'static str> {
    select(SIGNATURE);
    let mut sig = Vec::new();
    read_bytes(4, &mut sig);
    if sig != b"QEMU" {
        return Ok(None);
    }
    select(FILE_DIR);
    let mut hdr = Vec::new();
    read_bytes(4, &mut hdr);
    let count = be32(&hdr).min(4096);
    let mut found = None;
    for _ in 0..count {
        let mut e = Vec::with_capacity(64);
        read_bytes(64, &mut e);
        let size = be32(&e[0..4]) as usize;
        let sel = u16::from_be_bytes([e[4], e[5]]);
        let nm = &e[8..64];
        let len = nm.iter().position(|&c| c == 0).unwrap_or(nm.len());
        if &nm[..len] == name.as_bytes() {
            found = Some((sel, size));
        }
    }
    let Some((sel, size)) = found else { return Ok(None) };
    if size > limit {
        return Err("fw_cfg file larger than the limit");
    }
    select(sel);
    let mut data = Vec::with_capacity(size);
    read_bytes(size, &mut data);
    Ok(Some(data))
}
