//! Self-suspending tasks as interference on lower-priority ones (issue
//! 35): a task that blocks in a read or sleeps inside its job.
//!
//! **J1 -- suspension as release jitter.** A higher-priority task with
//! period `T`, execution `E` per job (its computes, not its suspensions)
//! and worst-case response `R` interferes on a lower-priority task in any
//! window `w` by at most `ceil((w + R - E) / T) E`: its suspensions only
//! move its execution later inside `[release, release + R]`, which is
//! what release jitter `J = R - E` covers. This is the jitter-based model
//! Chen et al., "Many suspensions, many problems: a review of
//! self-suspending tasks in real-time systems" (Real-Time Systems 55,
//! 2019) list as sound (their review of the release-jitter approach, with
//! the proof of Bletsas et al. and Huang et al.). Not sound, by the same
//! review: ignoring the suspensions (jitter 0, the classic "it only leaves
//! the CPU" intuition), and taking the jitter as the suspension time `S`
//! alone (their counterexamples); sound but looser: suspension-oblivious
//! (`E + S` of execution, the whole-model analysis's former choice).
//! `tests/suspension_exhaustive.rs` checks J1 on the core's scheduler
//! over every phasing and suspension pattern of small cases, and shows the
//! jitter necessary (`j1_without_jitter_is_unsound`).
//!
//! Conditions: `R` is a sound bound on the suspending task's response
//! (from its own analysis, which may itself use J1 for tasks above it);
//! the lower task is analysed with the usual busy-window RTA (`rta`) over
//! the same CPU or server supply.
//!
//! Design principles: one function per model, integer ns; a suspending
//! task without a response bound has no J1 interferer and says so.

use crate::rta::Interferer;

/// J1: the interference of a suspending task `(E, T)` with response `R`.
/// `None` when `R < E` (not a response bound of that execution).
pub fn jitter_interferer(execution: u64, period: u64, response: u64) -> Option<Interferer> {
    (response >= execution).then(|| Interferer::new(execution, period, response - execution))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_hand() {
        let i = jitter_interferer(2, 10, 7).unwrap();
        assert_eq!((i.cost, i.period, i.jitter), (2, 10, 5));
        // a window of 6 holds two jobs' executions: ceil(11 / 10) = 2
        assert_eq!(i.demand(6), 4);
        assert!(jitter_interferer(3, 10, 2).is_none());
    }
}
