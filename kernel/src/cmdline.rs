//! The kernel command line (QEMU `-append`), from the PVH start info.
//!
//! What it is: `key=value` words (e.g. `run=sched falsify=int0`), read
//! once at boot. Design principles: the start info's magic is checked and
//! the string is bounded (at most 1 KiB, ASCII), so a bad pointer or a
//! missing `-append` gives an empty command line, not a fault.

const PVH_MAGIC: u32 = 0x336e_c578;
const MAX: usize = 1024;

pub struct Args {
    buf: [u8; MAX],
    len: usize,
}

impl Args {
    pub fn from_pvh(start_info: u32) -> Args {
        let mut a = Args {
            buf: [0; MAX],
            len: 0,
        };
        if start_info == 0 {
            return a;
        }
        let p = start_info as usize as *const u32;
        // SAFETY: QEMU passes the physical address of `hvm_start_info`
        // (identity-mapped); the magic is checked before anything else.
        unsafe {
            if core::ptr::read_volatile(p) != PVH_MAGIC {
                return a;
            }
            let cmd = core::ptr::read_volatile(p.add(6) as *const u64) as usize;
            if cmd == 0 || cmd >= 0x1_0000_0000 {
                return a;
            }
            let s = cmd as *const u8;
            while a.len < MAX {
                let b = core::ptr::read_volatile(s.add(a.len));
                if b == 0 || !b.is_ascii() {
                    break;
                }
                a.buf[a.len] = b;
                a.len += 1;
            }
        }
        a
    }
    pub fn raw(&self) -> &str {
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
    pub fn get(&self, key: &str) -> Option<&str> {
        self.raw().split_ascii_whitespace().find_map(|w| {
            let (k, v) = w.split_once('=')?;
            (k == key).then_some(v)
        })
    }
    pub fn num(&self, key: &str) -> Option<u64> {
        self.get(key)?.parse().ok()
    }
    pub fn has(&self, key: &str, value: &str) -> bool {
        self.get(key).is_some_and(|v| v.split(',').any(|x| x == value))
    }
}
