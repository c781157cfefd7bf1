//! irqlab-system: the resolved system, built once from a model and read by
//! every back end (the simulator, the analysis, the runtime, the VMM).
//!
//! What it is: `config` is the resolved form (`SimConfig`): servers, tasks,
//! devices, I/O classes and virtual interrupts with every reference an
//! index, every time integer nanoseconds, every default applied and every
//! `auto` value (pseudo-VCPU budgets by VINT Eq. 1/2, priorities by VINT
//! §V-A) chosen; `lower::from_model` builds it from a validated
//! `irqlab_model::Model`; `lower::resolve` builds the same system for a
//! back end that runs it for real, without the measured `costs:` and with
//! the model's side of each part (`origin`: field paths, event sources,
//! upcalls), so that back end never reads the model again.
//!
//! Design principles: lowering happens here and nowhere else; the resolved
//! form still validates itself (`SimConfig::check`), so one built by hand
//! or read from JSON can never make a back end panic; every error names
//! the field path, the value and the rule (`SystemError::Config`).

pub mod config;
pub mod error;
pub mod lower;
pub mod origin;

pub use config::SimConfig;
pub use error::SystemError;
pub use lower::{from_model, resolve};
pub use origin::{Origin, Resolved};
