//! irqlab-analysis: the papers' analyses.
//!
//! * `quest` -- QUEST-VCPU Eq. 1-3 (Liu-Layland with the PIBS term);
//! * `usb` -- USB-DIFFSERV Eq. 1-3 and the typical-delay variant (Eq. 4-8);
//! * `rta` -- fixed-priority response-time analysis with release jitter;
//! * `vint` -- VINT Eq. 1-8, Definitions 1-3 and the budget search;
//! * `prm` -- the periodic resource model's supply-bound function and the
//!   exact hierarchical fixed-priority test (Shin & Lee);
//! * `server` -- a budgeted server's supply from its own schedule (S1)
//!   and the server as its own client (S2);
//! * `pibs` -- a PIBS I/O VCPU's consumption in a window (P1) and the
//!   priorities it can take it at (P2);
//! * `suspension` -- self-suspending tasks as release jitter (J1);
//! * `gen` / `sweep` -- generators (UUniFast, VINT Table II) and the
//!   parallel, deterministic sweeps behind VINT Figures 4-9;
//! * `system` -- the analysis of a whole resolved system
//!   (`irqlab_system::SimConfig`): the bounds `irqlab analyze` prints, per
//!   CPU, server, task and read (`system::model_bounds`; `vms` machines
//!   `system::hypervisor_bounds`), built on the equations above.
//!
//! Design principles: integer nanoseconds and exact arithmetic in the
//! tests themselves; floats only for utilization sums and reports.

pub mod gen;
pub mod pibs;
pub mod prm;
pub mod quest;
pub mod rta;
pub mod server;
pub mod suspension;
pub mod sweep;
pub mod system;
pub mod usb;
pub mod vint;
