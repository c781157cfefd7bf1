//! The xHCI host controller driver for QEMU's `qemu-xhci` (1b36:000d).
//!
//! What it is: controller reset and set-up (DCBAA, scratchpads if asked
//! for, the command ring, one event ring with a one-segment ERST per
//! interrupter used, one MSI-X table entry and LAPIC vector per
//! interrupter), port reset, Enable Slot, Address Device, control transfers
//! on endpoint 0 (descriptors, Set Configuration), Configure Endpoint for
//! bulk IN/OUT endpoints, and transfer rings on which Normal TRBs are
//! queued with an explicit Interrupter Target. The layouts are those of the
//! xHCI specification (rev. 1.2: §5 registers, §6.2 contexts, §6.4 TRBs,
//! §6.5 ERST).
//!
//! Design principles (USB-DIFFSERV §III): one interrupter per I/O class,
//! each with its own event ring and its own MSI-X vector, so the completion
//! of a transfer is delivered to the handler -- and then the I/O VCPU -- of
//! the class that queued it, never to a shared handler that would have to
//! serve every class at one priority (the priority inversion of the single
//! interrupter Linux uses). Interrupter 0 takes command completions and
//! port events (QEMU sends those to interrupter 0 only), and endpoint 0's
//! transfers; enumeration polls it with its interrupts off. The run-time
//! path only queues TRBs and drains event rings: no allocation, no wait.
//! Memory is identity-mapped, so a buffer's address is its DMA address;
//! every structure is allocated once, aligned as the spec requires, below
//! 4 GiB. Everything read from the controller or a device is checked.

use alloc::alloc::{alloc_zeroed, Layout};
use alloc::vec::Vec;
use core::fmt;
use core::ptr::{read_volatile, write_volatile};
use core::sync::atomic::{compiler_fence, Ordering};

use crate::pci::{self, Func, MsiX};

pub const QEMU_XHCI: (u16, u16) = (0x1b36, 0x000d);
/// LAPIC vector of interrupter `i`: `VEC_XHCI0 + i`.
pub const VEC_XHCI0: u8 = 0x40;
/// Interrupters the driver can set up (0 for commands, one per I/O class).
pub const MAX_INTRS: usize = 4;
const RING_TRBS: usize = 256;
const EVENT_TRBS: usize = 256;

// TRB types (xHCI §6.4.6)
pub const TRB_NORMAL: u32 = 1;
const TRB_SETUP: u32 = 2;
const TRB_DATA: u32 = 3;
const TRB_STATUS: u32 = 4;
const TRB_LINK: u32 = 6;
const TRB_ENABLE_SLOT: u32 = 9;
const TRB_ADDRESS_DEVICE: u32 = 11;
const TRB_CONFIGURE_EP: u32 = 12;
pub const TRB_TRANSFER_EVENT: u32 = 32;
const TRB_CMD_COMPLETION: u32 = 33;
pub const TRB_PORT_STATUS: u32 = 34;

pub const CC_SUCCESS: u32 = 1;
pub const CC_SHORT_PACKET: u32 = 13;

/// A driver error: what failed, and the value that made it fail.
#[derive(Clone, Copy, Debug)]
pub struct Error(pub &'static str, pub u64);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{} ({:#x})", self.0, self.1)
    }
}

/// A Transfer Request Block (xHCI §4.11, §6.4).
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default)]
pub struct Trb {
    pub param: u64,
    pub status: u32,
    pub control: u32,
}

impl Trb {
    pub fn kind(&self) -> u32 {
        (self.control >> 10) & 0x3f
    }
    pub fn cc(&self) -> u32 {
        self.status >> 24
    }
    pub fn slot(&self) -> u8 {
        (self.control >> 24) as u8
    }
    /// Endpoint (device context index) of a transfer event.
    pub fn ep(&self) -> u8 {
        ((self.control >> 16) & 0x1f) as u8
    }
}

/// Zeroed, aligned memory that is never freed (identity-mapped: its
/// address is its DMA address).
pub fn dma_alloc(size: usize, align: usize) -> Result<usize, Error> {
    let l = Layout::from_size_align(size, align).map_err(|_| Error("bad DMA layout", size as u64))?;
    // SAFETY: non-zero size.
    let p = unsafe { alloc_zeroed(l) } as usize;
    if p == 0 {
        return Err(Error("out of DMA memory", size as u64));
    }
    Ok(p)
}

