//! Interrupt paths: what happens to an interrupt between the end of its top
//! half and its bottom half, per kind of machine (`machine.path`).
//!
//! The interface is what the four paths really share -- four questions,
//! each answered in one `match` below by the path's own module:
//! * **who pays for a top half**: the server that was running (`quest`,
//!   `quest-no-iovcpu`, `linux`: the interrupted task pays the hard IRQ), or
//!   the hypervisor (`hypervisor`: physical ISRs are excluded from every
//!   VCPU's budget, VINT §III);
//! * **where a bottom half runs**: a thread in a server -- the class's I/O
//!   VCPU (`quest.rs`), the served task's Main VCPU (`quest_no_iovcpu.rs`),
//!   ksoftirqd with forced threading (`linux.rs`) -- or the CPU's softirq
//!   context at IRQ exit (`linux.rs`); on `hypervisor` an interrupt has no
//!   bottom half of its own, its handling is the virtual interrupts it
//!   raises (`hypervisor.rs`);
//! * **what the end of a top half does**: hand its bottom-half jobs on, or
//!   (hypervisor) inject virtual interrupts, directly or by IPI;
//! * **what the end of a bottom half does** beyond delivering its data:
//!   strict PIBS inheritance ends the service for a Main VCPU (`quest.rs`).
//!
//! What differs and is not forced into this shape stays in its module: the
//! softirq restart loop (`linux.rs`), vINT's counters and pseudo-VCPUs
//! (`hypervisor.rs`). A new path is one file plus one arm per `match` here.

pub(crate) mod hypervisor;
pub(crate) mod linux;
pub(crate) mod quest;
pub(crate) mod quest_no_iovcpu;

use irqlab_core::ThreadPolicy;

use crate::config::InterruptPath;
use crate::cpu::{Isr, IsrSource};
use crate::machine::{core_err, Simulation};
use crate::thread::{BhJob, Thread};
use crate::SimError;

impl Simulation {
    /// One bottom-half thread per I/O class, in the server the path says
    /// (none on `linux` and `hypervisor`, nor for a class nothing uses).
    pub(crate) fn add_class_threads(&mut self) -> Result<(), SimError> {
        for i in 0..self.cfg.classes.len() {
            let home = match self.cfg.path {
                InterruptPath::Quest => quest::class_home(&self.cfg, i),
                InterruptPath::QuestNoIovcpu => quest_no_iovcpu::class_home(&self.cfg, i),
                InterruptPath::Linux | InterruptPath::Hypervisor => None,
            };
            let Some(server) = home else {
                let needs_thread = matches!(
                    self.cfg.path,
                    InterruptPath::Quest | InterruptPath::QuestNoIovcpu
                );
                if needs_thread && self.cfg.class_used(i) {
                    return Err(SimError::Config {
                        path: format!("classes[{i}]"),
                        value: self.cfg.classes[i].name.clone(),
                        rule: "no server to run its bottom half: give an iovcpu or a consumer task"
                            .into(),
                    });
                }
                self.class_bh.push(usize::MAX);
                continue;
            };
            // Bottom halves run above the tasks sharing their server.
            let name = format!("{}.bh", self.cfg.classes[i].name);
            let t = self.add_bh_thread(name, server, u32::MAX, || format!("classes[{i}]"))?;
            self.class_bh.push(t);
        }
        Ok(())
    }

    /// Add a bottom-half thread of priority `prio` to global server
    /// `server`; returns its global index.
    pub(crate) fn add_bh_thread(
        &mut self,
        name: String,
        server: usize,
        prio: u32,
        what: impl FnOnce() -> String,
    ) -> Result<usize, SimError> {
        let cpu = self.servers[server].cpu;
        let core = self.cpus[cpu]
            .sched
            .add_thread(name.clone(), self.servers[server].local, prio)
            .map_err(core_err(what))?;
        let t = self.threads.len();
        self.cpus[cpu].threads.push(t);
        self.servers[server].threads += 1;
        self.threads
            .push(Thread::bottom_half(name, cpu, server, core));
        Ok(t)
    }

