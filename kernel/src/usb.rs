//! USB: enumeration on the xHCI driver, the FTDI usb-serial class driver,
//! file descriptors with an I/O class each, the top halves (one per
//! interrupter) and the bottom halves (one thread per class, in the class's
//! I/O VCPU).
//!
//! What it is: `init` enumerates every connected port (reset, Enable Slot,
//! Address Device, device and configuration descriptors, Set
//! Configuration, Configure Endpoint for the bulk pair) and opens one fd
//! per FTDI device (QEMU's `usb-serial`, 0403:6001), fd `i` in I/O class
//! `1 + i % classes` (2 classes unless `classes=1`). Class `c` owns interrupter `c`, its event ring and
//! MSI-X vector `VEC_XHCI0 + c`; interrupter 0 keeps commands, port events
//! and endpoint 0. A read (`CALL_READ`) queues one Normal TRB on the fd's
//! bulk IN ring whose Interrupter Target is the fd's class and blocks the
//! reader; `usb_set_iovcpu(fd, class)` (`CALL_SET_IOVCPU`) rebinds the fd:
//! TRBs queued after it target the new class's interrupter.
//!
//! Design principles (USB-DIFFSERV §III; QUEST-VCPU §2.2 and Alg. 10):
//! * The top half (the MSI-X handler of interrupter `i`) only acknowledges
//!   (IMAN.IP), moves the ring's new events to the class's queue, tells the
//!   controller how far it read (ERDP, clearing EHB), and wakes the class's
//!   bottom-half thread with the period of the Main VCPU whose reader the
//!   event completes -- the PIBS I/O VCPU inherits it (Alg. 10). No
//!   allocation (queues are reserved), no copy of data, no wake-up of the
//!   reader.
//! * The bottom half runs in the class's I/O VCPU on its own budget: it
//!   checks the completion, strips the FTDI status bytes (2 per 64-byte
//!   packet), copies the payload to the reader and wakes it.
//! * Every event is attributed to the ring it was found on; the counts
//!   (per fd, per ring, per vector) are what the test checks.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use crate::sched::Kernel;
use crate::xhci::{self, dma_alloc, Device, Error, Trb, Xhci, MAX_INTRS};
use crate::{kprintln, KCell};

/// I/O classes at most (`classes=` on the command line: 1 or 2).
pub const MAX_CLASSES: usize = 2;
pub const FTDI: (u16, u16) = (0x0403, 0x6001);
const QUEUE: usize = 256;

pub struct Pending {
    pub thread: usize,
    pub ubuf: usize,
    pub ulen: usize,
    pub trb: u64,
    pub intr: u16,
    pub mark: crate::sched::Mark,
}

pub struct Fd {
    pub dev: Device,
    pub bulk_in: usize,
    pub bulk_out: usize,
    pub class: usize,
    pub mps: u16,
    /// The DMA buffer of the one outstanding read.
    pub buf: usize,
    /// The DMA buffer of the one outstanding write.
    pub obuf: usize,
    pub pending: Option<Pending>,
    pub pending_out: Option<Pending>,
    /// Write completions found on each interrupter's ring.
    pub out_events: [u64; MAX_INTRS],
    pub writes: u64,
    pub written: u64,
    /// TRBs queued with each Interrupter Target.
    pub submitted: [u64; MAX_INTRS],
    /// Completion events found on each interrupter's ring.
    pub events: [u64; MAX_INTRS],
    /// Completions whose event was on the ring of the interrupter the TRB
    /// targeted.
    pub on_target: u64,
    pub off_target: u64,
    pub completed: u64,
    pub bytes: u64,
    pub rebinds: u64,
}

/// What the bottom half needs for one completion.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct Job {
    pub fd: u64,
    pub cc: u64,
    /// Bytes the device sent (requested minus residue).
    pub len: u64,
    pub dma: u64,
    pub ubuf: u64,
    pub ulen: u64,
    /// Payload bytes given to the reader (set by the bottom half).
    pub result: u64,
    /// 0: a read (bulk IN), 1: a write (bulk OUT).
    pub dir: u64,
}

#[derive(Clone, Copy)]
pub struct Ev {
    pub trb: Trb,
    pub ring: u16,
}

