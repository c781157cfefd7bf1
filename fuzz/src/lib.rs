//! Helpers shared by the fuzz targets: run a checked configuration for a
//! bounded simulated time, and the extreme values the structure-aware
//! target writes into configurations.
//!
//! Design principles: a target fails only on a panic, abort, hang or
//! overflow (overflow checks are on in this crate's profile); every error
//! the library returns is a correct answer to hostile input.

use irqlab_sim::SimConfig;

/// Longest simulated time a fuzz run simulates (1 ms): enough for every
/// path to reach its steady state, short enough for thousands of runs.
pub const MAX_SIM_NS: u64 = 1_000_000;

/// Check `cfg`; when valid, simulate at most `MAX_SIM_NS` of it
/// (interrupt storms included: the simulator's bounded handler queue
/// makes them linear).
pub fn bounded_simulate(mut cfg: SimConfig) {
    if cfg.check().is_err() {
        return;
    }
    cfg.duration = cfg.duration.min(MAX_SIM_NS);
    cfg.window = cfg.window.min(cfg.duration);
    cfg.trace.enabled = false;
    let _ = irqlab_sim::simulate(cfg);
}

/// The values at the edges: 0, 1, 2, 2^40, 2^63, u64::MAX and neighbours.
pub const EXTREMES: [u64; 10] = [
    0,
    1,
    2,
    1 << 40,
    (1 << 40) + 1,
    1 << 63,
    (1 << 63) - 1,
    u64::MAX,
    u64::MAX - 1,
    1_000_000_000_000_000,
];
