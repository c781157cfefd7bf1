//! The VINT case study's systems (§VII-C) as VMM configurations, shared by
//! `irqlab-vmm` and the tests.
//!
//! Design principle: the parameters are the simulator's (`vint-case-storm`
//! in `python/irqlab/experiments`), so the real run and the prediction
//! describe one system.

use irqlab_core::Nanos;

use crate::abi::FLAG_BUSY;
use crate::error::VmmError;
use crate::{DeviceConfig, DeviceKind, GuestTask, PseudoVcpu, Replenish, VcpuServer, VmmConfig};

/// The storm's host event period (VINT Fig. 12: a NIC interrupt every 60 us).
pub const STORM_PERIOD: Nanos = Nanos::from_us(60);
/// The pseudo-VCPU's counter: the storm's interrupt is declared at a 1 ms
/// minimum inter-arrival time, so ceil(10 ms / 1 ms) = 10 per period.
pub const STORM_T_I: Nanos = Nanos::from_ms(1);

/// Figure 12's guest at `util` % of total VCPU utilization: a decoder
/// (29.97 fps, 6 ms of work per frame, priority 5) and a busy loop in one
/// deferrable VCPU of 10 ms period; with `storm`, a host timer every 60 us
/// whose virtual interrupt's DSR works 40 us per event (the case study's
/// 10 us guest ISR and 30 us DSR; the guest's own ISR costs what it costs)
/// at priority 10, above the decoder. Baseline: the VCPU has `util` % of
/// its period. vINT: `util` - 20 %, and the storm's interrupt a deferrable
/// pseudo-VCPU of 2 ms / 10 ms at rank 1 (VINT §V-A).
pub fn storm(util: u64, vint: bool, storm: bool) -> Result<VmmConfig, VmmError> {
    if !(30..=100).contains(&util) || !util.is_multiple_of(10) {
        return Err(VmmError::config(
            "util",
            util,
            "a multiple of 10 in 30..100 (percent)",
        ));
    }
    let ms = Nanos::from_ms;
    let budget = ms(util / 10 - if vint { 2 } else { 0 });
    let mut cfg = VmmConfig {
        vcpu: VcpuServer::Deferrable {
            budget,
            period: ms(10),
        },
        flags: FLAG_BUSY,
        tasks: vec![GuestTask {
            name: "mplayer".into(),
            priority: 5,
            period: Nanos::from_us(33_367),
            wcet: ms(6),
            offset: Nanos::ZERO,
        }],
        dsr_cost: Nanos::from_us(40),
        ..Default::default()
    };
    if storm {
        cfg.devices = vec![DeviceConfig {
            name: "storm".into(),
            kind: DeviceKind::Timer {
                period: STORM_PERIOD,
            },
        }];
        cfg.dsr_priorities = vec![10];
        cfg.vint = vec![vint.then_some(PseudoVcpu {
            budget: ms(2),
            period: ms(10),
            min_interarrival: STORM_T_I,
            policy: Replenish::Deferrable,
            rank: 1,
        })];
    }
    Ok(cfg)
}
