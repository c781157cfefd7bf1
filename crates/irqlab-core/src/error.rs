//! Errors of the scheduling core. Every constructor that takes
//! user-supplied parameters validates them and returns one of these; valid
//! input never panics.

use crate::time::Nanos;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CoreError {
    #[error("denominator must be positive")]
    ZeroDenominator,
    #[error("period must be positive")]
    ZeroPeriod,
    #[error("budget must be positive")]
    ZeroBudget,
    #[error("budget {budget} exceeds period {period}")]
    BudgetExceedsPeriod { budget: Nanos, period: Nanos },
    #[error("max_repl {0} is below 2 (QUEST-VCPU Alg. 12 pushes the remnant into a second replenishment)")]
    MaxReplTooSmall(usize),
    #[error("max_repl {0} is above {max} (the replenishment queue is bounded; QUEST-VCPU uses a handful)", max = crate::sporadic::MAX_MAX_REPL)]
    MaxReplTooLarge(usize),
    #[error("utilization {num}/{den} must be in (0, 1]")]
    UtilizationOutOfRange { num: u64, den: u64 },
    #[error("round-robin quantum must be positive")]
    ZeroQuantum,
    #[error("unknown server id {0}")]
    UnknownServer(usize),
    #[error("unknown thread id {0}")]
    UnknownThread(usize),
    #[error("time went backwards: now {now} is before the last update {last}")]
    TimeWentBackwards { now: Nanos, last: Nanos },
    #[error("server {0} is not an I/O server (PIBS)")]
    NotPibs(usize),
    #[error("a scheduler holds at most {max} servers", max = u32::MAX)]
    TooManyServers,
    #[error("thread {0} is already bound to a server")]
    ThreadAlreadyBound(usize),
}
