//! The `quest-no-iovcpu` path (QUEST-VCPU §4, USB-DIFFSERV Table I): as
//! `quest`, but without I/O VCPUs -- a class's bottom halves run in a
//! thread of the Main VCPU of the task they serve, so the task's own
//! budget pays for its I/O.
//!
//! Design principle: the served task is known when the model names a
//! consumer for the class; otherwise it is the first task whose program
//! does I/O on the class (a class nothing uses needs no thread).

use crate::config::{Phase, SimConfig};

/// The server running the bottom halves of `class`: the Main VCPU of the
/// class's consumer task, else of the first task doing I/O on it.
pub(crate) fn class_home(cfg: &SimConfig, class: usize) -> Option<usize> {
    cfg.classes[class]
        .consumer
        .map(|t| cfg.tasks[t].server)
        .or_else(|| first_requester(cfg, class))
}

fn first_requester(cfg: &SimConfig, class: usize) -> Option<usize> {
    fn uses(phases: &[Phase], cfg: &SimConfig, class: usize) -> bool {
        phases.iter().any(|p| match p {
            Phase::Io { device } => cfg.devices.get(*device).is_some_and(|d| d.class == class),
            Phase::Loop { body, .. } => uses(body, cfg, class),
            _ => false,
        })
    }
    cfg.tasks
        .iter()
        .find(|t| uses(&t.program, cfg, class))
        .map(|t| t.server)
}
