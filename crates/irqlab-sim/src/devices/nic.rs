//! The NIC: packets arriving by a configured process (periodic, Poisson,
//! bursts, a trace file, or a closed `ping -f` loop), each raising an
//! interrupt whose top half puts it in the receive ring and whose bottom
//! half (protocol processing) delivers it to the reading task's buffer.
//!
//! Design principles:
//! * An arrival process is a pure function of its configuration, the
//!   current time and the simulation's one random stream, so a seed gives
//!   the same arrivals every time.
//! * The receive ring is bounded (`ring`): a packet arriving to a full ring
//!   is dropped by the NIC without an interrupt; the socket buffer is
//!   bounded too (`buffer`), a packet delivered to a full one is dropped.
//! * A closed loop (`ping -f`, a TCP window of one) sends its next request
//!   `rtt` after the reply to the previous one, or after the fallback
//!   `interval`, whichever is first.

use irqlab_core::rng::SplitMix64;

use crate::config::{ArrivalCfg, DeviceKind};
use crate::machine::Simulation;

/// The first arrival of process `a` (`burst_left`: packets left in the
/// current burst).
pub(crate) fn first_arrival(
    a: &ArrivalCfg,
    rng: &mut SplitMix64,
    burst_left: &mut u64,
) -> Option<u64> {
    match a {
        ArrivalCfg::Periodic { start, .. } => Some(*start),
        ArrivalCfg::Poisson {
            start, rate_per_s, ..
        } => Some(start.saturating_add(rng.exponential_ns(*rate_per_s))),
        ArrivalCfg::Burst { start, count, .. } => {
            *burst_left = *count;
            Some(*start)
        }
        ArrivalCfg::Trace { times } => times.first().copied(),
        ArrivalCfg::PingFlood { start, .. } => Some(*start),
    }
}

/// The arrival of process `a` after one at `now` (for a trace, the first
/// entry after `now`).
pub(crate) fn next_arrival(
    a: &ArrivalCfg,
    now: u64,
    rng: &mut SplitMix64,
    burst_left: &mut u64,
) -> Option<u64> {
    let stop_ok = |t: u64, stop: &Option<u64>| stop.is_none_or(|s| t < s);
    match a {
        ArrivalCfg::Periodic { interval, stop, .. } => {
            let t = now.saturating_add(*interval);
            stop_ok(t, stop).then_some(t)
        }
        ArrivalCfg::Poisson {
            rate_per_s, stop, ..
        } => {
            let t = now.saturating_add(rng.exponential_ns(*rate_per_s).max(1));
            stop_ok(t, stop).then_some(t)
        }
        ArrivalCfg::Burst {
            count,
            gap,
            every,
            stop,
            start,
        } => {
            *burst_left = burst_left.saturating_sub(1);
            let t = if *burst_left > 0 {
                now.saturating_add((*gap).max(1))
            } else {
                *burst_left = *count;
                // next burst boundary after now
                let k = (now.saturating_sub(*start)) / every + 1;
                start.saturating_add(k.saturating_mul(*every))
            };
            stop_ok(t, stop).then_some(t)
        }
        ArrivalCfg::Trace { times } => {
            let i = times.partition_point(|&x| x <= now);
            times.get(i).copied()
        }
        // The fallback send; a reply may bring it forward.
        ArrivalCfg::PingFlood { interval, stop, .. } => {
            let t = now.saturating_add(*interval);
            stop_ok(t, stop).then_some(t)
        }
    }
}

impl Simulation {
    /// A closed-loop source (`ping -f`, a TCP window of one) sends its next
    /// request `rtt` after the reply to the previous one.
    pub(crate) fn closed_loop_reply(&mut self, d: usize) {
        if let DeviceKind::Nic {
            arrival: ArrivalCfg::PingFlood { rtt, stop, .. },
            ..
        } = &self.cfg.devices[d].kind
        {
            let t = self.now.saturating_add(*rtt);
            if stop.is_none_or(|s| t < s) && self.devices[d].arrival_at.is_some_and(|a| t < a) {
                self.post_arrival(d, t);
            }
        }
    }
}