pub struct Class {
    pub vcpu: usize,
    pub bh: usize,
    pub queue: VecDeque<Ev>,
    pub dropped: u64,
    pub jobs: u64,
}

pub struct Usb {
    pub xhci: Xhci,
    pub fds: Vec<Fd>,
    /// Index 0 is unused (class numbers are interrupter numbers).
    pub classes: Vec<Class>,
    pub irqs: [u64; MAX_INTRS],
    pub ring_events: [u64; MAX_INTRS],
    pub other_events: [u64; MAX_INTRS],
    pub stray: u64,
    /// `falsify=int0`: every TRB targets interrupter 0.
    pub all_to_0: bool,
    /// I/O classes in use (1: one interrupter and one I/O VCPU for every
    /// device, as a single-interrupter driver; 2: the default).
    pub nclasses: usize,
}

pub static USB: KCell<Option<Usb>> = KCell::new(None);

pub fn usb() -> Option<&'static mut Usb> {
    // SAFETY: one CPU, interrupts off (trap context or boot).
    unsafe { USB.get() }.as_mut()
}

fn le16(b: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([b[i], b[i + 1]])
}

/// Enumerates every connected port; returns the FTDI fds' devices.
pub fn enumerate(x: &mut Xhci) -> Result<Vec<(Device, u8, u16)>, Error> {
    let mut found = Vec::new();
    let desc = dma_alloc(256, 64)?;
    for port in 1..=x.max_ports {
        if x.portsc(port) & 1 == 0 {
            continue;
        }
        let speed = x.reset_port(port)?;
        let slot = x.enable_slot()?;
        let mut d = x.address_device(slot, port, speed)?;
        // device descriptor
        x.control_in(&mut d, [0x80, 6, 0, 1, 0, 0, 18, 0], desc, 18)?;
        // SAFETY: 256 bytes of DMA memory the controller just wrote.
        let dd = unsafe { core::slice::from_raw_parts(desc as *const u8, 18) }.to_vec();
        if dd[0] != 18 || dd[1] != 1 {
            return Err(Error("bad device descriptor", u64::from(dd[1])));
        }
        let (vid, pid) = (le16(&dd, 8), le16(&dd, 10));
        // configuration descriptor: header, then all of it
        x.control_in(&mut d, [0x80, 6, 0, 2, 0, 0, 9, 0], desc, 9)?;
        // SAFETY: as above.
        let total = le16(unsafe { core::slice::from_raw_parts(desc as *const u8, 9) }, 2).min(256);
        if total < 9 {
            return Err(Error("configuration descriptor too short", u64::from(total)));
        }
        x.control_in(
            &mut d,
            [0x80, 6, 0, 2, 0, 0, total as u8, (total >> 8) as u8],
            desc,
            total,
        )?;
        // SAFETY: as above.
        let cd = unsafe { core::slice::from_raw_parts(desc as *const u8, usize::from(total)) }.to_vec();
        let config = cd[5];
        let mut eps: Vec<(u8, u16)> = Vec::new();
        let mut i = 0;
        while i + 2 <= cd.len() {
            let (len, ty) = (usize::from(cd[i]), cd[i + 1]);
            if len < 2 || i + len > cd.len() {
                break;
            }
            if ty == 5 && len >= 7 && cd[i + 3] & 3 == 2 {
                eps.push((cd[i + 2], le16(&cd, i + 4) & 0x7ff));
            }
            i += len;
        }
        x.control_in(&mut d, [0x00, 9, config, 0, 0, 0, 0, 0], 0, 0)?;
        let bin = eps.iter().position(|e| e.0 & 0x80 != 0);
        let bout = eps.iter().position(|e| e.0 & 0x80 == 0);
        kprintln!(
            "usb port={} speed={} slot={} address={} vid={:04x} pid={:04x} config={} bulk={:?}",
            port,
            xhci::speed_name(speed),
            slot,
            d.address(),
            vid,
            pid,
            config,
            eps
        );
        if (vid, pid) != FTDI {
            continue;
        }
        let (Some(bin), Some(bout)) = (bin, bout) else {
            return Err(Error("FTDI device without a bulk pair", u64::from(slot)));
        };
        let pair = [eps[bin], eps[bout]];
        x.configure_bulk(&mut d, &pair)?;
        if d.slot_state() != 3 {
            return Err(Error(
                "slot not configured after Configure Endpoint",
                u64::from(d.slot_state()),
            ));
        }
        found.push((d, pair[0].0, pair[0].1));
    }
    Ok(found)
}