    /// Add a server of its own (ksoftirqd, a pseudo-VCPU) on `cpu`; returns
    /// its global index.
    pub(crate) fn add_own_server(
        &mut self,
        cpu: usize,
        name: String,
        server: irqlab_core::Server,
        info: impl FnOnce(irqlab_core::ServerId) -> crate::collect::ServerInfo,
        what: impl Fn() -> String,
    ) -> Result<usize, SimError> {
        let sporadic = matches!(server, irqlab_core::Server::Sporadic(_));
        let local = self.cpus[cpu]
            .sched
            .add_server(name, server, ThreadPolicy::FixedPriority)
            .map_err(core_err(what))?;
        let g = self.servers.len();
        self.cpus[cpu].servers.push(g);
        let mut info = info(local);
        info.sporadic = sporadic;
        self.servers.push(info);
        Ok(g)
    }

    /// The thread that runs bottom halves of `class` for an interrupt on
    /// `cpu` (`None`: the softirq context).
    pub(crate) fn bh_target_class(&self, class: usize, cpu: usize) -> Option<usize> {
        match self.cfg.path {
            InterruptPath::Linux => self.linux_target(cpu),
            InterruptPath::Hypervisor => None,
            InterruptPath::Quest | InterruptPath::QuestNoIovcpu => self
                .class_bh
                .get(class)
                .copied()
                .filter(|&t| t != usize::MAX),
        }
    }

    /// The thread that runs the bottom half of an event of xHCI
    /// controller `x`'s interrupter `it` (USB-DIFFSERV §III-C): its own
    /// thread in its class's I/O VCPU, the class's thread without I/O
    /// VCPUs, or the softirq context on `linux`.
    pub(crate) fn usb_bh_target(&self, x: usize, it: usize) -> Option<usize> {
        let class = self.cfg.xhci[x].interrupters[it].class;
        match self.cfg.path {
            InterruptPath::Quest | InterruptPath::Hypervisor => Some(self.xhci[x].bh[it]),
            InterruptPath::QuestNoIovcpu => Some(self.class_bh[class]),
            InterruptPath::Linux => self.linux_target(self.cfg.xhci[x].cpu),
        }
        .filter(|&t| t != usize::MAX)
    }

    /// The top half `isr` on CPU `c` ended: its bottom halves go to their
    /// threads or the softirq context; on the hypervisor path a physical
    /// interrupt's virtual interrupts are injected (or sent by IPI) and an
    /// IPI injects the virtual interrupt it carries.
    pub(crate) fn top_half_done(&mut self, c: usize, isr: Isr) -> Result<(), SimError> {
        for job in isr.jobs {
            self.route_bh(c, job)?;
        }
        match isr.source {
            IsrSource::Device(d) if self.cfg.path == InterruptPath::Hypervisor => {
                self.virqs_after_isr(c, d, isr.started)?
            }
            IsrSource::Ipi(v, arrival) => self.inject(v, arrival, Some(c))?,
            IsrSource::Xhci(x, it) => self.xhci[x].pending_isr[it] = None,
            IsrSource::Device(_) => {}
        }
        self.cpus[c].need_resched = true;
        Ok(())
    }

    /// Hand a bottom-half job to its thread, or to the softirq context.
    pub(crate) fn route_bh(&mut self, c: usize, job: BhJob) -> Result<(), SimError> {
        match job.target {
            Some(t) => self.hand_to_thread(t, job),
            None => self.raise_softirq(c, job),
        }
    }

    /// A top half hands `job` to bottom-half thread `t`: at once, or one
    /// `dispatch_delay` later (the thread's measured wake-up, `costs:`).
    fn hand_to_thread(&mut self, t: usize, job: BhJob) -> Result<(), SimError> {
        let d = self.cfg.dispatch_delay;
        if d == 0 {
            return self.enqueue_bh(t, job);
        }
        self.delayed_bh.push_back((t, job));
        self.post(
            self.now.saturating_add(d),
            crate::engine::EvKind::BhDispatch,
        );
        Ok(())
    }

    /// A bottom half of device `d` that served the Main VCPU of period
    /// `period` ended at `now`.
    pub(crate) fn bottom_half_done(
        &mut self,
        d: usize,
        period: Option<u64>,
    ) -> Result<(), SimError> {
        if self.cfg.path == InterruptPath::Quest {
            self.pibs_service_done(d, period)?;
        }
        Ok(())
    }
}
