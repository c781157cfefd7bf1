//! Errors of the runtime: every one names what was asked, the value and the
//! rule or the kernel's answer, so a caller can tell "not permitted here"
//! (EPERM: run as root or grant CAP_SYS_NICE) from a bad argument.

use irqlab_core::CoreError;

/// Why a runtime call failed.
#[derive(Debug, thiserror::Error)]
pub enum RtError {
    /// A system call failed; `what` says which and on what.
    #[error("{what}: {source}")]
    Sys {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// SCHED_FIFO (or another privileged operation) is not permitted.
    #[error("{what}: not permitted ({source}); run as root or grant the capability (CAP_SYS_NICE for SCHED_FIFO; CAP_BPF and CAP_NET_ADMIN for kernel upcalls)")]
    NotPermitted {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// The kernel lacks a feature (ENOSYS, or io_uring disabled).
    #[error("{what}: not supported by this kernel ({source})")]
    Unsupported {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A configuration value breaks a rule.
    #[error("{field} = {value}: {rule}")]
    Config {
        field: String,
        value: String,
        rule: String,
    },
    /// The scheduling core refused an operation.
    #[error("core: {0}")]
    Core(#[from] CoreError),
    /// The kernel refused a BPF object or program (a kernel upcall): the
    /// reason carries the verifier's log.
    #[error("{what}: {reason}")]
    Bpf { what: String, reason: String },
    /// The runtime is not in the state the call needs.
    #[error("{0}")]
    State(String),
}

impl RtError {
    /// Classify the last OS error of a call `what`.
    pub fn last_os(what: impl Into<String>) -> RtError {
        RtError::from_io(what, std::io::Error::last_os_error())
    }

    /// Classify an I/O error of a call `what`.
    pub fn from_io(what: impl Into<String>, source: std::io::Error) -> RtError {
        let what = what.into();
        match source.raw_os_error() {
            Some(libc::EPERM) | Some(libc::EACCES) => RtError::NotPermitted { what, source },
            Some(libc::ENOSYS) | Some(libc::EOPNOTSUPP) => RtError::Unsupported { what, source },
            _ => RtError::Sys { what, source },
        }
    }

    pub fn config(field: impl Into<String>, value: impl ToString, rule: impl Into<String>) -> Self {
        RtError::Config {
            field: field.into(),
            value: value.to_string(),
            rule: rule.into(),
        }
    }

    /// True when the failure is a missing privilege or kernel feature: the
    /// caller (a test) should skip with this error as the reason.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            RtError::NotPermitted { .. } | RtError::Unsupported { .. }
        )
    }
}
