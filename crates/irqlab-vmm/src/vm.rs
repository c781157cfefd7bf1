//! The KVM virtual machine: guest memory (vm-memory), the in-kernel
//! irqchip (LAPIC), one VCPU entered directly in 64-bit long mode (page
//! tables and GDT written by the VMM), the guest ELF loaded, and MSI
//! injection (`KVM_SIGNAL_MSI` into the in-kernel LAPIC).
//!
//! Design principles: everything the guest relies on is set up here and
//! checked (capabilities missing on this kernel are errors naming the
//! capability); the VM is `Sync` so the top half may inject while the VCPU
//! thread runs.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use kvm_bindings::{kvm_msi, kvm_regs, kvm_segment, Msrs, KVM_MAX_CPUID_ENTRIES};
use kvm_ioctls::{Cap, Kvm, VcpuFd, VmFd};
use vm_memory::{Bytes, GuestAddress, GuestMemoryBackend, GuestMemoryMmap};

use crate::abi::*;
use crate::elf;
use crate::error::VmmError;

/// A created VM with its memory, ready to run one VCPU.
pub struct Vm {
    pub kvm: Kvm,
    pub fd: VmFd,
    pub mem: GuestMemoryMmap,
    /// The guest kernel's entry point.
    pub entry: u64,
    /// `KVM_CAP_HALT_POLL` set to 0 (halt polling off for this VM).
    pub halt_poll_off: bool,
    /// How each device's interrupt reaches the LAPIC (index = device).
    pub(crate) lines: Vec<Line>,
    pub irqchip: Irqchip,
}

/// The in-kernel interrupt controller.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Irqchip {
    /// `KVM_CREATE_IRQCHIP`: LAPIC, IOAPIC and PIC in the kernel. The
    /// guest's LAPIC EOI is handled there, unseen by the VMM.
    #[default]
    Kernel,
    /// `KVM_CAP_SPLIT_IRQCHIP`: the LAPIC in the kernel, no IOAPIC. Each
    /// device's MSI is also a level-triggered route on GSI `d` (below
    /// `SPLIT_PINS`), which puts its vector in KVM's set of "IOAPIC"
    /// vectors: the guest's EOI of it exits to the VMM
    /// (`KVM_EXIT_IOAPIC_EOI`), the hypervisor trapping the EOI that
    /// VINT §V-B's nested handling switches at.
    Split,
}

/// MSI data bits 15 (level-triggered) and 14 (assert).
const LEVEL_ASSERT: u32 = 0xc000;

/// Routes reserved for the (absent) user-space IOAPIC in split mode.
const SPLIT_PINS: u32 = 24;

/// How the VMM injects a device's virtual interrupt into the in-kernel
/// LAPIC.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Injection {
    /// `KVM_SIGNAL_MSI` from the injecting thread (one ioctl per event).
    #[default]
    Msi,
    /// An eventfd per device bound to a GSI (`KVM_IRQFD`) whose route
    /// (`KVM_SET_GSI_ROUTING`) is the device's MSI: the injecting thread
    /// writes the eventfd, the kernel's irqfd worker injects.
    Irqfd,
}

/// One device's interrupt line: its MSI (vector, destination LAPIC) and,
/// with [`Injection::Irqfd`], the eventfd bound to GSI `d`.
pub(crate) struct Line {
    pub vector: u8,
    pub dest: u8,
    pub irqfd: Option<vmm_sys_util::eventfd::EventFd>,
}

/// Open /dev/kvm; the error carries the kernel's reason (ENOENT, EACCES...).
pub fn open_kvm() -> Result<Kvm, VmmError> {
    Kvm::new().map_err(|e| VmmError::KvmUnavailable(format!("open /dev/kvm: {e}")))
}

