//! Task-set and interrupt-set generators: UUniFast utilizations, uniform
//! or log-uniform periods, rate-monotonic and random priorities, and the
//! VINT Table II generator with every parameter overridable.
//!
//! Design principles: a small self-contained PRNG (SplitMix64), so a seed
//! gives the same sets bit for bit on every platform; system `i` of a sweep
//! is generated from `(seed, i)` alone, so results do not depend on how the
//! work is split across threads.

use crate::vint::{Pcpu, PhysIrq, Task, Vcpu, VirtIrq};

/// The deterministic PRNG of the generators (irqlab-core's SplitMix64).
pub type Rng = irqlab_core::rng::SplitMix64;

/// UUniFast (Bini & Buttazzo): `n` utilizations summing to `total`,
/// uniformly distributed.
pub fn uunifast(rng: &mut Rng, n: usize, total: f64) -> Vec<f64> {
    let mut out = Vec::with_capacity(n);
    let mut sum = total;
    for i in 1..n {
        let next = sum * rng.unit().powf(1.0 / (n - i) as f64);
        out.push(sum - next);
        sum = next;
    }
    if n > 0 {
        out.push(sum);
    }
    out
}

/// Rate-monotonic priorities (higher is more urgent) for periods; ties by
/// index.
pub fn rm_priorities(periods: &[u64]) -> Vec<u32> {
    let mut idx: Vec<usize> = (0..periods.len()).collect();
    idx.sort_by_key(|&i| (std::cmp::Reverse(periods[i]), std::cmp::Reverse(i)));
    let mut prio = vec![0u32; periods.len()];
    for (rank, &i) in idx.iter().enumerate() {
        prio[i] = rank as u32 + 1;
    }
    prio
}

/// Parameters of the VINT Table II generator (one PCPU; times in ns).
#[derive(Clone, Debug, PartialEq)]
pub struct TableII {
    pub vcpus: usize,
    pub phys_per_pcpu: usize,
    pub virt_per_vcpu: usize,
    pub vcpu_period: u64,
    pub irq_interarrival: (u64, u64),
    pub task_period: (u64, u64),
    pub isr_wcet: (u64, u64),
    /// WCET of the virtual ISR (VINT Fig. 9 scales it with the DSR).
    pub virt_isr_wcet: (u64, u64),
    pub dsr_wcet: (u64, u64),
    pub tasks_per_vcpu: usize,
    pub utilization_per_vcpu: f64,
}

impl Default for TableII {
    fn default() -> Self {
        const MS: u64 = 1_000_000;
        const US: u64 = 1_000;
        TableII {
            vcpus: 3,
            phys_per_pcpu: 6,
            virt_per_vcpu: 2,
            vcpu_period: 10 * MS,
            irq_interarrival: (5 * MS, 10 * MS),
            task_period: (100 * MS, 500 * MS),
            isr_wcet: (5 * US, 10 * US),
            virt_isr_wcet: (5 * US, 10 * US),
            dsr_wcet: (10 * US, 50 * US),
            tasks_per_vcpu: 3,
            utilization_per_vcpu: 0.10,
        }
    }
}

impl TableII {
    /// One PCPU's system (VINT §VII-A): virtual interrupts each tied to a
    /// distinct physical interrupt of the PCPU (same inter-arrival time),
    /// one DSR task per virtual interrupt, UUniFast task utilizations,
    /// rate-monotonic VCPU and task priorities, random interrupt priorities.
    pub fn generate(&self, rng: &mut Rng) -> Pcpu {
        let nv = self.vcpus;
        let vcpus: Vec<Vcpu> = (0..nv)
            .map(|i| Vcpu {
                budget: 0,
                period: self.vcpu_period,
                prio: (nv - i) as u32,
            })
            .collect();
        let mut tasks = Vec::new();
        for v in 0..nv {
            let us = uunifast(rng, self.tasks_per_vcpu, self.utilization_per_vcpu);
            let periods: Vec<u64> = us
                .iter()
                .map(|_| rng.range(self.task_period.0, self.task_period.1))
                .collect();
            let prios = rm_priorities(&periods);
            for ((u, t), p) in us.iter().zip(&periods).zip(prios) {
                tasks.push(Task {
                    wcet: ((u * *t as f64) as u64).max(1),
                    period: *t,
                    prio: p,
                    vcpu: v,
                });
            }
        }
        let np = self.phys_per_pcpu;
        let pprio = rng.permutation(np);
        let phys: Vec<PhysIrq> = (0..np)
            .map(|i| PhysIrq {
                wcet: rng.range(self.isr_wcet.0, self.isr_wcet.1),
                period: rng.range(self.irq_interarrival.0, self.irq_interarrival.1),
                prio: pprio[i] as u32 + 1,
                jitter: 0,
            })
            .collect();
        let nvi = nv * self.virt_per_vcpu;
        let tie = rng.permutation(np);
        let vprio = rng.permutation(nvi);
        // DSR tasks have the interrupts' short periods: rate-monotonic puts
        // them above every regular task (task priorities start at 1)
        let dsr_base = (self.tasks_per_vcpu + 1) as u32;
        let virt: Vec<VirtIrq> = (0..nvi)
            .map(|k| {
                let ph = tie[k % np];
                VirtIrq {
                    isr: rng.range(self.virt_isr_wcet.0, self.virt_isr_wcet.1),
                    dsr: rng.range(self.dsr_wcet.0, self.dsr_wcet.1),
                    dsr_prio: dsr_base + vprio[k] as u32,
                    period: phys[ph].period,
                    prio: vprio[k] as u32 + 1,
                    vcpu: k / self.virt_per_vcpu,
                    phys: ph,
                    managed: false,
                }
            })
            .collect();
        Pcpu {
            vcpus,
            tasks,
            phys,
            virt,
        }
    }
}
