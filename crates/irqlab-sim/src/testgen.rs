//! Proptest generators of simulator configurations (behind the `testgen`
//! feature): random systems that mix every server policy, device kind,
//! interrupt path and program phase, with references valid by construction
//! and, one time in four, one deliberate defect. Shared by the robustness
//! test (`tests/robustness.rs`) and the structure-aware fuzz target
//! (`fuzz/fuzz_targets/config_extreme.rs`), which seeds a `TestRunner` from
//! its input and writes extreme values into what `config()` generates.
//!
//! Design principles: one generator for tests and fuzzing, never copied;
//! it produces both valid systems (which must run) and invalid ones (which
//! must be refused with an error naming the field).

use crate::config::{
    ArrivalCfg, ClassCfg, DeviceCfg, DeviceKind, InterruptPath, InterrupterCfg, Phase, PolicyCfg,
    Release, ServerCfg, SimConfig, TaskCfg, XhciCfg,
};
use proptest::prelude::*;

/// One microsecond in ns.
const US: u64 = 1_000;

/// Any server policy, with budget ≤ period in whole microseconds.
pub fn policy() -> impl Strategy<Value = PolicyCfg> {
    prop_oneof![
        (1u64..1000, 0u64..3000, 2usize..6, any::<bool>()).prop_map(|(b, p, m, bg)| {
            PolicyCfg::Sporadic {
                budget: b * US,
                period: (b + p) * US,
                max_repl: m,
                background: bg,
            }
        }),
        (1u64..5, 0u64..12, any::<bool>()).prop_map(|(n, d, s)| PolicyCfg::Pibs {
            num: n,
            den: n + d,
            strict: s
        }),
        (1u64..1000, 0u64..3000).prop_map(|(b, p)| PolicyCfg::Deferrable {
            budget: b * US,
            period: (b + p) * US
        }),
        (1u64..1000, 0u64..3000).prop_map(|(b, p)| PolicyCfg::Polling {
            budget: b * US,
            period: (b + p) * US
        }),
        (1u64..1000, 0u64..3000).prop_map(|(b, p)| PolicyCfg::Cbs {
            runtime: b * US,
            period: (b + p) * US
        }),
        Just(PolicyCfg::Unbounded {}),
    ]
}

/// A program phase; loops nest at most `depth` deep. Device and class
/// indices are below 4 (`fix_refs` points them at existing ones).
pub fn phase(depth: u32) -> BoxedStrategy<Phase> {
    let leaf = prop_oneof![
        (1u64..500).prop_map(|n| Phase::Compute { ns: n * US }),
        (0usize..4).prop_map(|d| Phase::Io { device: d }),
        (1u64..500).prop_map(|n| Phase::Sleep { ns: n * US }),
        (0usize..4, 0usize..4).prop_map(|(d, c)| Phase::Bind {
            device: d,
            class: c
        }),
    ];
    if depth == 0 {
        return leaf.boxed();
    }
    prop_oneof![
        3 => leaf,
        1 => (proptest::option::of(1u64..4), proptest::collection::vec(phase(depth - 1), 1..3))
            .prop_map(|(count, body)| Phase::Loop { count, body }),
    ]
    .boxed()
}

/// A device of every kind: NIC (periodic, ping flood), disk, generic, USB.
pub fn device() -> impl Strategy<Value = DeviceKind> {
    prop_oneof![
        (1u64..400, 0u64..20, 0u64..50).prop_map(|(i, t, b)| DeviceKind::Nic {
            arrival: ArrivalCfg::Periodic {
                interval: i * US,
                start: 0,
                stop: None
            },
            top_half: t * US,
            bottom_half: b * US,
            bytes: 64,
            buffer: 4,
            ring: 8,
        }),
        (1u64..400, 0u64..20).prop_map(|(r, t)| DeviceKind::Nic {
            arrival: ArrivalCfg::PingFlood {
                rtt: r * US,
                interval: 10_000 * US,
                start: 0,
                stop: None
            },
            top_half: t * US,
            bottom_half: 3 * US,
            bytes: 64,
            buffer: 8,
            ring: 8,
        }),
        (0u64..500, 0u64..50).prop_map(|(l, s)| DeviceKind::Disk {
            latency: l * US,
            top_half: 5 * US,
            per_sector: s * US,
            sectors: 4,
            sector_bytes: 512,
        }),
        (1u64..400, 0u64..30).prop_map(|(m, d)| DeviceKind::Generic {
            min_interarrival: m * US,
            jitter: 10 * US,
            isr: 2 * US,
            dsr: d * US,
            start: 0,
        }),
        (1u64..100_000_000, 0u64..40, proptest::option::of(0usize..4)).prop_map(|(r, o, e)| {
            DeviceKind::Usb {
                controller: 0,
                bytes: 512,
                rate: r,
                jitter: 10 * US,
                omega_io: o * US,
                kfree: 0,
                echo_of: e,
            }
        }),
    ]
}

/// Point device and class references of a program at existing ones.
pub fn fix_refs(program: Vec<Phase>, nd: usize, nc: usize) -> Vec<Phase> {
    program
        .into_iter()
        .map(|p| match p {
            Phase::Io { device } => Phase::Io {
                device: device % nd,
            },
            Phase::Bind { device, class } => Phase::Bind {
                device: device % nd,
                class: class % nc,
            },
            Phase::Loop { count, body } => Phase::Loop {
                count,
                body: fix_refs(body, nd, nc),
            },
            other => other,
        })
        .collect()
}

