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

/// Interrupt sources faster than one per microsecond. Until the simulator
/// bounds its handler queue (issue 21, the simulator part), such a storm
/// makes `push_isr` scan a queue that grows per arrival -- a quadratic
/// slow-down that libFuzzer reports as a timeout on every run. The
/// simulating targets skip them so the rest is fuzzed; the loader and
/// `check` still see them, and `tests/hostile` keeps the reproducer
/// (`hyp_storm_isr_above_interarrival`, xfail until the fix lands).
pub fn storm(cfg: &SimConfig) -> bool {
    use irqlab_sim::config::{ArrivalCfg, DeviceKind};
    cfg.devices.iter().any(|d| match &d.kind {
        DeviceKind::Generic {
            min_interarrival, ..
        } => *min_interarrival < 1_000,
        DeviceKind::Nic { arrival, .. } => match arrival {
            ArrivalCfg::Periodic { interval, .. } | ArrivalCfg::PingFlood { interval, .. } => {
                *interval < 1_000
            }
            ArrivalCfg::Poisson { rate_per_s, .. } => *rate_per_s > 1e6,
            ArrivalCfg::Burst { gap, .. } => *gap < 1_000,
            ArrivalCfg::Trace { .. } => false,
        },
        _ => false,
    }) || cfg
        .virqs
        .iter()
        .any(|v| v.min_interarrival.is_some_and(|t| t < 1_000))
}

/// Check `cfg`; when valid (and not a `storm`), simulate at most
/// `MAX_SIM_NS` of it.
pub fn bounded_simulate(mut cfg: SimConfig) {
    if cfg.check().is_err() || storm(&cfg) {
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
