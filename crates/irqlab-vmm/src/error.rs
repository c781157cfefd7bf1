//! Errors of the VMM: every one names what failed and, for guest failures,
//! where the guest was (its RIP).

use thiserror::Error;

#[derive(Debug, Error)]
pub enum VmmError {
    /// /dev/kvm cannot be opened or used (the kernel's reason).
    #[error("KVM unavailable: {0}")]
    KvmUnavailable(String),
    /// A KVM ioctl failed.
    #[error("KVM {op}: {source}")]
    Kvm {
        op: &'static str,
        source: kvm_ioctls::Error,
    },
    #[error("bad guest ELF: {0}")]
    BadElf(String),
    #[error("invalid configuration: {field}: {value}: {rule}")]
    Config {
        field: String,
        value: String,
        rule: String,
    },
    #[error("guest memory: {0}")]
    Memory(String),
    #[error("host I/O: {op}: {source}")]
    Io { op: String, source: std::io::Error },
    #[error("runtime: {0}")]
    Runtime(#[from] irqlab_rt::RtError),
    /// The guest raised a CPU exception and reported it.
    #[error("guest CPU exception {vector} ({name}) error code {error:#x} at RIP {rip:#x}")]
    GuestException {
        vector: u64,
        name: &'static str,
        error: u64,
        rip: u64,
    },
    /// KVM_EXIT_SHUTDOWN: a triple fault (or a guest-requested shutdown).
    #[error("guest shutdown (triple fault) at RIP {rip:#x}")]
    TripleFault { rip: u64 },
    #[error("VM entry failed (hardware reason {reason:#x}) at RIP {rip:#x}")]
    FailEntry { reason: u64, rip: u64 },
    /// KVM_EXIT_INTERNAL_ERROR; suberror 1 (emulation failure) is also how
    /// a triple fault shows on these machines (see docs/vmm.md).
    #[error("KVM internal error (suberror {suberror}, data {data:x?}) at RIP {rip:#x}")]
    InternalError {
        suberror: u32,
        data: Vec<u64>,
        rip: u64,
    },
    #[error("unhandled guest {what} at RIP {rip:#x}")]
    Unhandled { what: String, rip: u64 },
    /// The watchdog saw no guest progress. `rip` is `None` when no thread
    /// running the guest answered within 500 ms (all of them starved or
    /// parked, e.g. by other real-time threads on the CPU).
    #[error("guest hung: {what} for {ms} ms; stopped at {}", rip_text(*.rip))]
    GuestHung {
        what: String,
        ms: u64,
        rip: Option<u64>,
    },
    #[error("guest flooded the console (more than {limit} bytes); stopped at RIP {rip:#x}")]
    ConsoleFlood { limit: usize, rip: u64 },
    #[error("guest asked to stop with code {code}")]
    GuestExit { code: u32 },
}

impl VmmError {
    pub(crate) fn kvm(op: &'static str) -> impl FnOnce(kvm_ioctls::Error) -> VmmError {
        move |source| VmmError::Kvm { op, source }
    }
    pub(crate) fn io(op: impl Into<String>) -> impl FnOnce(std::io::Error) -> VmmError {
        let op = op.into();
        move |source| VmmError::Io { op, source }
    }
    pub(crate) fn config(
        field: impl Into<String>,
        value: impl std::fmt::Display,
        rule: impl Into<String>,
    ) -> VmmError {
        VmmError::Config {
            field: field.into(),
            value: value.to_string(),
            rule: rule.into(),
        }
    }
}

fn rip_text(rip: Option<u64>) -> String {
    match rip {
        Some(r) => format!("RIP {r:#x}"),
        None => "an unknown RIP: no VCPU thread answered within 500 ms (starved or parked)".into(),
    }
}

/// Name of x86 exception `v`.
pub fn exception_name(v: u64) -> &'static str {
    const N: [&str; 20] = [
        "#DE divide error",
        "#DB debug",
        "NMI",
        "#BP breakpoint",
        "#OF overflow",
        "#BR bound range",
        "#UD invalid opcode",
        "#NM device not available",
        "#DF double fault",
        "coprocessor segment overrun",
        "#TS invalid TSS",
        "#NP segment not present",
        "#SS stack fault",
        "#GP general protection",
        "#PF page fault",
        "reserved",
        "#MF x87 floating point",
        "#AC alignment check",
        "#MC machine check",
        "#XM SIMD floating point",
    ];
    N.get(v as usize).copied().unwrap_or("unknown")
}
