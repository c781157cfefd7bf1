//! irqlab-sim: a deterministic discrete-event simulator of machines whose
//! scheduling decisions are all taken by `irqlab-core` (docs/simulator.md).
//!
//! Design principles: the simulator never re-implements a policy; it feeds
//! the core time and events and carries out its `Dispatch`. Events are
//! ordered by (time, sequence number), so a configuration and a seed give
//! the same metrics bit for bit. Bad configuration is an error naming the
//! field, the value and the rule.

mod collect;
mod cpu;
mod devices;
mod engine;
pub mod machine;
pub mod metrics;
mod paths;
mod program;
pub mod records;
#[cfg(feature = "testgen")]
pub mod testgen;
mod thread;
pub mod trace;
mod vcpu_response;

pub use irqlab_system::from_model;
/// The simulator's errors are the resolved system's.
pub use irqlab_system::SystemError as SimError;
/// The resolved system the simulator runs (`irqlab-system`).
pub use irqlab_system::{config, lower, SimConfig};
pub use machine::Simulation;
pub use metrics::Metrics;
pub use records::{Records, RecordsCfg};
pub use trace::{Trace, TraceFormat};

/// Run a configuration: metrics and the trace (`Trace::write` writes it
/// as JSON or Perfetto protobuf; `Trace::to_json` for small ones).
pub fn simulate(cfg: SimConfig) -> Result<(Metrics, Trace), SimError> {
    Simulation::new(cfg)?.run()
}
