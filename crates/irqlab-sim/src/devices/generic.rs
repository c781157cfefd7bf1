//! A generic interrupt source (VINT §III): interrupts at least
//! `min_interarrival` apart (plus a uniform jitter), each with an ISR
//! (top half) and a DSR (bottom half) of given WCETs. On the hypervisor
//! path these are the physical interrupts of VINT's model.
//!
//! Design principle: the minimum inter-arrival time is a guarantee, never
//! undercut, so the analyses' sporadic arrival bound holds in simulation.

use irqlab_core::rng::SplitMix64;

/// The arrival after one at `now`: `now + min_interarrival + U[0, jitter]`.
pub(crate) fn next_arrival(
    min_interarrival: u64,
    jitter: u64,
    now: u64,
    rng: &mut SplitMix64,
) -> u64 {
    let jitter = if jitter > 0 {
        rng.below(jitter.saturating_add(1))
    } else {
        0
    };
    now.saturating_add(min_interarrival).saturating_add(jitter)
}
