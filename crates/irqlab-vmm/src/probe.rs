//! Which KVM features work on this machine: capability queries plus real
//! attempts on scratch VMs (a capability can be reported and still fail,
//! e.g. under a paravirtualized hypervisor). `irqlab-vmm probe` prints the
//! result; docs/vmm.md records it for these machines.
//!
//! Design principle: a fact is what an ioctl did here, with the kernel's
//! error when it failed.

use kvm_bindings::{kvm_enable_cap, kvm_irq_routing_entry, KvmIrqRouting, KVM_IRQ_ROUTING_MSI};
use kvm_ioctls::{Cap, Kvm};
use serde::Serialize;
use vmm_sys_util::eventfd::EventFd;

#[derive(Debug, Serialize)]
pub struct Fact {
    pub feature: &'static str,
    pub works: bool,
    pub detail: String,
}

fn fact(feature: &'static str, r: Result<String, String>) -> Fact {
    match r {
        Ok(detail) => Fact {
            feature,
            works: true,
            detail,
        },
        Err(detail) => Fact {
            feature,
            works: false,
            detail,
        },
    }
}

/// Probe KVM; `Err` with the kernel's reason when /dev/kvm is unusable.
pub fn probe() -> Result<Vec<Fact>, String> {
    let kvm = Kvm::new().map_err(|e| format!("open /dev/kvm: {e}"))?;
    let mut f = Vec::new();
    for (cap, name) in [
        (Cap::Irqchip, "cap KVM_CAP_IRQCHIP"),
        (Cap::SplitIrqchip, "cap KVM_CAP_SPLIT_IRQCHIP"),
        (Cap::SignalMsi, "cap KVM_CAP_SIGNAL_MSI"),
        (Cap::Irqfd, "cap KVM_CAP_IRQFD"),
        (Cap::TscDeadlineTimer, "cap KVM_CAP_TSC_DEADLINE_TIMER"),
        (Cap::TscControl, "cap KVM_CAP_TSC_CONTROL"),
        (Cap::ImmediateExit, "cap KVM_CAP_IMMEDIATE_EXIT"),
        (Cap::X2ApicApi, "cap KVM_CAP_X2APIC_API"),
    ] {
        let ok = kvm.check_extension(cap);
        f.push(fact(
            name,
            if ok {
                Ok("reported".into())
            } else {
                Err("not reported".into())
            },
        ));
    }
    // In-kernel irqchip, one VCPU, an MSI into its LAPIC.
    f.push(fact(
        "in-kernel irqchip + KVM_SIGNAL_MSI",
        (|| {
            let vm = kvm.create_vm().map_err(|e| format!("KVM_CREATE_VM: {e}"))?;
            vm.create_irq_chip().map_err(|e| format!("KVM_CREATE_IRQCHIP: {e}"))?;
            let vcpu = vm.create_vcpu(0).map_err(|e| format!("KVM_CREATE_VCPU: {e}"))?;
            let lapic = vcpu.get_lapic().map_err(|e| format!("KVM_GET_LAPIC: {e}"))?;
            let msi = kvm_bindings::kvm_msi {
                address_lo: 0xfee0_0000,
                data: 0x40,
                ..Default::default()
            };
            let n = vm.signal_msi(msi).map_err(|e| format!("KVM_SIGNAL_MSI: {e}"))?;
            Ok(format!(
                "LAPIC version register {:#x}; MSI accepted by {n} LAPIC(s) (0: a fresh LAPIC is software-disabled until the guest sets SVR)",
                lapic.regs[0x30] as u8
            ))
        })(),
    ));
    // irqfd: an eventfd routed to an MSI.
    f.push(fact(
        "irqfd (eventfd -> MSI route)",
        (|| {
            let vm = kvm.create_vm().map_err(|e| format!("KVM_CREATE_VM: {e}"))?;
            vm.create_irq_chip()
                .map_err(|e| format!("KVM_CREATE_IRQCHIP: {e}"))?;
            let mut e = kvm_irq_routing_entry {
                gsi: 24,
                type_: KVM_IRQ_ROUTING_MSI,
                ..Default::default()
            };
            e.u.msi.address_lo = 0xfee0_0000;
            e.u.msi.data = 0x41;
            let r = KvmIrqRouting::from_entries(&[e]).map_err(|e| format!("routing: {e:?}"))?;
            vm.set_gsi_routing(&r)
                .map_err(|e| format!("KVM_SET_GSI_ROUTING: {e}"))?;
            let efd = EventFd::new(0).map_err(|e| format!("eventfd: {e}"))?;
            vm.register_irqfd(&efd, 24)
                .map_err(|e| format!("KVM_IRQFD: {e}"))?;
            Ok("GSI 24 routed to vector 0x41".into())
        })(),
    ));
    // Split irqchip (LAPIC in the kernel, IOAPIC in user space: EOI exits).
    f.push(fact(
        "split irqchip (KVM_ENABLE_CAP SPLIT_IRQCHIP, 24 routes)",
        (|| {
            let vm = kvm.create_vm().map_err(|e| format!("KVM_CREATE_VM: {e}"))?;
            let mut cap = kvm_enable_cap {
                cap: kvm_bindings::KVM_CAP_SPLIT_IRQCHIP,
                ..Default::default()
            };
            cap.args[0] = 24;
            vm.enable_cap(&cap)
                .map_err(|e| format!("KVM_ENABLE_CAP: {e}"))?;
            vm.create_vcpu(0)
                .map_err(|e| format!("KVM_CREATE_VCPU: {e}"))?;
            Ok("enabled; VCPU created".into())
        })(),
    ));
    f.push(fact(
        "halt polling off (KVM_ENABLE_CAP HALT_POLL 0)",
        (|| {
            let vm = kvm.create_vm().map_err(|e| format!("KVM_CREATE_VM: {e}"))?;
            let mut cap = kvm_enable_cap {
                cap: kvm_bindings::KVM_CAP_HALT_POLL,
                ..Default::default()
            };
            cap.args[0] = 0;
            vm.enable_cap(&cap)
                .map_err(|e| format!("KVM_ENABLE_CAP: {e}"))?;
            Ok("enabled with 0 ns".into())
        })(),
    ));
    f.push(fact(
        "guest TSC frequency (KVM_GET_TSC_KHZ)",
        (|| {
            let vm = kvm.create_vm().map_err(|e| format!("KVM_CREATE_VM: {e}"))?;
            let vcpu = vm
                .create_vcpu(0)
                .map_err(|e| format!("KVM_CREATE_VCPU: {e}"))?;
            let khz = vcpu
                .get_tsc_khz()
                .map_err(|e| format!("KVM_GET_TSC_KHZ: {e}"))?;
            Ok(format!("{khz} kHz"))
        })(),
    ));
    f.push(fact(
        "CPUID: TSC-deadline timer offered to the guest",
        (|| {
            let c = kvm
                .get_supported_cpuid(kvm_bindings::KVM_MAX_CPUID_ENTRIES)
                .map_err(|e| format!("KVM_GET_SUPPORTED_CPUID: {e}"))?;
            let leaf1 = c.as_slice().iter().find(|e| e.function == 1);
            match leaf1 {
                Some(e) if e.ecx & (1 << 24) != 0 => Ok("CPUID.1:ECX[24] set".into()),
                Some(_) => Err("CPUID.1:ECX[24] clear".into()),
                None => Err("no CPUID leaf 1".into()),
            }
        })(),
    ));
    Ok(f)
}