/// One deliberate defect (or none) applied to a generated system.
pub fn corrupt(cfg: &mut SimConfig, which: u8) {
    match which {
        0 => cfg.duration = 0,
        1 => {
            if let Some(t) = cfg.tasks.first_mut() {
                t.server = 99;
            }
        }
        2 => {
            if let Some(d) = cfg.devices.first_mut() {
                d.class = 99;
            }
        }
        3 => {
            if let Some(s) = cfg.servers.first_mut() {
                s.policy = PolicyCfg::Sporadic {
                    budget: 10,
                    period: 5,
                    max_repl: 1,
                    background: false,
                };
            }
        }
        4 => {
            if let Some(c) = cfg.classes.first_mut() {
                c.iovcpu = Some(99);
            }
        }
        5 => cfg.xhci[0].interrupters.clear(),
        _ => {}
    }
}

/// A random system: 1-4 servers, 0-4 tasks, 1-3 devices and 1-3 classes on
/// one CPU, 50 ms simulated, and one time in four a defect from `corrupt`.
pub fn config() -> impl Strategy<Value = SimConfig> {
    let servers = proptest::collection::vec((policy(), proptest::option::of(0u64..100)), 1..5);
    let tasks = proptest::collection::vec(
        (
            0usize..6,
            proptest::collection::vec(phase(2), 1..4),
            any::<bool>(),
        ),
        0..5,
    );
    let devices = proptest::collection::vec((0usize..4, device()), 1..4);
    let classes = proptest::collection::vec(
        (
            proptest::option::of(0usize..6),
            proptest::option::of(0usize..6),
        ),
        1..4,
    );
    let path = prop_oneof![
        Just(InterruptPath::Quest),
        Just(InterruptPath::QuestNoIovcpu),
        Just(InterruptPath::Linux),
        Just(InterruptPath::Hypervisor)
    ];
    let defect = prop_oneof![3 => Just(None), 1 => (0u8..6).prop_map(Some)];
    let ints = proptest::collection::vec(0usize..4, 1..4);
    (
        path,
        servers,
        tasks,
        devices,
        classes,
        ints,
        any::<u64>(),
        defect,
    )
        .prop_map(
            |(path, servers, tasks, devices, classes, ints, seed, defect)| {
                // references are valid by construction; `corrupt` adds defects
                let (ns, nc, nd, nt) = (servers.len(), classes.len(), devices.len(), tasks.len());
                let mut cfg = SimConfig {
                    cpus: 1,
                    path,
                    duration: 50_000 * US,
                    seed,
                    window: 10_000 * US,
                    servers: servers
                        .into_iter()
                        .enumerate()
                        .map(|(i, (policy, rank))| ServerCfg {
                            name: format!("s{i}"),
                            cpu: 0,
                            rank: if matches!(policy, PolicyCfg::Unbounded {}) {
                                Some(rank.unwrap_or(50))
                            } else {
                                rank
                            },
                            policy,
                        })
                        .collect(),
                    tasks: tasks
                        .into_iter()
                        .enumerate()
                        .map(|(i, (server, program, periodic))| TaskCfg {
                            name: format!("t{i}"),
                            server: server % ns,
                            priority: 1,
                            release: if periodic {
                                Release::Periodic {
                                    period: 5_000 * US,
                                    deadline: None,
                                    offset: 0,
                                    jobs: None,
                                }
                            } else {
                                Release::Once { at: 0 }
                            },
                            program: fix_refs(program, nd, nc),
                            // the abort path in every third task
                            abort_on_miss: (i as u64 + seed).is_multiple_of(3),
                        })
                        .collect(),
                    devices: devices
                        .into_iter()
                        .enumerate()
                        .map(|(i, (class, kind))| DeviceCfg {
                            name: format!("d{i}"),
                            irq_priority: (i % 3) as u32,
                            cpu: 0,
                            class: class % nc,
                            omega_main: 5 * US,
                            kind: match kind {
                                DeviceKind::Usb {
                                    echo_of,
                                    controller,
                                    bytes,
                                    rate,
                                    jitter,
                                    omega_io,
                                    kfree,
                                } => DeviceKind::Usb {
                                    echo_of: echo_of.map(|e| e % nd).filter(|&e| e != i),
                                    controller,
                                    bytes,
                                    rate,
                                    jitter,
                                    omega_io,
                                    kfree,
                                },
                                k => k,
                            },
                        })
                        .collect(),
                    classes: classes
                        .into_iter()
                        .enumerate()
                        .map(|(i, (iovcpu, consumer))| ClassCfg {
                            name: format!("c{i}"),
                            iovcpu: iovcpu.map(|s| s % ns),
                            consumer: consumer.filter(|_| nt > 0).map(|t| t % nt.max(1)),
                        })
                        .collect(),
                    xhci: vec![XhciCfg {
                        name: "x".into(),
                        cpu: 0,
                        msi_base: 32,
                        top_half: 5 * US,
                        interrupters: (0..nc.max(ints.len()))
                            .map(|k| InterrupterCfg {
                                class: k % nc,
                                moderation: 50 * US,
                            })
                            .collect(),
                        random_frame_phase: true,
                    }],
                    virqs: vec![],
                    ipi: 0,
                    switch_overhead: 0,
                    dispatch_delay: 0,
                    switch_costs: Default::default(),
                    linux: Default::default(),
                    trace: Default::default(),
                    overhead: Default::default(),
                    max_completions: 10_000,
                    max_window_values: crate::config::default_max_window_values(),
                    records: Default::default(),
                };
                if let Some(d) = defect {
                    corrupt(&mut cfg, d);
                }
                cfg
            },
        )
}