impl Vm {
    /// Create the VM: memory, in-kernel irqchip (whole, or split), the
    /// guest image loaded.
    pub fn new(image: &[u8], irqchip: Irqchip) -> Result<Vm, VmmError> {
        let img = elf::parse(image)?;
        let kvm = open_kvm()?;
        for (cap, name) in [
            (Cap::Irqchip, "KVM_CAP_IRQCHIP"),
            (Cap::SignalMsi, "KVM_CAP_SIGNAL_MSI"),
            (Cap::ImmediateExit, "KVM_CAP_IMMEDIATE_EXIT"),
        ] {
            if !kvm.check_extension(cap) {
                return Err(VmmError::KvmUnavailable(format!("{name} not supported")));
            }
        }
        let fd = kvm
            .create_vm()
            .map_err(|e| VmmError::KvmUnavailable(format!("KVM_CREATE_VM: {e}")))?;
        let mem = GuestMemoryMmap::<()>::from_ranges(&[(GuestAddress(0), MEM_SIZE as usize)])
            .map_err(|e| VmmError::Memory(format!("{e}")))?;
        let host = mem
            .get_host_address(GuestAddress(0))
            .map_err(|e| VmmError::Memory(format!("{e}")))?;
        let region = kvm_bindings::kvm_userspace_memory_region {
            slot: 0,
            flags: 0,
            guest_phys_addr: 0,
            memory_size: MEM_SIZE,
            userspace_addr: host as u64,
        };
        // SAFETY: the region is the mapping `mem` owns, which outlives the VM
        // (both live in `Vm`, and `fd` is dropped first by field order).
        unsafe { fd.set_user_memory_region(region) }
            .map_err(VmmError::kvm("KVM_SET_USER_MEMORY_REGION"))?;
        fd.set_tss_address(0xfffb_d000)
            .map_err(VmmError::kvm("KVM_SET_TSS_ADDR"))?;
        match irqchip {
            Irqchip::Kernel => fd
                .create_irq_chip()
                .map_err(VmmError::kvm("KVM_CREATE_IRQCHIP"))?,
            Irqchip::Split => {
                let mut cap = kvm_bindings::kvm_enable_cap {
                    cap: kvm_bindings::KVM_CAP_SPLIT_IRQCHIP,
                    ..Default::default()
                };
                cap.args[0] = SPLIT_PINS as u64;
                fd.enable_cap(&cap)
                    .map_err(VmmError::kvm("KVM_ENABLE_CAP(KVM_CAP_SPLIT_IRQCHIP)"))?;
            }
        }
        // No halt polling: a halted guest would otherwise spin in the host
        // kernel (up to halt_poll_ns, 200 us by default) on the VCPU
        // thread's CPU clock, i.e. on the VCPU's budget.
        let mut hp = kvm_bindings::kvm_enable_cap {
            cap: kvm_bindings::KVM_CAP_HALT_POLL,
            ..Default::default()
        };
        hp.args[0] = 0;
        let halt_poll_off = fd.enable_cap(&hp).is_ok();
        let vm = Vm {
            kvm,
            fd,
            mem,
            entry: img.entry,
            halt_poll_off,
            lines: Vec::new(),
            irqchip,
        };
        vm.write_tables()?;
        for s in &img.segments {
            vm.write(s.addr, s.data)?;
        }
        Ok(vm)
    }

    pub fn store(&self, addr: u64, v: u64) -> Result<(), VmmError> {
        self.mem
            .store(v, GuestAddress(addr), Ordering::Release)
            .map_err(|e| VmmError::Memory(format!("store {addr:#x}: {e}")))
    }
    pub fn write(&self, addr: u64, b: &[u8]) -> Result<(), VmmError> {
        self.mem
            .write_slice(b, GuestAddress(addr))
            .map_err(|e| VmmError::Memory(format!("write {addr:#x}: {e}")))
    }
    pub fn read(&self, addr: u64, b: &mut [u8]) -> Result<(), VmmError> {
        self.mem
            .read_slice(b, GuestAddress(addr))
            .map_err(|e| VmmError::Memory(format!("read {addr:#x}: {e}")))
    }
    pub fn load(&self, addr: u64) -> Result<u64, VmmError> {
        self.mem
            .load(GuestAddress(addr), Ordering::Acquire)
            .map_err(|e| VmmError::Memory(format!("load {addr:#x}: {e}")))
    }

    /// Identity page tables for the first 4 GiB (2 MiB pages; the LAPIC's
    /// page uncached) and a flat GDT (null, 64-bit code 0x08, data 0x10).
    fn write_tables(&self) -> Result<(), VmmError> {
        let w = |a: u64, v: u64| {
            self.mem
                .write_obj(v, GuestAddress(a))
                .map_err(|e| VmmError::Memory(format!("{e}")))
        };
        w(PML4_ADDR, PDPT_ADDR | 3)?;
        for i in 0..4u64 {
            w(PDPT_ADDR + 8 * i, (PD_ADDR + 0x1000 * i) | 3)?;
        }
        for i in 0..2048u64 {
            let addr = i << 21;
            let mut e = addr | 0x83; // present, writable, 2 MiB
            if addr == LAPIC_ADDR & !0x1f_ffff {
                e |= 0x18; // PCD | PWT
            }
            w(PD_ADDR + 8 * i, e)?;
        }
        w(GDT_ADDR, 0)?;
        w(GDT_ADDR + 8, 0x00af_9a00_0000_ffff)?;
        w(GDT_ADDR + 16, 0x00cf_9200_0000_ffff)?;
        Ok(())
    }