fn r32(a: usize) -> u32 {
    // SAFETY: `a` is a register of the controller's BAR (identity-mapped).
    unsafe { read_volatile(a as *const u32) }
}
fn w32(a: usize, v: u32) {
    // SAFETY: as `r32`.
    unsafe { write_volatile(a as *mut u32, v) }
}
fn w64(a: usize, v: u64) {
    w32(a, v as u32);
    w32(a + 4, (v >> 32) as u32);
}

/// A producer ring (command or transfer): a Link TRB in the last slot
/// points back to the start and toggles the cycle bit.
pub struct Ring {
    pub base: usize,
    enq: usize,
    cycle: bool,
}

impl Ring {
    pub fn new() -> Result<Ring, Error> {
        let base = dma_alloc(RING_TRBS * 16, 4096)?;
        Ok(Ring {
            base,
            enq: 0,
            cycle: true,
        })
    }
    fn write(&self, i: usize, t: Trb, cycle: bool) {
        let p = (self.base + 16 * i) as *mut Trb;
        // SAFETY: `i < RING_TRBS`, inside the ring's allocation; the
        // control word (with the cycle bit that hands the TRB to the
        // controller) is written last.
        unsafe {
            write_volatile(&mut (*p).param, t.param);
            write_volatile(&mut (*p).status, t.status);
            compiler_fence(Ordering::SeqCst);
            write_volatile(&mut (*p).control, (t.control & !1) | u32::from(cycle));
        }
    }
    /// Queues `t` (its cycle bit is set here); returns its address.
    pub fn push(&mut self, t: Trb) -> u64 {
        let at = self.base + 16 * self.enq;
        self.write(self.enq, t, self.cycle);
        self.enq += 1;
        if self.enq == RING_TRBS - 1 {
            let link = Trb {
                param: self.base as u64,
                status: 0,
                control: (TRB_LINK << 10) | 2,
            };
            self.write(self.enq, link, self.cycle);
            self.enq = 0;
            self.cycle = !self.cycle;
        }
        at as u64
    }
}

/// An event ring (one segment) and its consumer state.
pub struct EventRing {
    pub base: usize,
    pub erst: usize,
    deq: usize,
    cycle: bool,
}

impl EventRing {
    fn new() -> Result<EventRing, Error> {
        let base = dma_alloc(EVENT_TRBS * 16, 4096)?;
        let erst = dma_alloc(64, 64)?;
        // ERST entry (xHCI §6.5): segment base, size in TRBs
        // SAFETY: 16 bytes of a fresh 64-byte allocation.
        unsafe {
            write_volatile(erst as *mut u64, base as u64);
            write_volatile((erst + 8) as *mut u32, EVENT_TRBS as u32);
        }
        Ok(EventRing {
            base,
            erst,
            deq: 0,
            cycle: true,
        })
    }
    /// The next event, if the controller has written one.
    pub fn pop(&mut self) -> Option<Trb> {
        let p = (self.base + 16 * self.deq) as *const Trb;
        // SAFETY: inside the ring's allocation; the controller writes it.
        let t = unsafe { read_volatile(p) };
        if (t.control & 1 != 0) != self.cycle {
            return None;
        }
        self.deq += 1;
        if self.deq == EVENT_TRBS {
            self.deq = 0;
            self.cycle = !self.cycle;
        }
        Some(t)
    }
    pub fn deq_addr(&self) -> u64 {
        (self.base + 16 * self.deq) as u64
    }
}

pub struct Xhci {
    pub func: Func,
    pub bar: usize,
    op: usize,
    rt: usize,
    db: usize,
    pub max_slots: u8,
    pub max_intrs: u16,
    pub max_ports: u8,
    pub hciversion: u16,
    ctx: usize,
    dcbaa: usize,
    cmd: Ring,
    pub ev: Vec<EventRing>,
    pub msix: MsiX,
    /// Port events seen while enumerating.
    pub port_events: u64,
}