/// Controller, enumeration, fds; bottom-half threads are added by the run.
pub fn init(apic: u32, all_to_0: bool, nclasses: usize) -> Result<(), Error> {
    let nclasses = nclasses.clamp(1, MAX_CLASSES);
    let mut x = Xhci::init(1 + nclasses, apic)?;
    kprintln!(
        "xhci: {:02x}:{:02x}.{} bar={:#x} hciversion={:#06x} slots={} intrs={} ports={} msix_table={} entries",
        x.func.bus,
        x.func.dev,
        x.func.func,
        x.bar,
        x.hciversion,
        x.max_slots,
        x.max_intrs,
        x.max_ports,
        x.msix.size
    );
    let devs = enumerate(&mut x)?;
    let mut fds = Vec::new();
    for (i, (dev, _addr, mps)) in devs.into_iter().enumerate() {
        let buf = dma_alloc(usize::from(mps.max(64)), 64)?;
        fds.push(Fd {
            bulk_in: 0,
            bulk_out: 1,
            obuf: dma_alloc(64, 64)?,
            pending_out: None,
            out_events: [0; MAX_INTRS],
            writes: 0,
            written: 0,
            class: 1 + i % nclasses,
            mps,
            buf,
            pending: None,
            submitted: [0; MAX_INTRS],
            events: [0; MAX_INTRS],
            on_target: 0,
            off_target: 0,
            completed: 0,
            bytes: 0,
            rebinds: 0,
            dev,
        });
    }
    for i in 0..=nclasses {
        x.enable_interrupter(i);
    }
    // SAFETY: boot, interrupts off.
    unsafe {
        *USB.get() = Some(Usb {
            xhci: x,
            fds,
            classes: Vec::new(),
            irqs: [0; MAX_INTRS],
            ring_events: [0; MAX_INTRS],
            other_events: [0; MAX_INTRS],
            stray: 0,
            all_to_0,
            nclasses,
        })
    };
    Ok(())
}

impl Usb {
    pub fn add_class(&mut self, vcpu: usize, bh: usize) {
        if self.classes.is_empty() {
            // class 0 is interrupter 0's: no bottom half
            self.classes.push(Class {
                vcpu,
                bh,
                queue: VecDeque::new(),
                dropped: 0,
                jobs: 0,
            });
        }
        self.classes.push(Class {
            vcpu,
            bh,
            queue: VecDeque::with_capacity(QUEUE),
            dropped: 0,
            jobs: 0,
        });
    }

    /// The fd and direction (0 IN, 1 OUT) of endpoint `ep` of `slot`.
    fn fd_of(&self, slot: u8, ep: u8) -> Option<(usize, usize)> {
        self.fds.iter().enumerate().find_map(|(i, f)| {
            if f.dev.slot != slot {
                return None;
            }
            let is = |b: usize| f.dev.bulk.get(b).is_some_and(|e| e.dci == ep);
            if is(f.bulk_in) {
                Some((i, 0))
            } else if is(f.bulk_out) {
                Some((i, 1))
            } else {
                None
            }
        })
    }

    /// Top half of interrupter `i` (its MSI-X vector fired).
    pub fn top_half(&mut self, k: &mut Kernel, i: usize, now: u64) {
        if i >= MAX_INTRS {
            return;
        }
        self.irqs[i] += 1;
        self.xhci.ack(i);
        while let Some(t) = self.xhci.ev.get_mut(i).and_then(|r| r.pop()) {
            if t.kind() != xhci::TRB_TRANSFER_EVENT {
                self.other_events[i] += 1;
                continue;
            }
            self.ring_events[i] += 1;
            let Some((f, dir)) = self.fd_of(t.slot(), t.ep()) else {
                self.stray += 1;
                continue;
            };
            let fd = &mut self.fds[f];
            let pending = if dir == 0 {
                fd.events[i] += 1;
                fd.pending.as_mut()
            } else {
                fd.out_events[i] += 1;
                fd.pending_out.as_mut()
            };
            if let Some(p) = pending {
                if p.mark.irq == 0 {
                    p.mark.irq = now;
                }
            }
            let c = fd.class.min(self.classes.len().saturating_sub(1));
            let reader = if dir == 0 {
                fd.pending.as_ref()
            } else {
                fd.pending_out.as_ref()
            }
            .map(|p| p.thread);
            let Some(cl) = self.classes.get_mut(c) else {
                self.stray += 1;
                continue;
            };
            if cl.queue.len() >= QUEUE {
                cl.dropped += 1;
                continue;
            }
            cl.queue.push_back(Ev {
                trb: t,
                ring: i as u16,
            });
            // QUEST-VCPU Alg. 10: the I/O VCPU inherits the reader's period
            let period = reader.and_then(|r| k.main_period_of(r));
            k.wake(now, cl.bh, period);
        }
        self.xhci.update_erdp(i);
    }