    /// Create VCPU 0 in long mode at the guest's entry point.
    pub fn create_vcpu(&self) -> Result<VcpuFd, VmmError> {
        self.create_vcpu_at(0, self.entry, STACK_TOP)
    }

    /// Create VCPU `id` (its LAPIC ID) in long mode at `rip` with stack
    /// pointer `rsp`. A VCPU other than 0 waits for INIT/SIPI in KVM until
    /// [`start_ap`] makes it runnable.
    pub fn create_vcpu_at(&self, id: u64, rip: u64, rsp: u64) -> Result<VcpuFd, VmmError> {
        let vcpu = self
            .fd
            .create_vcpu(id)
            .map_err(VmmError::kvm("KVM_CREATE_VCPU"))?;
        let cpuid = self
            .kvm
            .get_supported_cpuid(KVM_MAX_CPUID_ENTRIES)
            .map_err(VmmError::kvm("KVM_GET_SUPPORTED_CPUID"))?;
        vcpu.set_cpuid2(&cpuid)
            .map_err(VmmError::kvm("KVM_SET_CPUID2"))?;
        let mut sregs = vcpu.get_sregs().map_err(VmmError::kvm("KVM_GET_SREGS"))?;
        let code = kvm_segment {
            base: 0,
            limit: 0xffff_ffff,
            selector: 0x08,
            type_: 11,
            present: 1,
            dpl: 0,
            db: 0,
            s: 1,
            l: 1,
            g: 1,
            avl: 0,
            unusable: 0,
            padding: 0,
        };
        let data = kvm_segment {
            selector: 0x10,
            type_: 3,
            db: 1,
            l: 0,
            ..code
        };
        sregs.cs = code;
        sregs.ds = data;
        sregs.es = data;
        sregs.fs = data;
        sregs.gs = data;
        sregs.ss = data;
        sregs.gdt.base = GDT_ADDR;
        sregs.gdt.limit = 23;
        sregs.cr3 = PML4_ADDR;
        sregs.cr4 = 0x20; // PAE
        sregs.cr0 = 0x8000_0033; // PG | NE | ET | MP | PE
        sregs.efer = 0x500; // LME | LMA
        vcpu.set_sregs(&sregs)
            .map_err(VmmError::kvm("KVM_SET_SREGS"))?;
        set_entry(&vcpu, rip, rsp)?;
        Ok(vcpu)
    }

    /// Declare the devices' interrupt lines: device `d` raises vector
    /// `VEC_BASE + d` at LAPIC `dests[d]` (fixed delivery, physical
    /// destination), by `how`. With irqfd or the split irqchip: one MSI
    /// route per device (GSI `d`; level-triggered when split, see
    /// [`Irqchip::Split`]); with irqfd an eventfd bound to it. Call it
    /// after creating the VCPUs (KVM computes each VCPU's EOI-exit vectors
    /// from the routes when they change).
    pub fn set_lines(&mut self, dests: &[u8], how: Injection) -> Result<(), VmmError> {
        let msi = |d: usize, dest: u8| {
            (
                LAPIC_ADDR as u32 | (u32::from(dest) << 12),
                VEC_BASE as u32 + d as u32,
            )
        };
        let mut lines = Vec::new();
        let mut routes = Vec::new();
        for (d, &dest) in dests.iter().enumerate() {
            if how == Injection::Irqfd || self.irqchip == Irqchip::Split {
                let mut e = kvm_bindings::kvm_irq_routing_entry {
                    gsi: d as u32,
                    type_: kvm_bindings::KVM_IRQ_ROUTING_MSI,
                    ..Default::default()
                };
                let (addr, mut data) = msi(d, dest);
                if self.irqchip == Irqchip::Split {
                    data |= LEVEL_ASSERT;
                }
                (e.u.msi.address_lo, e.u.msi.data) = (addr, data);
                routes.push(e);
            }
            let irqfd = if how == Injection::Irqfd {
                Some(
                    vmm_sys_util::eventfd::EventFd::new(libc::EFD_NONBLOCK)
                        .map_err(VmmError::io("eventfd"))?,
                )
            } else {
                None
            };
            lines.push(Line {
                vector: VEC_BASE + d as u8,
                dest,
                irqfd,
            });
        }
        if !routes.is_empty() {
            let r = kvm_bindings::KvmIrqRouting::from_entries(&routes)
                .map_err(|e| VmmError::Memory(format!("GSI routing table: {e:?}")))?;
            self.fd
                .set_gsi_routing(&r)
                .map_err(VmmError::kvm("KVM_SET_GSI_ROUTING"))?;
            for (d, l) in lines.iter().enumerate() {
                if let Some(e) = &l.irqfd {
                    self.fd
                        .register_irqfd(e, d as u32)
                        .map_err(VmmError::kvm("KVM_IRQFD"))?;
                }
            }
        }
        self.lines = lines;
        Ok(())
    }

