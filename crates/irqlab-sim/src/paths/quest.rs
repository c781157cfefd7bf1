//! The `quest` path (QUEST-VCPU §2.1, USB-DIFFSERV §III): a device's top
//! half runs at arrival, charged to whatever server was running (Quest
//! lets the interrupted VCPU pay for the short top half); its bottom half
//! is a job for the class's bottom-half thread in the class's I/O VCPU.
//!
//! Design principles:
//! * The I/O VCPU is a PIBS server (or any server the model gives); each
//!   bottom-half job's wake-up passes the period of the Main VCPU it serves,
//!   so the core runs PIBS Alg. 10 (priority inheritance) once per event.
//! * With `inherit: strict` the inherited priority drops when the service
//!   for one Main VCPU ends (the "stricter approach" of QUEST-VCPU §3.2):
//!   `pibs_service_done` tells the core.

use irqlab_core::Nanos;

use crate::config::{PolicyCfg, SimConfig};
use crate::machine::{core_err, Simulation};
use crate::SimError;

/// The server running the bottom halves of class `class`: its I/O VCPU.
pub(crate) fn class_home(cfg: &SimConfig, class: usize) -> Option<usize> {
    cfg.classes[class].iovcpu
}

impl Simulation {
    /// Strict PIBS: service for the Main VCPU of period `period` ended with
    /// this bottom half of device `d`.
    pub(crate) fn pibs_service_done(
        &mut self,
        d: usize,
        period: Option<u64>,
    ) -> Result<(), SimError> {
        let (Some(p), Some(srv)) = (period, self.cfg.classes[self.devices[d].class_now].iovcpu)
        else {
            return Ok(());
        };
        if !matches!(
            self.cfg.servers[srv].policy,
            PolicyCfg::Pibs { strict: true, .. }
        ) {
            return Ok(());
        }
        let c = self.servers[srv].cpu;
        let local = self.servers[srv].local;
        self.cpus[c]
            .sched
            .io_service_done(Nanos(self.now), local, Nanos(p))
            .map_err(core_err(|| "io_service_done".to_owned()))?;
        Ok(())
    }
}
