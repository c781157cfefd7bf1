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

/// `n` periods drawn uniformly (or log-uniformly, so each decade is as
/// likely as the next) from `[lo, hi]` ns.
pub fn periods(rng: &mut Rng, n: usize, lo: u64, hi: u64, log_uniform: bool) -> Vec<u64> {
    (0..n)
        .map(|_| {
            if log_uniform {
                rng.log_uniform(lo, hi)
            } else {
                rng.range(lo, hi)
            }
        })
        .collect()
}

/// Random priorities: a uniformly drawn permutation of `1..=n` (higher is
/// more urgent), as VINT §VII-A gives physical interrupts.
pub fn random_priorities(rng: &mut Rng, n: usize) -> Vec<u32> {
    rng.permutation(n)
        .into_iter()
        .map(|p| p as u32 + 1)
        .collect()
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
    /// System `index` of a sweep with `seed`: `pcpus` PCPUs drawn from
    /// the stream `(seed, index)` alone, so a system is the same whichever
    /// thread or process generates it (what `sweep::sweep` evaluates).
    pub fn system(&self, pcpus: usize, seed: u64, index: u64) -> Vec<Pcpu> {
        let mut rng = Rng::stream(seed, index);
        (0..pcpus).map(|_| self.generate(&mut rng)).collect()
    }

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
        let pprio = random_priorities(rng, np);
        let phys: Vec<PhysIrq> = (0..np)
            .map(|i| PhysIrq {
                wcet: rng.range(self.isr_wcet.0, self.isr_wcet.1),
                period: rng.range(self.irq_interarrival.0, self.irq_interarrival.1),
                prio: pprio[i],
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_stay_in_range_and_log_uniform_favours_small_decades() {
        let mut rng = Rng::new(7);
        let lin = periods(&mut rng, 4000, 1_000, 1_000_000, false);
        let log = periods(&mut rng, 4000, 1_000, 1_000_000, true);
        assert!(lin
            .iter()
            .chain(&log)
            .all(|&p| (1_000..=1_000_000).contains(&p)));
        // below 31.6 us (the geometric middle): half of a log-uniform draw,
        // about 3 % of a uniform one
        let low = |v: &[u64]| v.iter().filter(|&&p| p < 31_623).count();
        assert!((1800..2200).contains(&low(&log)), "{}", low(&log));
        assert!(low(&lin) < 200, "{}", low(&lin));
    }

    #[test]
    fn random_priorities_are_a_permutation() {
        let mut p = random_priorities(&mut Rng::new(3), 50);
        p.sort_unstable();
        assert_eq!(p, (1..=50).collect::<Vec<u32>>());
    }

    #[test]
    fn rm_priorities_rank_shorter_periods_higher() {
        assert_eq!(rm_priorities(&[30, 10, 20, 10]), vec![1, 4, 2, 3]);
    }

    #[test]
    fn a_system_depends_only_on_seed_and_index() {
        let t = TableII::default();
        assert_eq!(t.system(4, 9, 17), t.system(4, 9, 17));
        assert_ne!(t.system(4, 9, 17), t.system(4, 9, 18));
        let s = &t.system(1, 0, 0)[0];
        assert_eq!(
            (s.vcpus.len(), s.tasks.len(), s.phys.len(), s.virt.len()),
            (3, 9, 6, 6)
        );
        for v in 0..3 {
            let u: f64 = s
                .tasks
                .iter()
                .filter(|k| k.vcpu == v)
                .map(|k| k.wcet as f64 / k.period as f64)
                .sum();
            assert!((u - 0.10).abs() < 1e-3, "VCPU {v}: {u}");
        }
    }
}
