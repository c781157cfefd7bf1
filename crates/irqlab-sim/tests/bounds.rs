//! Cross-check with the analysis (docs/analysis.md): on random systems no
//! simulated response time exceeds a bound the analysis calls safe.
//!
//! Fixed-priority task sets (tasks in unbounded servers ranked by period,
//! with release offsets and jitter-free periodic releases): every simulated
//! response time is at most the response-time-analysis bound, and equal to
//! it for the first job when all tasks are released together (the critical
//! instant).

use irqlab_analysis::rta::{response_time, Analysed, Interferer};
use irqlab_sim::config::{Phase, PolicyCfg, Release, ServerCfg, SimConfig, TaskCfg};
use irqlab_sim::simulate;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(60))]
    #[test]
    fn simulated_response_never_exceeds_rta(
        tasks in proptest::collection::vec((1u64..20, 2u64..40), 2..6),
        offsets in proptest::collection::vec(0u64..30, 6),
        synchronous in any::<bool>(),
    ) {
        const U: u64 = 100_000; // 100 us
        let mut ts: Vec<(u64, u64)> = tasks.iter().map(|&(c, k)| (c * U, c * k * U)).collect();
        ts.sort_by_key(|t| t.1);
        let bounds: Vec<Option<u64>> = (0..ts.len()).map(|i| {
            let hp: Vec<Interferer> = ts[..i].iter().map(|&(c, t)| Interferer::new(c, t, 0)).collect();
            response_time(Analysed::new(ts[i].0, ts[i].1, 0), &hp, ts[i].1)
        }).collect();
        // only analyse systems the RTA calls schedulable
        prop_assume!(bounds.iter().all(|b| b.is_some()));
        let cfg = SimConfig {
            cpus: 1,
            path: Default::default(),
            duration: 200 * ts.iter().map(|t| t.1).max().unwrap_or(1),
            seed: 0,
            window: 1_000_000_000,
            servers: ts.iter().enumerate().map(|(i, &(_, t))| ServerCfg {
                name: format!("s{i}"), cpu: 0, policy: PolicyCfg::Unbounded {}, rank: Some(t * 64 + i as u64),
            }).collect(),
            tasks: ts.iter().enumerate().map(|(i, &(c, t))| TaskCfg {
                name: format!("t{i}"), server: i, priority: 1,
                release: Release::Periodic { period: t, deadline: None,
                    offset: if synchronous { 0 } else { offsets[i] * U }, jobs: None },
                program: vec![Phase::Compute { ns: c }],
                abort_on_miss: false,
            }).collect(),
            devices: vec![], classes: vec![], xhci: vec![], virqs: vec![], ipi: 0, switch_overhead: 0, dispatch_delay: 0, switch_costs: Default::default(),
            linux: Default::default(), trace: Default::default(), overhead: Default::default(),
            max_completions: 10_000,
            max_window_values: irqlab_sim::config::default_max_window_values(),
            records: Default::default(),
        };
        let (m, _) = simulate(cfg).expect("valid");
        for (i, t) in m.tasks.iter().enumerate() {
            let bound = bounds[i].unwrap_or(u64::MAX);
            prop_assert!(t.response.max.unwrap_or(0) <= bound, "task {} max {:?} > bound {}", i, t.response.max, bound);
            prop_assert_eq!(t.deadline_misses, 0);
            if synchronous {
                // the critical instant: the first job meets the bound exactly
                prop_assert_eq!(t.completions[0], bound);
            }
        }
    }
}
