//! irqlab-vmm: a user-space VMM on `/dev/kvm` whose guest VCPU is scheduled
//! by irqlab-core (through irqlab-rt) and whose virtual interrupts come
//! from real host events (DESIGN §11, VINT §III).
//!
//! Layers: [`vm`] (KVM VM, memory, long mode, MSI injection), [`elf`] (the
//! guest loader), [`devices`] (UDP NIC and timer devices, rings, the
//! accounting), `host` (the physical ISR, the vINT releaser, the
//! watchdog), [`machine`] (the servers, threads and report), `vcpu` (who runs the guest, exits), [`vint`] (pseudo-VCPUs
//! and the injection counter, VINT §V), [`tasks`] (periodic guest tasks), [`probe`] (which KVM features work here). The
//! guest kernel is built from `guest/` by `build.rs` and embedded.
//!
//! Design principles: no second scheduler (VCPUs are irqlab-rt managed
//! threads); every host event is accounted; every guest failure stops the
//! VM with the guest RIP and joins every thread.

#![cfg(target_os = "linux")]

pub mod abi;
pub mod case;
pub mod devices;
pub mod elf;
pub mod error;
mod host;
pub mod machine;
pub mod model;
pub mod probe;
pub mod tasks;
pub mod trace;
mod vcpu;
pub mod vint;
pub mod vm;

pub use devices::{DeviceConfig, DeviceKind, DeviceReport, EventRecord};
pub use error::VmmError;
pub use machine::{RunnerSlice, Stopped, VcpuServer, Vmm, VmmConfig, VmmReport};
pub use tasks::{GuestTask, JobRecord, TaskReport};
pub use vint::{PseudoVcpu, Replenish};
pub use vm::{Injection, Irqchip};

/// The guest kernel built from `guest/` by `build.rs`.
pub static GUEST_ELF: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/guest.elf"));