/// A speed code of PORTSC (xHCI §7.2.2.1.1, default protocol speed IDs).
pub fn speed_name(s: u8) -> &'static str {
    match s {
        1 => "full",
        2 => "low",
        3 => "high",
        4 => "super",
        _ => "?",
    }
}

impl Xhci {
    /// Finds the controller, resets and starts it with `intrs` interrupters
    /// (each with an event ring and MSI-X vector `VEC_XHCI0 + i` to LAPIC
    /// `apic`), their interrupts still disabled (`enable_interrupts`).
    pub fn init(intrs: usize, apic: u32) -> Result<Xhci, Error> {
        let (func, class) =
            pci::find(QEMU_XHCI.0, QEMU_XHCI.1).ok_or(Error("no qemu-xhci (1b36:000d) on the PCI bus", 0))?;
        if class != 0x0c_0330 {
            return Err(Error("not an xHCI class code", u64::from(class)));
        }
        let (base, len) = pci::bar_mem(func, 0).map_err(|e| Error(e, 0))?;
        pci::enable_mmio_dma(func);
        let bar = base as usize;
        let caplen = r32(bar) & 0xff;
        let hciversion = (r32(bar) >> 16) as u16;
        let hcs1 = r32(bar + 4);
        let hcs2 = r32(bar + 8);
        let hcc1 = r32(bar + 0x10);
        let dboff = (r32(bar + 0x14) & !3) as usize;
        let rtsoff = (r32(bar + 0x18) & !0x1f) as usize;
        if caplen < 0x20 || dboff as u64 >= len || rtsoff as u64 >= len {
            return Err(Error("capability registers out of range", u64::from(caplen)));
        }
        let max_slots = hcs1 as u8;
        let max_intrs = ((hcs1 >> 8) & 0x7ff) as u16;
        let max_ports = (hcs1 >> 24) as u8;
        if usize::from(max_intrs) < intrs || intrs > MAX_INTRS || intrs == 0 {
            return Err(Error("not enough interrupters", u64::from(max_intrs)));
        }
        if max_slots == 0 || max_ports == 0 {
            return Err(Error("no slots or ports", u64::from(hcs1)));
        }
        let ctx = if hcc1 & 4 != 0 { 64 } else { 32 };
        let msix = MsiX::new(func, 0, base, len).map_err(|e| Error(e, 0))?;
        let op = bar + caplen as usize;
        let mut x = Xhci {
            func,
            bar,
            op,
            rt: bar + rtsoff,
            db: bar + dboff,
            max_slots,
            max_intrs,
            max_ports,
            hciversion,
            ctx,
            dcbaa: 0,
            cmd: Ring::new()?,
            ev: Vec::new(),
            msix,
            port_events: 0,
        };
        // Stop, then reset (xHCI §4.2): HCH, then HCRST and CNR clear.
        w32(op, r32(op) & !1);
        x.wait(|| r32(op + 4) & 1 != 0, "controller did not halt")?;
        w32(op, 2);
        x.wait(
            || r32(op) & 2 == 0 && r32(op + 4) & (1 << 11) == 0,
            "controller reset did not finish",
        )?;
        let slots = max_slots.min(16);
        w32(op + 0x38, u32::from(slots));
        // DCBAA (entry 0: the scratchpad array, if the controller asks).
        x.dcbaa = dma_alloc(8 * (usize::from(slots) + 1), 64)?;
        let scratch = (((hcs2 >> 21) & 0x1f) << 5) | (hcs2 >> 27);
        if scratch > 0 {
            let arr = dma_alloc(8 * scratch as usize, 64)?;
            for i in 0..scratch as usize {
                let page = dma_alloc(4096, 4096)?;
                // SAFETY: inside `arr`.
                unsafe { write_volatile((arr + 8 * i) as *mut u64, page as u64) };
            }
            // SAFETY: entry 0 of the DCBAA.
            unsafe { write_volatile(x.dcbaa as *mut u64, arr as u64) };
        }
        w64(op + 0x30, x.dcbaa as u64);
        w64(op + 0x18, x.cmd.base as u64 | 1);
        for i in 0..intrs {
            let er = EventRing::new()?;
            let ir = x.rt + 0x20 + 32 * i;
            w32(ir + 4, 0); // IMOD: QEMU stores it and never applies it
            w32(ir + 8, 1); // ERSTSZ: one segment
            w64(ir + 0x18, er.base as u64);
            w32(ir + 0x10, er.erst as u32); // ERSTBA (low, then high:
            w32(ir + 0x14, 0); //              QEMU resets the ring on the high write)
            w32(ir, 1); // IMAN: clear IP, IE off until enumeration is done
            x.msix
                .set(i as u16, apic, VEC_XHCI0 + i as u8)
                .map_err(|e| Error(e, i as u64))?;
            x.ev.push(er);
        }
        x.msix.enable(func);
        // Run with interrupts enabled (INTE); per-interrupter IE gates them.
        w32(op, 1 | 4);
        x.wait(|| r32(op + 4) & 1 == 0, "controller did not start")?;
        Ok(x)
    }

