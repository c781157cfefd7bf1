//! The fast path of a program of one compute step (for speed,
//! `TaskState::single` in `program.rs`): its release starts the step and
//! its completion ends the job without the program interpreter. The same
//! step inside a loop run once takes the interpreter's path, with the same
//! effects (control steps take no time), so the two programs must give the
//! same metrics and the same per-job records, bit for bit -- on random
//! systems of every kind (`irqlab_sim::testgen`) and on overloaded
//! partitioned rate-monotonic sets (backlogs, deadline aborts, offsets,
//! bounded job counts), where the fast path does most of the work.

use irqlab_sim::config::{Phase, PolicyCfg, Release, ServerCfg, TaskCfg};
use irqlab_sim::testgen::config;
use irqlab_sim::{SimConfig, Simulation};
use proptest::prelude::*;

/// Metrics (as JSON: floats compared by their text) and job records of a
/// run, or its error.
fn outcome(mut cfg: SimConfig) -> Result<(String, String), String> {
    cfg.records.jobs = true;
    let mut sim = Simulation::new(cfg).map_err(|e| e.to_string())?;
    // (to the configured duration)
    sim.run_until(u64::MAX).map_err(|e| e.to_string())?;
    let records = format!("{:?}", sim.take_records());
    let (m, _) = sim.finish().map_err(|e| e.to_string())?;
    Ok((
        serde_json::to_string(&m).expect("metrics serialize"),
        records,
    ))
}

/// Every one-step program `[compute]` as `[loop 1 [compute]]`; returns the
/// number of programs rewritten.
fn wrapped(cfg: &SimConfig) -> (SimConfig, usize) {
    let mut out = cfg.clone();
    let mut n = 0;
    for t in &mut out.tasks {
        if let [Phase::Compute { .. }] = t.program.as_slice() {
            t.program = vec![Phase::Loop {
                count: Some(1),
                body: std::mem::take(&mut t.program),
            }];
            n += 1;
        }
    }
    (out, n)
}

/// The run of `cfg` equals the run with its one-step programs wrapped;
/// returns whether it ran (a refused configuration is refused by both).
fn same_as_interpreted(cfg: SimConfig) -> Result<bool, TestCaseError> {
    let (slow, n) = wrapped(&cfg);
    prop_assume!(n > 0);
    let fast = outcome(cfg);
    prop_assert_eq!(&fast, &outcome(slow));
    Ok(fast.is_ok())
}

/// A partitioned RM set on 1-3 CPUs, possibly overloaded: per task a
/// period, a computation (up to 1.5 periods), an offset, a deadline abort
/// and a bound on its jobs.
fn rm_set() -> impl Strategy<Value = SimConfig> {
    let task = (
        1u64..40,
        1u64..150,
        0u64..20,
        any::<bool>(),
        proptest::option::of(1u64..20),
        0usize..3,
    );
    (proptest::collection::vec(task, 1..8), 1usize..4).prop_map(|(tasks, cpus)| {
        let mut cfg: SimConfig =
            serde_json::from_str(r#"{"duration": 200000000, "tasks": [], "servers": []}"#)
                .expect("an empty system");
        cfg.cpus = cpus;
        for (i, (period, pct, offset, abort, jobs, cpu)) in tasks.into_iter().enumerate() {
            let period = period * 1_000_000;
            cfg.servers.push(ServerCfg {
                name: format!("s{i}"),
                cpu: cpu % cpus,
                rank: Some(period * 100 + i as u64),
                policy: PolicyCfg::Unbounded {},
            });
            cfg.tasks.push(TaskCfg {
                name: format!("t{i}"),
                server: i,
                priority: 1,
                release: Release::Periodic {
                    period,
                    deadline: None,
                    offset: offset * 1_000_000,
                    jobs,
                },
                program: vec![Phase::Compute {
                    ns: period * pct / 100,
                }],
                abort_on_miss: abort,
            });
        }
        cfg
    })
}

/// Random systems of every kind, with their first task's program one
/// compute step (the generator's programs are mostly longer); most of
/// them run (the generator also makes invalid ones, refused by both).
#[test]
fn one_step_programs_run_as_interpreted() {
    use proptest::test_runner::{Config, TestRunner};
    let mut runner = TestRunner::new(Config {
        cases: 300,
        ..Config::default()
    });
    let ran = std::cell::Cell::new(0u32);
    runner
        .run(&(config(), 0u64..3_000_000), |(mut cfg, ns)| {
            if let Some(t) = cfg.tasks.first_mut() {
                t.program = vec![Phase::Compute { ns }];
            }
            if same_as_interpreted(cfg)? {
                ran.set(ran.get() + 1);
            }
            Ok(())
        })
        .unwrap();
    assert!(ran.get() >= 50, "only {} systems ran", ran.get());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Plain rate-monotonic sets, underloaded and overloaded.
    #[test]
    fn rm_sets_run_as_interpreted(cfg in rm_set()) {
        prop_assert!(same_as_interpreted(cfg)?, "a plain RM set runs");
    }
}
