//! Bounds against simulation (issue 35's figures): `tightness models
//! FILE.yaml...` prints, per model, each server's and task's bound next to
//! the simulated worst response; `tightness random N` builds N random
//! one-CPU quest systems (2-3 sporadic Main VCPUs at rate-monotonic
//! priority, 1-2 PIBS I/O VCPUs, periodic tasks that compute and some that
//! read a disk, a periodic generic interrupt), simulates each with 3 seeds
//! and prints, over the tasks that never miss, how many get a bound within
//! their deadline and bound / worst simulated response (median, p90).

use irqlab_analysis::system::model_bounds;
use irqlab_sim::config::{
    ClassCfg, DeviceCfg, DeviceKind, InterruptPath, Phase, PolicyCfg, Release, ServerCfg,
    SimConfig, TaskCfg,
};
use irqlab_sim::{from_model, simulate};
use std::path::Path;

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

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return f64::NAN;
    }
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("models") => {
            for f in &args[2..] {
                let text = std::fs::read_to_string(f).expect("readable");
                let (m, _) = irqlab_model::load_str(&text).expect("valid model");
                let cfg = from_model(&m, Path::new(f).parent().unwrap_or(Path::new(".")))
                    .expect("lowers");
                let b = model_bounds(&cfg).expect("bounds");
                let (sim, _) = simulate(cfg.clone()).expect("runs");
                println!("== {f}");
                println!("ok {} first failure {:?}", b.ok, b.failures.first());
                for c in &b.cpus {
                    for s in &c.servers {
                        println!(
                            "server {:10} response {:>12?} ok {:5} {}",
                            s.name,
                            s.response,
                            s.schedulable,
                            s.note.clone().unwrap_or_default()
                        );
                    }
                }
                for t in &b.tasks {
                    let st = sim.tasks.iter().find(|x| x.name == t.name);
                    println!(
                        "task   {:10} bound {:>12?} ok {:5} sim max {:>10?} misses {:?} | {}",
                        t.name,
                        t.response,
                        t.schedulable,
                        st.and_then(|x| x.response.max),
                        st.map(|x| x.deadline_misses),
                        t.note.clone().unwrap_or_default()
                    );
                }
                for io in &b.io {
                    println!(
                        "read   {:10} {:8} latency {:>12?} {} {:?}",
                        io.task,
                        io.device,
                        io.latency,
                        io.note.clone().unwrap_or_default(),
                        io.terms
                    );
                }
            }
        }
        Some("random") => {
            let n: u64 = args.get(2).and_then(|x| x.parse().ok()).unwrap_or(40);
            let mut r = Rng(0x9e37_79b9_7f4a_7c15);
            let (mut ok_tasks, mut bounded) = (0, 0);
            let mut ratios = Vec::new();
            for _ in 0..n {
                let cfg = random(&mut r);
                let Ok(b) = model_bounds(&cfg) else { continue };
                let mut worst = vec![0u64; cfg.tasks.len()];
                let mut missed = vec![false; cfg.tasks.len()];
                for seed in 1..=3 {
                    let mut c = cfg.clone();
                    c.seed = seed;
                    let Ok((sim, _)) = simulate(c) else { continue };
                    for (i, t) in cfg.tasks.iter().enumerate() {
                        if let Some(x) = sim.tasks.iter().find(|x| x.name == t.name) {
                            worst[i] = worst[i].max(x.response.max.unwrap_or(0));
                            missed[i] |= x.deadline_misses > 0 || x.unfinished_past_deadline > 0;
                        }
                    }
                }
                for (i, t) in cfg.tasks.iter().enumerate() {
                    if missed[i] || worst[i] == 0 {
                        continue;
                    }
                    ok_tasks += 1;
                    let Some(row) = b.tasks.iter().find(|x| x.name == t.name) else {
                        continue;
                    };
                    if std::env::var("TIGHT_DEBUG").is_ok() && !row.schedulable {
                        eprintln!(
                            "fail {:?} {:?}",
                            row.response.map(|r| r as f64 / worst[i] as f64),
                            row.note
                        );
                    }
                    if let (Some(bound), true) = (row.response, row.schedulable) {
                        bounded += 1;
                        assert!(
                            bound >= worst[i],
                            "{}: bound {bound} < sim {}",
                            t.name,
                            worst[i]
                        );
                        ratios.push(bound as f64 / worst[i] as f64);
                        if std::env::var("TIGHT_DEBUG").is_ok() {
                            eprintln!(
                                "{:6.2} {} {:?}",
                                bound as f64 / worst[i] as f64,
                                row.equation.chars().take(40).collect::<String>(),
                                row.terms
                            );
                        }
                    }
                }
            }
            let (med, p90) = (pct(&mut ratios, 0.5), pct(&mut ratios, 0.9));
            println!(
                "{{\"systems\": {n}, \"tasks_never_missing\": {ok_tasks}, \"bounded_within_deadline\": {bounded}, \"ratio_median\": {med:.3}, \"ratio_p90\": {p90:.3}}}"
            );
        }
        _ => eprintln!("usage: tightness models FILE.yaml... | tightness random N"),
    }
}