    /// Raise device `d`'s interrupt (see [`Vm::set_lines`]).
    pub fn raise(&self, d: usize) -> Result<(), VmmError> {
        let Some(l) = self.lines.get(d) else {
            return Err(VmmError::config("device", d, "has no interrupt line"));
        };
        match &l.irqfd {
            Some(e) => e.write(1).map_err(VmmError::io("irqfd write")),
            None => self.inject_msi(l.vector, l.dest).map(|_| ()),
        }
    }

    /// Inject vector `vec` as an MSI to LAPIC `dest` (fixed delivery,
    /// physical destination; level-triggered with the split irqchip, as its
    /// route, else edge) through `KVM_SIGNAL_MSI`.
    pub fn inject_msi(&self, vec: u8, dest: u8) -> Result<i32, VmmError> {
        let level = if self.irqchip == Irqchip::Split {
            LEVEL_ASSERT
        } else {
            0
        };
        let msi = kvm_msi {
            address_lo: LAPIC_ADDR as u32 | (u32::from(dest) << 12),
            address_hi: 0,
            data: vec as u32 | level,
            ..Default::default()
        };
        self.fd
            .signal_msi(msi)
            .map_err(VmmError::kvm("KVM_SIGNAL_MSI"))
    }
}

fn set_entry(vcpu: &VcpuFd, rip: u64, rsp: u64) -> Result<(), VmmError> {
    let regs = kvm_regs {
        rip,
        rsp,
        rflags: 2,
        ..Default::default()
    };
    vcpu.set_regs(&regs).map_err(VmmError::kvm("KVM_SET_REGS"))
}

/// Paravirtual start of an AP (a VCPU other than 0): enter it in long mode
/// at `rip` with stack `rsp` (just below the guest's `AP_STACK_TOP`, as
/// after a call) and make it runnable (`KVM_SET_MP_STATE`), instead of
/// INIT/SIPI and a real-mode trampoline.
pub fn start_ap(vcpu: &VcpuFd, rip: u64, rsp: u64) -> Result<(), VmmError> {
    set_entry(vcpu, rip, rsp)?;
    vcpu.set_mp_state(kvm_bindings::kvm_mp_state {
        mp_state: kvm_bindings::KVM_MP_STATE_RUNNABLE,
    })
    .map_err(VmmError::kvm("KVM_SET_MP_STATE"))
}

/// The guest TSC read through KVM (MSR 0x10) bracketed by two host clock
/// reads: `(guest_tsc, host_ns)` with the host time at the midpoint.
pub fn tsc_sample(vcpu: &VcpuFd) -> Result<(u64, u64), VmmError> {
    // The host stamp is the midpoint of the read, so its error is up to half
    // the read's window; a preemption inside one read (a loaded host) makes
    // that tens of microseconds. Keep the narrowest of a few reads.
    const READS: usize = 8;
    const NARROW_NS: u64 = 2_000;
    let mut msrs = Msrs::from_entries(&[kvm_bindings::kvm_msr_entry {
        index: 0x10,
        ..Default::default()
    }])
    .map_err(|e| VmmError::Memory(format!("MSR list: {e:?}")))?;
    let mut read = || -> Result<(u64, u64, u64), VmmError> {
        let t1 = irqlab_rt::sys::now().0;
        vcpu.get_msrs(&mut msrs)
            .map_err(VmmError::kvm("KVM_GET_MSRS(TSC)"))?;
        let t2 = irqlab_rt::sys::now().0;
        let window = t2.saturating_sub(t1);
        Ok((msrs.as_slice()[0].data, t1 + window / 2, window))
    };
    let mut best = read()?;
    for _ in 1..READS {
        if best.2 <= NARROW_NS {
            break;
        }
        let s = read()?;
        if s.2 < best.2 {
            best = s;
        }
    }
    Ok((best.0, best.1))
}

/// Shared ownership for the top half and the VCPU thread.
pub type SharedVm = Arc<Vm>;
