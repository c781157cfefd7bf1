//! Random one-CPU quest systems shared by `tests/quest_random.rs` (the
//! cross-check) and `examples/tightness.rs` (the tightness figures): 2-3
//! sporadic Main VCPUs at rate-monotonic priority, 1-2 PIBS I/O VCPUs,
//! periodic tasks that compute and some that read a disk through an I/O
//! VCPU, a periodic generic interrupt. Deterministic for a seed.

#![allow(dead_code)]

use irqlab_sim::config::{
    ClassCfg, DeviceCfg, DeviceKind, InterruptPath, Phase, PolicyCfg, Release, ServerCfg,
    SimConfig, TaskCfg,
};

pub struct Rng(pub u64);
impl Rng {
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

pub const U: u64 = 10_000;

fn server(name: String, policy: PolicyCfg) -> ServerCfg {
    ServerCfg {
        name,
        cpu: 0,
        policy,
        rank: None,
    }
}

pub fn random(r: &mut Rng) -> SimConfig {
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
