//! How much a PIBS I/O VCPU (QUEST-VCPU Alg. 7-10) can take from the
//! servers below it: a worst-case consumption in any window, derived from
//! the algorithm (issue 35), replacing the assumed `U (w + 2 T)`; and at
//! which priorities it can take it.
//!
//! **P1 -- consumption in a window.** An I/O VCPU of utilization `U`
//! serving Main VCPUs of periods up to `T` (so `C_max = floor(U T)`, Alg.
//! 10) executes in *chunks*: a chunk starts when a replenishment is due
//! and the server has work (eligibility `e_i`), and ends when the server
//! blocks or its budget (at most `C_max`) runs out (Alg. 7); then `V_e +=
//! used / U` (line 5, rounded up by the core, i.e. later) and the next
//! replenishment is at the new `V_e`; an unblock only moves `V_e` later
//! (Alg. 10 lines 3-4). So `e_{i+1} >= e_i + u_i / U` for the chunks'
//! sizes `u_i <= C_max`, and the chunks released in any window of length
//! `l` sum to at most `U l + C_max`. Let `D` bound the time from a chunk's
//! release to its end (`D = C_max` for an I/O VCPU nothing preempts; else
//! `chunk_response`, the RTA of that chunk stream at its lowest inheritable
//! priority). In a window `[a, a + w]`, let chunk `f` be the first one
//! executing in it, `x` of it inside: it ends after `a + x`, so `e_f >=
//! a + x - D` and `e_{f+1} >= e_f + x / U`; the chunks after it start by
//! `a + w`, and the last one contributes at most `min(C_max, a + w -
//! e_n)`.
//! Summing, the consumption is at most
//!
//! ```text
//! W(w) = U (w + D - C_max) + C_max        (D >= C_max)
//! ```
//!
//! as an interferer `ceil((w + J) / den) num` with `J = T + D - C_max`
//! (`U (w + J) >= W(w)` since `C_max <= U T`). For `D = C_max` this is
//! `U w + C_max`: over the window `T` of QUEST-VCPU Eq. 3 it is `2 C_max`,
//! against the paper's `(2 - U) C_max` for a never-preempted server
//! (which `tests/pibs_exhaustive.rs` finds reached); the stated factor is
//! `W(w) / max found <= 2 / (2 - U)` at `w = T`, and the test checks that
//! the search reaches `W(w)` within `C_max` for every `w`. The old
//! assumption `U (w + 2 T)` has `J = 2 T`; `W` is below it whenever `D <=
//! T + C_max`, and unlike it it holds when the I/O VCPU is preempted (`D`
//! then comes from the RTA).
//!
//! **P2 -- where it interferes.** An I/O VCPU runs at the period it
//! inherits (Alg. 10), always one of the periods of the Main VCPUs whose
//! tasks' I/O its classes serve or that consume its unsolicited events
//! (`inherit: paper` keeps the highest until it blocks, `strict` drops to
//! the next waiter; either way one of those periods; before its first
//! request it has the lowest priority and no budget). It ranks before a
//! Main VCPU of the same period (the core's `tie`). So it can preempt a
//! Main VCPU of period `P` only if its shortest inheritable period is at
//! most `P` (`interferes_with`), and then by at most `W`.
//!
//! Design principles: exact rational `U = num / den`, integer ns, ceilings
//! on the safe side; the window bound is a function, the interferer its
//! step-form upper bound for the RTA.

use crate::rta::{analyse, Analysed, Interferer, Origin};

/// `C_max = floor(U T)`.
pub fn c_max(num: u64, den: u64, t: u64) -> u64 {
    if den == 0 {
        return 0;
    }
    u64::try_from(u128::from(num) * u128::from(t) / u128::from(den)).unwrap_or(u64::MAX)
}

/// `ceil(U T)`, the chunk size the RTA uses (at least `C_max`).
fn c_max_ceil(num: u64, den: u64, t: u64) -> u64 {
    if den == 0 {
        return 0;
    }
    u64::try_from((u128::from(num) * u128::from(t)).div_ceil(u128::from(den))).unwrap_or(u64::MAX)
}

/// P1's `W(w) = min(w, ceil(U (w + D - C_max)) + C_max)` (`d` is raised
/// to `C_max` if below it).
pub fn window_bound(num: u64, den: u64, t: u64, d: u64, w: u64) -> u64 {
    let cm = c_max(num, den, t);
    if den == 0 {
        return u64::MAX;
    }
    let span = u128::from(w) + u128::from(d.max(cm)) - u128::from(cm);
    let u = (span * u128::from(num)).div_ceil(u128::from(den));
    // and never more than the window itself
    u64::try_from(u)
        .unwrap_or(u64::MAX)
        .saturating_add(cm)
        .min(w)
}

/// P1 as an `rta::Interferer`: `ceil((w + T + D - C_max) / den) num`.
pub fn interferer(num: u64, den: u64, t: u64, d: u64) -> Interferer {
    let cm = c_max(num, den, t);
    let j = t.saturating_add(d.max(cm) - cm);
    Interferer::new(num, den, j)
}

/// `D` of P1: the longest time from a chunk's release to its end, the RTA
/// of the chunk stream (`ceil(U T)` per `T` with jitter `T`: at most `U l
/// + C_max` released in a window `l`) below `hp`, the interference at the
/// I/O VCPU's lowest inheritable priority. `None` above `limit`.
pub fn chunk_response(num: u64, den: u64, t: u64, hp: &[Interferer], limit: u64) -> Option<u64> {
    let c = c_max_ceil(num, den, t);
    if c == 0 {
        return Some(0);
    }
    if hp.is_empty() {
        return Some(c_max(num, den, t).max(1));
    }
    analyse(Analysed::new(c, t, t), hp, Origin::Arrival, limit)
        .ok()
        .map(|r| r.response)
}

