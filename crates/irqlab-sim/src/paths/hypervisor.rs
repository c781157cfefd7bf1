//! The `hypervisor` path (VINT §III, §V): two levels of scheduling.
//!
//! * Physical interrupts: ISRs in the hypervisor, nested by priority; their
//!   time is the hypervisor's (excluded from every VCPU's budget). A
//!   physical ISR's handling is the virtual interrupts it raises: each is
//!   injected into its VCPU when the ISR ends, through an IPI (a top half
//!   on the VCPU's CPU) when the VCPU is on another CPU.
//! * A virtual interrupt runs as the guest's ISR (plus the EOI) in a thread
//!   above every guest task, then its DSR in a thread at the DSR's priority;
//!   both in the VCPU's server -- or, managed by vINT (VINT §V-A/B), in a
//!   pseudo-VCPU server of its own: the VCPU's context (`ctx_of`) runs on
//!   the pseudo-VCPU's budget and priority.
//! * vINT's injection counter (VINT §V-B): an injection takes a credit;
//!   with none left it waits. Credits come back at the pseudo-VCPU's period
//!   boundary (deferrable) or one period after their use (sporadic).
//!
//! Design principle: the handling time of a flow (VINT Definition 2) is
//! from the physical arrival to the end of the DSR, and it is serviceable
//! (Definition 3) when within the minimum inter-arrival time.

use std::collections::VecDeque;

use irqlab_core::{
    DeferrableServer, LatencyRecorder, Nanos, Server, ServerPriority, SporadicServer,
};

use crate::collect::ServerInfo;
use crate::config::DeviceKind;
use crate::cpu::{Isr, IsrSource};
use crate::engine::EvKind;
use crate::machine::{core_err, Simulation};
use crate::thread::{BhJob, Deliver};
use crate::vcpu_response::{Replenish, VcpuResponses};
use crate::SimError;

/// Run-time state of a virtual interrupt (VINT §III, §V).
pub(crate) struct VirqState {
    pub(crate) isr_thread: usize,
    pub(crate) dsr_thread: usize,
    /// Minimum inter-arrival times of the physical and virtual interrupt.
    pub(crate) min_interarrival: u64,
    /// vINT injection counter, its maximum, and delayed injections.
    pub(crate) counter: u64,
    pub(crate) max: u64,
    pub(crate) pending: VecDeque<u64>,
    pub(crate) refill_posted: bool,
    pub(crate) arrivals: u64,
    pub(crate) injected: u64,
    pub(crate) delayed: u64,
    pub(crate) handled: u64,
    pub(crate) serviceable: u64,
    pub(crate) handling: LatencyRecorder,
    pub(crate) within: Vec<u64>,
}

/// Bounds of the handling-time CDF in the metrics (ns).
pub(crate) const CDF_BOUNDS: [u64; 13] = [
    25_000, 50_000, 100_000, 150_000, 170_000, 200_000, 300_000, 500_000, 1_000_000, 2_000_000,
    5_000_000, 10_000_000, 20_000_000,
];

impl Simulation {
    /// Threads (and vINT pseudo-VCPUs) of every virtual interrupt.
    pub(crate) fn add_virqs(&mut self) -> Result<(), SimError> {
        for k in 0..self.cfg.virqs.len() {
            let v = self.cfg.virqs[k].clone();
            let cpu = self.cfg.servers[v.vcpu].cpu;
            let phys_min = match self.cfg.devices[v.phys].kind {
                DeviceKind::Generic {
                    min_interarrival, ..
                } => min_interarrival,
                // a NIC has no declared minimum: the virq declares it
                _ => u64::MAX,
            };
            let t_vi = v.min_interarrival.unwrap_or(phys_min);
            let (server, max) = match &v.pseudo {
                None => (v.vcpu, 0),
                Some(p) => {
                    let what = || format!("virqs[{k}].pseudo");
                    let (srv, policy) = if p.deferrable {
                        let s = DeferrableServer::new(
                            Nanos(p.budget),
                            Nanos(p.period),
                            ServerPriority::Rank(p.rank),
                            Nanos(0),
                        )
                        .map_err(core_err(what))?;
                        (Server::Deferrable(s), Replenish::Deferrable)
                    } else {
                        let s = SporadicServer::new(
                            Nanos(p.budget),
                            Nanos(p.period),
                            irqlab_core::DEFAULT_MAX_REPL,
                            ServerPriority::Rank(p.rank),
                            false,
                            Nanos(0),
                        )
                        .map_err(core_err(what))?;
                        (Server::Sporadic(s), Replenish::Sporadic)
                    };
                    let name = format!("{}.pseudo", v.name);
                    let n = name.clone();
                    let (budget, period) = (p.budget, p.period);
                    let g = self.add_own_server(
                        cpu,
                        name,
                        srv,
                        |local| {
                            let supply = VcpuResponses::new(policy, budget, period, 0);
                            ServerInfo::new(n, cpu, local, Some(period), Some(supply))
                        },
                        what,
                    )?;
                    // a pseudo-VCPU runs its VCPU's context (VINT §V-A)
                    self.ctx_of.push(v.vcpu);
                    // the counter's maximum: ceil(T_p / T_i) (VINT §V-B)
                    (g, p.period.div_ceil(t_vi.max(1)))
                }
            };
            let what = || format!("virqs[{k}]");
            let isr_thread = self.add_bh_thread(
                format!("{}.isr", v.name),
                server,
                1_000_000 + v.priority,
                what,
            )?;
            let dsr_thread =
                self.add_bh_thread(format!("{}.dsr", v.name), server, v.dsr_priority, what)?;
            self.virqs.push(VirqState {
                isr_thread,
                dsr_thread,
                min_interarrival: phys_min.min(t_vi.max(1)),
                counter: max,
                max,
                pending: VecDeque::new(),
                refill_posted: false,
                arrivals: 0,
                injected: 0,
                delayed: 0,
                handled: 0,
                serviceable: 0,
                handling: LatencyRecorder::new(0, None),
                within: vec![0; CDF_BOUNDS.len()],
            });
        }
        Ok(())
    }

