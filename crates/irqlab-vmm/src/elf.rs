//! A small ELF64 loader for the guest kernel: checks the header (64-bit,
//! little-endian, x86-64, executable), copies each `PT_LOAD` segment to its
//! physical address and returns the entry point.
//!
//! Design principle: the guest image is untrusted input -- every offset and
//! size is bounds-checked and every rejection names the field and the rule.

use crate::abi::{KERNEL_ADDR, MEM_SIZE};
use crate::error::VmmError;

/// A segment to copy: `data` at guest-physical `addr`, then zeros up to
/// `mem_size`.
#[derive(Debug, PartialEq, Eq)]
pub struct Segment<'a> {
    pub addr: u64,
    pub data: &'a [u8],
    pub mem_size: u64,
}

#[derive(Debug)]
pub struct Image<'a> {
    pub entry: u64,
    pub segments: Vec<Segment<'a>>,
}

fn bad(msg: impl Into<String>) -> VmmError {
    VmmError::BadElf(msg.into())
}

fn u16_at(b: &[u8], o: usize) -> Result<u16, VmmError> {
    b.get(o..o + 2)
        .map(|s| u16::from_le_bytes([s[0], s[1]]))
        .ok_or_else(|| bad(format!("truncated at offset {o}")))
}
fn u32_at(b: &[u8], o: usize) -> Result<u32, VmmError> {
    b.get(o..o + 4)
        .and_then(|s| s.try_into().ok())
        .map(u32::from_le_bytes)
        .ok_or_else(|| bad(format!("truncated at offset {o}")))
}
fn u64_at(b: &[u8], o: usize) -> Result<u64, VmmError> {
    b.get(o..o + 8)
        .and_then(|s| s.try_into().ok())
        .map(u64::from_le_bytes)
        .ok_or_else(|| bad(format!("truncated at offset {o}")))
}

/// Parse `b` as the guest kernel; segments must lie in
/// `[KERNEL_ADDR, MEM_SIZE)` (below is the VMM's page tables, GDT, shared
/// page and rings).
pub fn parse(b: &[u8]) -> Result<Image<'_>, VmmError> {
    if b.len() < 64 || &b[0..4] != b"\x7fELF" {
        return Err(bad("e_ident: not an ELF file (magic 7f 45 4c 46 expected)"));
    }
    if b[4] != 2 {
        return Err(bad(format!(
            "e_ident[EI_CLASS] = {}: must be 2 (64-bit)",
            b[4]
        )));
    }
    if b[5] != 1 {
        return Err(bad(format!(
            "e_ident[EI_DATA] = {}: must be 1 (little-endian)",
            b[5]
        )));
    }
    let e_type = u16_at(b, 16)?;
    if e_type != 2 {
        return Err(bad(format!("e_type = {e_type}: must be 2 (ET_EXEC)")));
    }
    let machine = u16_at(b, 18)?;
    if machine != 62 {
        return Err(bad(format!("e_machine = {machine}: must be 62 (x86-64)")));
    }
    let entry = u64_at(b, 24)?;
    let phoff = u64_at(b, 32)?;
    let phentsize = u16_at(b, 54)? as u64;
    let phnum = u16_at(b, 56)? as u64;
    if phentsize < 56 {
        return Err(bad(format!("e_phentsize = {phentsize}: must be >= 56")));
    }
    let mut segments = Vec::new();
    for i in 0..phnum {
        let o = phoff
            .checked_add(i * phentsize)
            .filter(|o| o.checked_add(56).is_some_and(|e| e <= b.len() as u64))
            .ok_or_else(|| bad(format!("program header {i} lies outside the file")))?
            as usize;
        if u32_at(b, o)? != 1 {
            continue; // not PT_LOAD
        }
        let off = u64_at(b, o + 8)?;
        let paddr = u64_at(b, o + 24)?;
        let filesz = u64_at(b, o + 32)?;
        let memsz = u64_at(b, o + 40)?;
        if filesz > memsz {
            return Err(bad(format!(
                "segment {i}: p_filesz {filesz} > p_memsz {memsz}"
            )));
        }
        let data = off
            .checked_add(filesz)
            .filter(|&e| e <= b.len() as u64)
            .map(|e| &b[off as usize..e as usize])
            .ok_or_else(|| bad(format!("segment {i}: file data lies outside the file")))?;
        let end = paddr.checked_add(memsz);
        if paddr < KERNEL_ADDR || end.is_none_or(|e| e > MEM_SIZE) {
            return Err(bad(format!(
                "segment {i}: p_paddr {paddr:#x} + p_memsz {memsz:#x} must lie in [{KERNEL_ADDR:#x}, {MEM_SIZE:#x})"
            )));
        }
        segments.push(Segment {
            addr: paddr,
            data,
            mem_size: memsz,
        });
    }
    if segments.is_empty() {
        return Err(bad("no PT_LOAD segment"));
    }
    if !segments
        .iter()
        .any(|s| entry >= s.addr && entry < s.addr + s.mem_size)
    {
        return Err(bad(format!(
            "e_entry {entry:#x} is not inside a loaded segment"
        )));
    }
    Ok(Image { entry, segments })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_guest_parses() {
        let img = parse(crate::GUEST_ELF).expect("guest parses");
        assert_eq!(img.entry, KERNEL_ADDR);
        assert!(img.segments.iter().all(|s| s.addr >= KERNEL_ADDR));
    }

    #[test]
    fn bad_images_are_rejected_with_the_field() {
        let e = |b: &[u8]| parse(b).unwrap_err().to_string();
        assert!(e(b"hello").contains("not an ELF"));
        let mut g = crate::GUEST_ELF.to_vec();
        g[4] = 1;
        assert!(e(&g).contains("EI_CLASS"));
        let mut g = crate::GUEST_ELF.to_vec();
        g[18] = 3;
        assert!(e(&g).contains("e_machine = 3"));
        let mut g = crate::GUEST_ELF.to_vec();
        g[24..32].copy_from_slice(&0xdead_0000u64.to_le_bytes());
        assert!(e(&g).contains("e_entry"));
        // Truncated: program headers outside the file.
        let g = &crate::GUEST_ELF[..100];
        assert!(e(g).contains("outside the file"));
        // Every prefix is rejected or accepted without panicking.
        for n in 0..crate::GUEST_ELF.len().min(4096) {
            let _ = parse(&crate::GUEST_ELF[..n]);
        }
    }
}