    /// `CALL_READ(fd, ubuf, ulen)` from thread `t`: queue, then block.
    pub fn read(&mut self, k: &mut Kernel, t: usize, fd: usize, ubuf: usize, ulen: usize, now: u64) -> u64 {
        let all_to_0 = self.all_to_0;
        let Some(f) = self.fds.get_mut(fd) else {
            return u64::MAX;
        };
        if f.pending.is_some() || ulen == 0 {
            return u64::MAX;
        }
        let intr = if all_to_0 { 0 } else { f.class as u16 };
        let len = f.mps.min(64);
        let trb = match self.xhci.submit(&mut f.dev, f.bulk_in, f.buf, len, intr) {
            Ok(a) => a,
            Err(_) => return u64::MAX,
        };
        f.submitted[usize::from(intr)] += 1;
        let mark = crate::sched::Mark {
            class: f.class,
            fd,
            submit: now,
            ..Default::default()
        };
        f.pending = Some(Pending {
            thread: t,
            ubuf,
            ulen,
            trb,
            intr,
            mark,
        });
        k.block(now, t);
        0
    }

    /// `CALL_WRITE(fd, ubuf, len)` from thread `t` (at most one packet,
    /// 64 bytes): copy to the fd's DMA buffer, queue on the bulk OUT ring
    /// with the class's Interrupter Target, block until the bottom half
    /// has seen the completion.
    pub fn write(&mut self, k: &mut Kernel, t: usize, fd: usize, ubuf: usize, len: usize, now: u64) -> u64 {
        let all_to_0 = self.all_to_0;
        let Some(f) = self.fds.get_mut(fd) else {
            return u64::MAX;
        };
        if f.pending_out.is_some() || len == 0 || len > 64 || ubuf == 0 {
            return u64::MAX;
        }
        // SAFETY: the caller's buffer of `len` bytes (identity-mapped),
        // copied into the 64-byte DMA buffer (len <= 64).
        unsafe { core::ptr::copy_nonoverlapping(ubuf as *const u8, f.obuf as *mut u8, len) };
        let intr = if all_to_0 { 0 } else { f.class as u16 };
        let trb = match self.xhci.submit(&mut f.dev, f.bulk_out, f.obuf, len as u16, intr) {
            Ok(a) => a,
            Err(_) => return u64::MAX,
        };
        let mark = crate::sched::Mark {
            class: f.class,
            fd,
            submit: now,
            ..Default::default()
        };
        f.pending_out = Some(Pending {
            thread: t,
            ubuf,
            ulen: len,
            trb,
            intr,
            mark,
        });
        k.block(now, t);
        0
    }

    /// `CALL_SET_IOVCPU(fd, class)`: `usb_set_iovcpu` of USB-DIFFSERV.
    pub fn set_iovcpu(&mut self, fd: usize, class: usize) -> u64 {
        if class == 0 || class > self.nclasses {
            return u64::MAX;
        }
        match self.fds.get_mut(fd) {
            Some(f) => {
                f.class = class;
                f.rebinds += 1;
                0
            }
            None => u64::MAX,
        }
    }

