//! S1 and S2 (`irqlab_analysis::server`) against the core by proptest, on
//! larger random cases than the exhaustive search: two sporadic servers
//! above the analysed one, random budget histories and windows (S1), a
//! single client with random suspensions (S2). No observation may fall
//! below S1's sbf or above S2's bound.

mod core_machine;

use core_machine::{consumed, machine, periodic, run, sporadic, Job, Work};
use irqlab_analysis::rta::Interferer;
use irqlab_analysis::server::{own_response, server_response, OwnJob, OwnSupply, Replenish, ONCE};
use proptest::prelude::*;

fn above() -> impl Strategy<Value = Vec<(u64, u64, u64)>> {
    // (c, T, phase): each at most 40 % of the CPU
    prop::collection::vec((1u64..5, 10u64..40, 0u64..40), 2)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn s1_random(c in 1u64..12, extra in 1u64..40, hps in above(),
                 pre in prop::collection::vec((0u64..80, 1u64..12), 0..4), a in 0u64..120) {
        let t = 40 + extra; // every interferer's period is below T
        let hp: Vec<Interferer> = hps.iter().map(|&(ch, th, _)| Interferer::new(ch, th, 0)).collect();
        let r = server_response(c, t, &hp);
        prop_assume!(r.is_some());
        let r = r.unwrap_or(t);
        let sup = OwnSupply::new(Replenish::Sporadic, c, t, r).expect("C <= R <= T");
        let mut servers: Vec<_> = hps.iter().map(|&(ch, th, _)| sporadic(ch, th)).collect();
        servers.push(sporadic(c, t));
        let threads = [(0, 1), (1, 1), (2, 1), (2, 2)];
        let (mut s, ids, tids) = machine(servers, &threads);
        let len = 3 * t;
        let horizon = a + len + 1;
        let mut works: Vec<Work> = hps.iter().enumerate().map(|(i, &(ch, th, ph))| Work {
            thread: tids[i], jobs: periodic(ph % th, th, horizon, &[(0, ch)]), inherit: None,
        }).collect();
        let mut jobs: Vec<Job> = pre.iter().map(|&(at, w)| Job { release: at, segs: vec![(0, w)] }).collect();
        jobs.sort_by_key(|j| j.release);
        works.push(Work { thread: tids[2], jobs, inherit: None });
        works.push(Work { thread: tids[3], jobs: vec![Job { release: a, segs: vec![(0, 10 * horizon)] }], inherit: None });
        let out = run(&mut s, &works, horizon);
        for w in 0..=len {
            let got = consumed(&out.segs, ids[2], a, a + w);
            prop_assert!(got >= sup.sbf(w), "w {} got {} sbf {} (C {} T {} R {})", w, got, sup.sbf(w), c, t, r);
        }
    }

    #[test]
    fn s2_random(slack in 0u64..6, extra in 1u64..40, hps in above(), c0 in 1u64..4, c1 in 1u64..10,
                 l in 0u64..30, pat in prop::collection::vec(0u64..=100, 6)) {
        let t = 40 + extra;
        let hp: Vec<Interferer> = hps.iter().map(|&(ch, th, _)| Interferer::new(ch, th, 0)).collect();
        let (c0, c1) = if l == 0 { (0, c0 + c1) } else { (c0, c1) };
        // within one budget: E + c0 <= C
        let c = 2 * c0 + c1 + slack;
        let job = OwnJob { head: c0, suspension: l, demand: c1, min_interarrival: t };
        let b = own_response(c, t, job, &hp, &[], ONCE);
        prop_assume!(b.is_ok());
        let Ok(b) = b else { return Ok(()) };
        let mut servers: Vec<_> = hps.iter().map(|&(ch, th, _)| sporadic(ch, th)).collect();
        servers.push(sporadic(c, t));
        let (mut s, _, tids) = machine(servers, &[(0, 1), (1, 1), (2, 1)]);
        let n = pat.len() as u64;
        let horizon = n * t + 10 * t;
        let jobs: Vec<Job> = pat.iter().enumerate().map(|(k, &p)| Job {
            release: k as u64 * t + 1,
            segs: if l == 0 { vec![(0, c1)] } else { vec![(0, c0), (p * l / 100, c1)] },
        }).collect();
        let mut works: Vec<Work> = hps.iter().enumerate().map(|(i, &(ch, th, ph))| Work {
            thread: tids[i], jobs: periodic(ph % th, th, horizon, &[(0, ch)]), inherit: None,
        }).collect();
        works.push(Work { thread: tids[2], jobs, inherit: None });
        let out = run(&mut s, &works, horizon);
        prop_assert_eq!(out.done[2].len() as u64, n);
        for &(r, _, f) in &out.done[2] {
            prop_assert!(f - r <= b.response, "{} > {}", f - r, b.response);
        }
    }
}