    /// The ISR of physical interrupt `d` on CPU `c` completed: deliver its
    /// virtual interrupts, through an IPI when the VCPU is on another CPU.
    pub(crate) fn virqs_after_isr(
        &mut self,
        c: usize,
        d: usize,
        arrival: u64,
    ) -> Result<(), SimError> {
        for k in 0..self.devices[d].virqs.len() {
            let v = self.devices[d].virqs[k];
            self.virqs[v].arrivals += 1;
            let target = self.cfg.servers[self.cfg.virqs[v].vcpu].cpu;
            if target != c && self.cfg.ipi > 0 {
                let priority = u32::MAX; // IPIs above device interrupts
                                         // a lost IPI is counted by `push_isr`
                self.push_isr(
                    target,
                    Isr {
                        source: IsrSource::Ipi(v, arrival),
                        remaining: self.cfg.ipi,
                        started: self.now,
                        ran_from: None,
                        jobs: Vec::new(),
                        priority,
                    },
                );
            } else {
                self.inject(v, arrival, Some(c))?;
            }
        }
        Ok(())
    }

    /// Inject virtual interrupt `v` (physical arrival `arrival`): with vINT
    /// only while its counter is above zero, else the injection waits for a
    /// credit (VINT §V-B). `from`: the CPU whose top half (the physical
    /// ISR or the IPI) injects it now, where its trace arrow starts.
    pub(crate) fn inject(
        &mut self,
        v: usize,
        arrival: u64,
        from: Option<usize>,
    ) -> Result<(), SimError> {
        let managed = self.cfg.virqs[v].pseudo.clone();
        if let Some(p) = managed {
            let st = &mut self.virqs[v];
            if st.counter == 0 {
                st.pending.push_back(arrival);
                st.delayed += 1;
                return Ok(());
            }
            st.counter -= 1;
            let now = self.now;
            if p.deferrable {
                // full refill at the next period boundary of the pseudo-VCPU
                if !st.refill_posted {
                    st.refill_posted = true;
                    let at = (now / p.period + 1) * p.period;
                    self.post(at, EvKind::VirqCredit { virq: v });
                }
            } else {
                // one credit back one period after its use
                self.post(now.saturating_add(p.period), EvKind::VirqCredit { virq: v });
            }
        }
        self.virqs[v].injected += 1;
        self.flow += 2;
        if let Some(c) = from {
            self.trace.flow_begin(self.flow, c, self.now, "virq");
        }
        let cfg = &self.cfg.virqs[v];
        let job = BhJob {
            device: cfg.phys,
            work: cfg.isr + cfg.eoi,
            arrival,
            period: None,
            deliver: Deliver::VirqIsr(v),
            flow: self.flow,
            target: Some(self.virqs[v].isr_thread),
        };
        let t = self.virqs[v].isr_thread;
        self.enqueue_bh(t, job)
    }

    pub(crate) fn virq_credit(&mut self, v: usize) -> Result<(), SimError> {
        let Some(p) = self.cfg.virqs[v].pseudo.clone() else {
            return Ok(());
        };
        let st = &mut self.virqs[v];
        if p.deferrable {
            st.refill_posted = false;
            st.counter = st.max;
        } else {
            st.counter = (st.counter + 1).min(st.max);
        }
        while self.virqs[v].counter > 0 {
            let Some(arrival) = self.virqs[v].pending.pop_front() else {
                break;
            };
            self.inject(v, arrival, None)?;
        }
        Ok(())
    }

    /// A stage of virtual interrupt `v`'s handling ended: the guest ISR
    /// (its EOI trapped) activates the DSR; the DSR's end completes the
    /// flow (handling time, VINT Definition 2; serviceable, Definition 3).
    pub(crate) fn virq_stage_done(&mut self, v: usize, job: BhJob) -> Result<(), SimError> {
        if let Deliver::VirqIsr(_) = job.deliver {
            let t = self.virqs[v].dsr_thread;
            let cpu = self.threads[t].cpu;
            self.trace
                .flow_begin(job.flow + 1, cpu, self.now, "isr->dsr");
            let dsr = BhJob {
                work: self.cfg.virqs[v].dsr,
                deliver: Deliver::VirqDsr(v),
                flow: job.flow + 1,
                target: Some(t),
                ..job
            };
            return self.enqueue_bh(t, dsr);
        }
        let h = self.now - job.arrival;
        let st = &mut self.virqs[v];
        st.handled += 1;
        st.handling.record(Nanos(h));
        for (k, &b) in CDF_BOUNDS.iter().enumerate() {
            if h <= b {
                st.within[k] += 1;
            }
        }
        if h <= st.min_interarrival {
            st.serviceable += 1;
        }
        let phys = self.cfg.virqs[v].phys;
        self.closed_loop_reply(phys);
        Ok(())
    }
}