/// One I/O VCPU of a CPU for `chunk_responses`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IoVcpu {
    pub num: u64,
    pub den: u64,
    /// Longest and shortest inheritable periods.
    pub t_max: u64,
    pub t_min: u64,
    /// What else preempts it at `t_max` (top halves, Main VCPUs of shorter
    /// periods), not the other I/O VCPUs.
    pub hp: Vec<Interferer>,
}

/// `D` of every I/O VCPU of a CPU, the I/O VCPUs preempting each other
/// (one can preempt another at its lowest priority when its shortest
/// inheritable period is at most the other's longest): the least fixed
/// point from `D = C_max`, each round with the others' P1 interferers at
/// the current `D` (monotone, so the limit is sound). `None` for one
/// without a bound within `limit` (and every one it preempts).
pub fn chunk_responses(ios: &[IoVcpu], limit: u64) -> Vec<Option<u64>> {
    let mut d: Vec<Option<u64>> = ios
        .iter()
        .map(|v| Some(c_max(v.num, v.den, v.t_max).max(1)))
        .collect();
    for _ in 0..64 {
        let mut next = d.clone();
        for (i, v) in ios.iter().enumerate() {
            let mut hp = v.hp.clone();
            let mut ok = true;
            for (j, o) in ios.iter().enumerate() {
                if j == i || o.t_min > v.t_max {
                    continue;
                }
                match d[j] {
                    Some(dj) => hp.push(interferer(o.num, o.den, o.t_max, dj)),
                    None => ok = false,
                }
            }
            next[i] = if ok {
                chunk_response(v.num, v.den, v.t_max, &hp, limit)
            } else {
                None
            };
        }
        if next == d {
            return d;
        }
        d = next;
    }
    vec![None; ios.len()]
}

/// P3: an I/O VCPU's consumption from its work. It executes only its
/// bottom halves, `work` (each source `ceil((w + J) / T) C`), and the top
/// halves `charged` to it while it runs. While it has work its chunks of
/// `C_max` come at least every `T` (`V_e += used / U`, `used <= C_max`,
/// plus 1 ns of rounding) and end within `D` of their due time, so it
/// supplies its work like `server::OwnSupply` (S1) with `(C_max, T + 1,
/// D + 1)`; every unit of work ends within the busy period `Delta` of work
/// and charged top halves over that supply, so a window `w` holds at most
/// the work that arrived in `w + Delta` before its end: each source with
/// jitter `J + Delta`. `None` without a bound (`D > T`, `C_max = 0`, or a
/// busy period that does not close).
pub fn work_interferers(
    c_max: u64,
    t: u64,
    d: u64,
    work: &[Interferer],
    charged: &[Interferer],
) -> Option<Vec<Interferer>> {
    if work.is_empty() {
        return Some(Vec::new());
    }
    let sup = crate::server::OwnSupply::new(
        crate::server::Replenish::Sporadic,
        c_max,
        t.checked_add(1)?,
        d.checked_add(1)?,
    )
    .ok()?;
    let mut load = work.to_vec();
    load.extend(charged.iter().copied());
    let delta = crate::rta::analyse_over(
        Analysed::new(1, crate::server::ONCE, 0),
        &load,
        Origin::Arrival,
        crate::server::ONCE / 1024,
        crate::rta::Terms::ALL,
        &sup,
    )
    .ok()?
    .busy_period;
    Some(
        work.iter()
            .map(|i| Interferer {
                jitter: i.jitter.saturating_add(delta),
                alt: i.alt.map(|(c, p, j)| (c, p, j.saturating_add(delta))),
                ..*i
            })
            .collect(),
    )
}

/// P2: can an I/O VCPU whose inheritable periods are `periods` preempt a
/// Main VCPU of period (RM key) `key`?
pub fn interferes_with(periods: &[u64], key: u64) -> bool {
    periods.iter().any(|&p| p <= key)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// U = 1/2, T = 4 (QUEST-VCPU Figure 2): C_max = 2; never preempted
    /// (D = 2): W(4) = 2 + 2 = 4, the paper's (2 - U) C_max = 3; as an
    /// interferer J = 4: ceil((4 + 4) / 2) 1 = 4.
    #[test]
    fn by_hand() {
        assert_eq!(c_max(1, 2, 4), 2);
        assert_eq!(window_bound(1, 2, 4, 2, 4), 4);
        assert_eq!(window_bound(1, 2, 4, 2, 1), 1);
        assert_eq!(window_bound(1, 2, 4, 5, 10), 7 + 2);
        assert_eq!(interferer(1, 2, 4, 2).demand(4), 4);
        assert!(interferer(1, 2, 4, 2).jitter < 2 * 4);
        assert!(interferes_with(&[10, 33], 10) && !interferes_with(&[33], 10));
        assert_eq!(chunk_response(1, 2, 4, &[], 100), Some(2));
        // two I/O VCPUs at the same periods preempt each other: each
        // chunk of 2 may wait for the other's 2 (and its back-to-back
        // chunk): more than C_max, still bounded
        let io = IoVcpu {
            num: 1,
            den: 4,
            t_max: 8,
            t_min: 8,
            hp: vec![],
        };
        let d = chunk_responses(&[io.clone(), io], 1000);
        assert!(d.iter().all(|x| x.is_some_and(|x| x > 2)), "{d:?}");
    }
}