    /// `CALL_BH_NEXT(class, job)` from bottom-half thread `t`: the next
    /// completion, or block until the top half has one (returns 0).
    pub fn bh_next(&mut self, k: &mut Kernel, t: usize, class: usize, job: usize, now: u64) -> u64 {
        if job == 0 || !job.is_multiple_of(core::mem::align_of::<Job>()) {
            return u64::MAX;
        }
        loop {
            let Some(cl) = self.classes.get_mut(class) else {
                return u64::MAX;
            };
            let Some(ev) = cl.queue.pop_front() else {
                k.block(now, t);
                return 0;
            };
            let Some((f, dir)) = self.fd_of(ev.trb.slot(), ev.trb.ep()) else {
                self.stray += 1;
                continue;
            };
            let fd = &mut self.fds[f];
            let (mps, buf) = (fd.mps.min(64), if dir == 0 { fd.buf } else { fd.obuf });
            let slot = if dir == 0 {
                &mut fd.pending
            } else {
                &mut fd.pending_out
            };
            let Some(p) = slot.as_mut().filter(|p| p.trb == ev.trb.param) else {
                self.stray += 1;
                continue;
            };
            p.mark.bh = now;
            if usize::from(ev.ring) == usize::from(p.intr) {
                fd.on_target += 1;
            } else {
                fd.off_target += 1;
            }
            let residue = u64::from(ev.trb.status & 0xff_ffff);
            let asked = if dir == 0 { u64::from(mps) } else { p.ulen as u64 };
            let j = Job {
                fd: f as u64,
                cc: u64::from(ev.trb.cc()),
                len: asked.saturating_sub(residue),
                dma: buf as u64,
                ubuf: p.ubuf as u64,
                ulen: p.ulen as u64,
                result: 0,
                dir: dir as u64,
            };
            // SAFETY: `job` is the calling thread's (identity-mapped) Job.
            unsafe { core::ptr::write_volatile(job as *mut Job, j) };
            self.classes[class].jobs += 1;
            return 1;
        }
    }

    /// `CALL_BH_DONE(job)`: the completion is handled; wake the reader.
    pub fn bh_done(&mut self, k: &mut Kernel, job: usize, now: u64) -> u64 {
        if job == 0 || !job.is_multiple_of(core::mem::align_of::<Job>()) {
            return u64::MAX;
        }
        // SAFETY: the calling thread's Job.
        let j = unsafe { core::ptr::read_volatile(job as *const Job) };
        let Some(fd) = self.fds.get_mut(j.fd as usize) else {
            return u64::MAX;
        };
        let p = if j.dir == 0 {
            fd.pending.take()
        } else {
            fd.pending_out.take()
        };
        let Some(p) = p else {
            return u64::MAX;
        };
        let ok = j.cc == u64::from(xhci::CC_SUCCESS) || j.cc == u64::from(xhci::CC_SHORT_PACKET);
        if j.dir == 0 {
            fd.completed += 1;
            fd.bytes += j.result;
            k.threads[p.thread].reads += 1;
        } else {
            fd.writes += 1;
            fd.written += j.result;
            k.threads[p.thread].writes += 1;
        }
        if !ok {
            k.threads[p.thread].io_errors += 1;
        }
        let mut mark = p.mark;
        mark.done = now;
        k.threads[p.thread].mark = Some(mark);
        k.threads[p.thread].frame.rax =
            if j.cc == u64::from(xhci::CC_SUCCESS) || j.cc == u64::from(xhci::CC_SHORT_PACKET) {
                j.result
            } else {
                u64::MAX
            };
        k.io_done(now, k.main_period_of(p.thread));
        k.wake(now, p.thread, None);
        0
    }
}

/// The bottom half of one completion, in the I/O VCPU's thread: the FTDI
/// chip prefixes each 64-byte packet with 2 status bytes (modem, line);
/// the rest is payload for the reader.
pub fn ftdi_payload(j: &mut Job) {
    if j.dir != 0 {
        // a write: nothing to copy; the device took `len` bytes
        j.result = j.len;
        return;
    }
    let n = j.len as usize;
    let mut out = 0usize;
    let mut i = 0usize;
    while i < n {
        let pkt = (n - i).min(64);
        let pay = pkt.saturating_sub(2);
        let take = pay.min(j.ulen as usize - out);
        // SAFETY: `dma` holds `len` bytes from the device; `ubuf` is the
        // reader's buffer of `ulen` bytes (out + take <= ulen).
        unsafe {
            core::ptr::copy_nonoverlapping(
                (j.dma as usize + i + 2) as *const u8,
                (j.ubuf as usize + out) as *mut u8,
                take,
            )
        };
        out += take;
        i += pkt;
    }
    j.result = out as u64;
}