    fn wait(&self, mut done: impl FnMut() -> bool, what: &'static str) -> Result<(), Error> {
        let deadline = crate::apic::now() + 500_000_000;
        while !done() {
            if crate::apic::now() > deadline {
                return Err(Error(what, u64::from(r32(self.op + 4))));
            }
            core::hint::spin_loop();
        }
        Ok(())
    }

    /// IMAN.IE on for interrupter `i` (enumeration is done).
    pub fn enable_interrupter(&self, i: usize) {
        w32(self.rt + 0x20 + 32 * i, 3);
    }

    /// Top-half acknowledgement of interrupter `i`: IMAN.IP cleared (RW1C,
    /// IE kept). Returns whether IP was set.
    pub fn ack(&self, i: usize) -> bool {
        if i >= self.ev.len() {
            return false;
        }
        let a = self.rt + 0x20 + 32 * i;
        let iman = r32(a);
        w32(a, (iman & 2) | 1);
        iman & 1 != 0
    }

    /// Tells interrupter `i` how far its event ring is consumed, clearing
    /// the Event Handler Busy flag (QEMU raises the vector again if events
    /// are left).
    pub fn update_erdp(&self, i: usize) {
        let Some(ev) = self.ev.get(i) else { return };
        let a = self.rt + 0x20 + 32 * i + 0x18;
        let d = ev.deq_addr();
        w32(a + 4, (d >> 32) as u32);
        w32(a, d as u32 | 8);
    }

    pub fn ring_doorbell(&self, slot: u8, target: u8) {
        w32(self.db + 4 * usize::from(slot), u32::from(target));
    }

    pub fn portsc(&self, port: u8) -> u32 {
        r32(self.op + 0x400 + 0x10 * (usize::from(port) - 1))
    }

    /// Polls interrupter 0 for the completion of the command at `at`.
    fn wait_command(&mut self, at: u64) -> Result<Trb, Error> {
        let deadline = crate::apic::now() + 500_000_000;
        loop {
            while let Some(e) = self.ev[0].pop() {
                self.update_erdp(0);
                match e.kind() {
                    TRB_CMD_COMPLETION if e.param == at => {
                        if e.cc() != CC_SUCCESS {
                            return Err(Error("command failed, completion code", u64::from(e.cc())));
                        }
                        return Ok(e);
                    }
                    TRB_PORT_STATUS => self.port_events += 1,
                    _ => {}
                }
            }
            if crate::apic::now() > deadline {
                return Err(Error("command timed out", at));
            }
        }
    }

    fn command(&mut self, t: Trb) -> Result<Trb, Error> {
        let at = self.cmd.push(t);
        self.ring_doorbell(0, 0);
        self.wait_command(at)
    }

    /// Polls interrupter 0 for a transfer event of `slot`/`ep` (endpoint 0
    /// during enumeration). Returns the event.
    fn wait_transfer(&mut self, slot: u8, ep: u8) -> Result<Trb, Error> {
        let deadline = crate::apic::now() + 500_000_000;
        loop {
            while let Some(e) = self.ev[0].pop() {
                self.update_erdp(0);
                match e.kind() {
                    TRB_TRANSFER_EVENT if e.slot() == slot && e.ep() == ep => {
                        if e.cc() != CC_SUCCESS && e.cc() != CC_SHORT_PACKET {
                            return Err(Error("transfer failed, completion code", u64::from(e.cc())));
                        }
                        return Ok(e);
                    }
                    TRB_PORT_STATUS => self.port_events += 1,
                    _ => {}
                }
            }
            if crate::apic::now() > deadline {
                return Err(Error("transfer timed out on slot", u64::from(slot)));
            }
        }
    }

