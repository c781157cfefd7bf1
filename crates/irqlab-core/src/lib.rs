//! irqlab-core: the scheduling core of irqlab.
//!
//! What it is: the VCPU servers of QUEST-VCPU (sporadic server for Main
//! VCPUs, PIBS for I/O VCPUs) and their relatives (deferrable, polling, CBS,
//! unbounded), one fixed-priority scheduler per physical CPU (QUEST-VCPU
//! Alg. 1 and 2), and the latency recorder (software twin of the LATENCY-IP
//! Latencies IP).
//!
//! Design principles:
//! * Pure state machine: the caller passes `now`; the core never reads a
//!   clock, does no I/O and returns the next time it must be called back
//!   (the LITMUS^RT reservation contract: update time, call, arm the timer).
//! * Every policy is the four hooks of QUEST-VCPU Alg. 1 (`end_timeslice`,
//!   `update_budget`, `next_event`, `unblock`); the scheduler is shared.
//! * Integer nanoseconds and exact rationals; valid input never panics.
#![cfg_attr(not(any(feature = "std", test)), no_std)]

extern crate alloc;

pub mod cbs;
pub mod error;
mod id_heap;
pub mod periodic;
pub mod pibs;
mod prio_index;
pub mod recorder;
pub mod rng;
pub mod scheduler;
pub mod server;
pub mod sporadic;
pub mod time;
pub mod vint;

pub use cbs::Cbs;
pub use error::CoreError;
pub use periodic::{DeferrableServer, PollingServer};
pub use pibs::{Inherit, Pibs};
pub use recorder::{Histogram, LatencyRecorder, LatencyStats};
pub use scheduler::{Dispatch, SchedStats, Scheduler, ServerId, ThreadId, ThreadPolicy};
pub use server::{Class, PriorityKey, Server, ServerPolicy, ServerPriority, UnblockCtx, Unbounded};
pub use sporadic::{Replenishment, SporadicServer, DEFAULT_MAX_REPL, MAX_MAX_REPL};
pub use time::{Nanos, Utilization};
