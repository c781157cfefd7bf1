//! Issue 35's random one-CPU quest systems as a cross-check: 2-3 sporadic
//! Main VCPUs at rate-monotonic priority, 1-2 PIBS I/O VCPUs, periodic
//! tasks that compute and some that read a disk through an I/O VCPU, a
//! periodic generic interrupt whose bottom halves run on an I/O VCPU
//! (`examples/tightness.rs` prints the tightness figures on the same
//! systems). Theory: no simulated response of a task above a bound the
//! analysis calls within its deadline (S1-S3, J1, P1-P3 all in play), and
//! a fair share of the tasks bounded.

use irqlab_analysis::system::model_bounds;
use irqlab_sim::config::{
    ClassCfg, DeviceCfg, DeviceKind, InterruptPath, Phase, PolicyCfg, Release, ServerCfg,
    SimConfig, TaskCfg,
};
use irqlab_sim::simulate;

struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

const U: u64 = 10_000;

fn server(name: String, policy: PolicyCfg) -> ServerCfg {
    ServerCfg {
        name,
        cpu: 0,
        policy,
        rank: None,
    }
}

fn random(r: &mut Rng) -> SimConfig {
    let (mut servers, mut tasks, mut classes, mut devices) = (vec![], vec![], vec![], vec![]);
    let n_main = 2 + r.below(2) as usize;
    let n_io = 1 + r.below(2) as usize;
    for s in 0..n_main {
        let t = (100 + r.below(900)) * U;
        let c = (t / U / 10 + r.below(t / U / 6)) * U;
        servers.push(server(
            format!("main{s}"),
            PolicyCfg::Sporadic {
                budget: c,
                period: t,
                max_repl: 32,
                background: false,
            },
        ));
    }
    for k in 0..n_io {
        let io = servers.len();
        servers.push(server(
            format!("io{k}"),
            PolicyCfg::Pibs {
                num: 5 + r.below(20),
                den: 100,
                strict: false,
            },
        ));
        classes.push(ClassCfg {
            name: format!("class{k}"),
            iovcpu: Some(io),
            consumer: None,
        });
    }
    let mut ti = 0;
    for s in 0..n_main {
        let PolicyCfg::Sporadic { budget, period, .. } = servers[s].policy else {
            continue;
        };
        for _ in 0..1 + r.below(2) {
            let tp = period * (1 + r.below(4));
            let reads = devices.len() < n_io && r.below(2) == 0;
            let mut program = vec![Phase::Compute {
                ns: (1 + r.below((budget / U / 3).max(1))) * U,
            }];
            if reads {
                let d = devices.len();
                let io = n_main + d;
                let PolicyCfg::Pibs { num, den, .. } = servers[io].policy else {
                    continue;
                };
                let omega_io = (1 + r.below((num * period / den / U).clamp(1, 4))) * U;
                devices.push(DeviceCfg {
                    name: format!("disk{d}"),
                    irq_priority: 0,
                    cpu: 0,
                    class: d,
                    omega_main: U,
                    kind: DeviceKind::Disk {
                        latency: (5 + r.below(30)) * U,
                        top_half: U / 2,
                        per_sector: omega_io / 4,
                        sectors: 4,
                        sector_bytes: 512,
                    },
                });
                program.push(Phase::Io { device: d });
                program.push(Phase::Compute {
                    ns: (1 + r.below(3)) * U,
                });
            }
            tasks.push(TaskCfg {
                name: format!("t{ti}"),
                server: s,
                priority: 1 + r.below(3) as u32,
                release: Release::Periodic {
                    period: tp,
                    deadline: None,
                    offset: r.below(tp / U) * U,
                    jobs: None,
                },
                program,
                abort_on_miss: false,
            });
            ti += 1;
        }
    }
    // a periodic generic interrupt, its bottom halves on the last I/O VCPU
    let class = classes.len() - 1;
    classes[class].consumer = Some(0);
    let min = (50 + r.below(200)) * U;
    devices.push(DeviceCfg {
        name: "gen".into(),
        irq_priority: 0,
        cpu: 0,
        class,
        omega_main: 0,
        kind: DeviceKind::Generic {
            min_interarrival: min,
            jitter: 0,
            isr: U / 2,
            dsr: U,
            start: 0,
        },
    });
    SimConfig {
        cpus: 1,
        path: InterruptPath::Quest,
        duration: 1_000_000_000,
        seed: 1,
        window: 1_000_000_000,
        servers,
        tasks,
        devices,
        classes,
        xhci: vec![],
        virqs: vec![],
        ipi: 0,
        switch_overhead: 0,
        linux: Default::default(),
        trace: Default::default(),
        overhead: Default::default(),
        max_completions: 10_000,
        dispatch_delay: 0,
        switch_costs: Default::default(),
        max_window_values: irqlab_sim::config::default_max_window_values(),
        records: Default::default(),
    }
}

#[test]
fn random_quest_systems_within_bounds() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut total, mut bounded) = (0, 0);
    for case in 0..40 {
        let cfg = random(&mut r);
        let b = model_bounds(&cfg).expect("valid machine");
        for seed in 1..=3 {
            let mut c = cfg.clone();
            c.seed = seed;
            let (m, _) = simulate(c).expect("runs");
            for t in &b.tasks {
                total += 1;
                let Some(bound) = t.response.filter(|_| t.schedulable) else {
                    continue;
                };
                bounded += 1;
                let sim = m.tasks.iter().find(|x| x.name == t.name).expect("task");
                let max = sim.response.max.unwrap_or(0);
                assert!(
                    max <= bound && sim.deadline_misses == 0,
                    "case {case} seed {seed} task {} ({}): simulated {max} > bound {bound}\n{cfg:#?}",
                    t.name,
                    t.equation
                );
            }
        }
    }
    assert!(bounded * 3 >= total, "only {bounded} of {total} bounded");
}