    /// Resets a USB 2 port with a device (xHCI §4.3.1); returns its speed.
    /// USB 3 ports reach Enabled without a reset.
    pub fn reset_port(&mut self, port: u8) -> Result<u8, Error> {
        let a = self.op + 0x400 + 0x10 * (usize::from(port) - 1);
        let sc = r32(a);
        if sc & 1 == 0 {
            return Err(Error("no device on port", u64::from(port)));
        }
        // keep PP (bit 9); never write 1 to PED (bit 1, RW1C) or the change bits
        let keep = sc & (1 << 9);
        if sc & 2 == 0 {
            w32(a, keep | (1 << 4));
            self.wait(
                || r32(a) & (1 << 21) != 0 && r32(a) & (1 << 4) == 0,
                "port reset did not finish",
            )?;
        }
        let sc = r32(a);
        w32(a, keep | (sc & (0x7f << 17))); // clear the change bits
        if sc & 2 == 0 {
            return Err(Error("port not enabled after reset, PORTSC", u64::from(sc)));
        }
        Ok(((sc >> 10) & 0xf) as u8)
    }

    pub fn enable_slot(&mut self) -> Result<u8, Error> {
        let e = self.command(Trb {
            param: 0,
            status: 0,
            control: TRB_ENABLE_SLOT << 10,
        })?;
        let slot = e.slot();
        if slot == 0 || slot > self.max_slots.min(16) {
            return Err(Error("Enable Slot returned a bad slot id", u64::from(slot)));
        }
        Ok(slot)
    }

    /// Address Device (xHCI §4.3.3): slot and endpoint 0 contexts.
    pub fn address_device(&mut self, slot: u8, port: u8, speed: u8) -> Result<Device, Error> {
        let ctx = self.ctx;
        let out = dma_alloc(32 * ctx, 64)?;
        let input = dma_alloc(33 * ctx, 64)?;
        // SAFETY: DCBAA entry `slot` (slot <= MaxSlotsEn).
        unsafe { write_volatile((self.dcbaa + 8 * usize::from(slot)) as *mut u64, out as u64) };
        let ep0 = Ring::new()?;
        let mps: u32 = match speed {
            2 => 8,
            1 | 3 => 64,
            _ => 512,
        };
        let d = Device {
            slot,
            port,
            speed,
            ctx,
            input,
            out,
            ep0,
            bulk: Vec::new(),
        };
        d.zero_input();
        d.input_w(0, 1, 0b11); // add slot, EP0
        d.input_w(1, 0, (1 << 27) | (u32::from(speed) << 20));
        d.input_w(1, 1, u32::from(port) << 16);
        d.input_w(2, 1, (3 << 1) | (4 << 3) | (mps << 16)); // CErr 3, control
        d.input_w(2, 2, d.ep0.base as u32 | 1);
        d.input_w(2, 3, 0);
        d.input_w(2, 4, 8);
        self.command(Trb {
            param: input as u64,
            status: 0,
            control: (TRB_ADDRESS_DEVICE << 10) | (u32::from(slot) << 24),
        })?;
        Ok(d)
    }

    /// A control IN transfer on endpoint 0 into `buf` (`len` bytes).
    pub fn control_in(&mut self, d: &mut Device, setup: [u8; 8], buf: usize, len: u16) -> Result<(), Error> {
        let param = u64::from_le_bytes(setup);
        let trt = if len > 0 { 3 << 16 } else { 0 };
        d.ep0.push(Trb {
            param,
            status: 8,
            control: (TRB_SETUP << 10) | (1 << 6) | trt,
        });
        if len > 0 {
            d.ep0.push(Trb {
                param: buf as u64,
                status: u32::from(len),
                control: (TRB_DATA << 10) | (1 << 16),
            });
        }
        // status stage: OUT after an IN data stage, IN when there is none
        let dir = if len > 0 { 0 } else { 1 << 16 };
        d.ep0.push(Trb {
            param: 0,
            status: 0,
            control: (TRB_STATUS << 10) | (1 << 5) | dir,
        });
        self.ring_doorbell(d.slot, 1);
        self.wait_transfer(d.slot, 1).map(|_| ())
    }

    /// Configure Endpoint (xHCI §4.3.5) for bulk endpoints `eps`
    /// (address, max packet size).
    pub fn configure_bulk(&mut self, d: &mut Device, eps: &[(u8, u16)]) -> Result<(), Error> {
        d.zero_input();
        let mut add = 1u32;
        let mut max_dci = 1u8;
        for &(addr, mps) in eps {
            let num = addr & 0x0f;
            let is_in = addr & 0x80 != 0;
            if num == 0 || mps == 0 {
                return Err(Error("bad bulk endpoint", u64::from(addr)));
            }
            let dci = 2 * num + u8::from(is_in);
            let ring = Ring::new()?;
            let ty: u32 = if is_in { 6 } else { 2 };
            let c = usize::from(dci) + 1;
            d.input_w(c, 0, 0);
            d.input_w(c, 1, (3 << 1) | (ty << 3) | (u32::from(mps) << 16));
            d.input_w(c, 2, ring.base as u32 | 1);
            d.input_w(c, 3, 0);
            d.input_w(c, 4, u32::from(mps));
            add |= 1 << dci;
            max_dci = max_dci.max(dci);
            d.bulk.push(Bulk { addr, dci, mps, ring });
        }
        d.input_w(0, 1, add);
        d.input_w(1, 0, (u32::from(max_dci) << 27) | (u32::from(d.speed) << 20));
        d.input_w(1, 1, u32::from(d.port) << 16);
        self.command(Trb {
            param: d.input as u64,
            status: 0,
            control: (TRB_CONFIGURE_EP << 10) | (u32::from(d.slot) << 24),
        })?;
        Ok(())
    }

    /// Queues a Normal TRB of `len` bytes at `buf` on bulk endpoint `b` of
    /// `d`, completion to interrupter `intr` (the Interrupter Target field,
    /// xHCI §6.4.1.1), and rings the doorbell. Returns the TRB's address.
    pub fn submit(&self, d: &mut Device, b: usize, buf: usize, len: u16, intr: u16) -> Result<u64, Error> {
        let slot = d.slot;
        let e = d
            .bulk
            .get_mut(b)
            .ok_or(Error("no such bulk endpoint", b as u64))?;
        let at = e.ring.push(Trb {
            param: buf as u64,
            status: u32::from(len) | (u32::from(intr & 0x3ff) << 22),
            control: (TRB_NORMAL << 10) | (1 << 5) | (1 << 2), // IOC, ISP
        });
        let dci = e.dci;
        self.ring_doorbell(slot, dci);
        Ok(at)
    }
}

pub struct Bulk {
    pub addr: u8,
    pub dci: u8,
    pub mps: u16,
    pub ring: Ring,
}

/// An addressed USB device: its slot, contexts and endpoint rings.
pub struct Device {
    pub slot: u8,
    pub port: u8,
    pub speed: u8,
    ctx: usize,
    input: usize,
    pub out: usize,
    pub ep0: Ring,
    pub bulk: Vec<Bulk>,
}

impl Device {
    fn zero_input(&self) {
        // SAFETY: the input context allocation is 33 contexts long.
        unsafe { core::ptr::write_bytes(self.input as *mut u8, 0, 33 * self.ctx) };
    }
    /// Input context `c` (0: input control, 1: slot, 2..: endpoint
    /// contexts by DCI + 1), dword `w`.
    fn input_w(&self, c: usize, w: usize, v: u32) {
        // SAFETY: c < 33, w < 8: inside the input context.
        unsafe { write_volatile((self.input + c * self.ctx + 4 * w) as *mut u32, v) };
    }
    /// The slot state of the output slot context (xHCI §6.2.2: 2 addressed,
    /// 3 configured).
    pub fn slot_state(&self) -> u32 {
        // SAFETY: dword 3 of the output slot context.
        unsafe { read_volatile((self.out + 12) as *const u32) >> 27 }
    }
    /// The USB address the controller assigned (output slot context).
    pub fn address(&self) -> u32 {
        // SAFETY: as `slot_state`.
        unsafe { read_volatile((self.out + 12) as *const u32) & 0xff }
    }
}
