//! What a budgeted server guarantees its clients, from the server's own
//! schedule on its CPU (issue 35, DESIGN.md §6): its replenishment rule,
//! its budget `C` and period `T`, and its own worst-case response `R` --
//! the time it needs to consume a budget that became available, from the
//! fixed-priority RTA (`rta`) with everything that can preempt it (top
//! halves, more urgent servers, the I/O VCPUs that can inherit a priority
//! at or above it: `pibs`).
//!
//! Two results, each with its conditions (docs/analysis.md repeats them):
//!
//! **S1 -- supply with a blackout from `R`** (`OwnSupply`). Conditions:
//! `0 < C <= R <= T`; sporadic: the replenishment queue never fills (Alg.
//! 12 line 3-5) and the server never overruns its budget (Alg. 11 lines
//! 9-16: the scheduler is called at every budget exhaustion, as the core's
//! `next_update` guarantees). In any window `[a, a + t]` throughout which
//! the server has work, it executes at least `sbf(t)`, whose inverse is
//!
//! ```text
//! time_to(x) = B + k T + (x - k C),   k = ceil(x / C) - 1,
//! B = (T - C) + (R - C)   sporadic (QUEST-VCPU Alg. 3-6, 11-13), deferrable
//! B = T + R - C           polling
//! ```
//!
//! (the periodic resource model's `2 (T - C)` is the case `R = T`).
//! Proof, sporadic: while the server has work it never blocks, so Alg. 13
//! never runs and no replenishment moves; execution at `u` is charged to a
//! due entry (time `<= u`), and a used-up entry comes back `T` after its
//! time (Alg. 11 lines 2-8), so each unit executed at `u` is due again by
//! `u + T`. Before `a` the server executed at most `y` in `(a - y, a)`, so
//! at most `y` of the budget comes back after `a + T - y`: by `a + tau`
//! at least `tau - (T - C)` is due. The server serves what is due at its
//! priority with the service `d - I(d)` in any window `d` (`I` the
//! interference above it), so `x <= C` is executed by `a + (T - C) +
//! r(x)`, `r(x)` the single-job RTA of `x` (a unit due at `a + T - C + z`
//! needs `z + r(x - z) <= r(x)` more); and `r(x) <= R - (C - x)` (the RTA
//! grows by at least the added work). Every unit executed in the window
//! is due again `T` later, so the `j`-th budget follows `T` after the
//! `(j-1)`-th. Deferrable: `C` at each period boundary `kT`, executed by
//! `kT + r(x)`; the worst window starts when the period's budget is gone,
//! at least `C` after the period start, so `x` is executed by `a + (T -
//! C) + r(x)`. Polling: as deferrable, but the budget is lost when the
//! server idles, even right after the boundary: `a + T + r(x)`.
//! `tests/server_exhaustive.rs` checks S1 on the core's servers over every
//! phasing of small integer cases, shows the bound reached, and shows the
//! `R - C` term necessary (`s1_blackout_needs_r_minus_c`).
//!
//! **S2 -- the server as its own client** (`own_response`; Davis & Burns,
//! "Hierarchical fixed priority pre-emptive scheduling", RTSS 2005, and
//! MAST's sporadic-server task model analyse a task in a sporadic server
//! this way). Conditions: a sporadic server, every thread of it belongs to
//! one task; the task's jobs are released at least `T_a >= T` apart; a job
//! is a run of `c0` at its release, then optionally one suspension of at
//! most `L` (a blocking read, with the time to issue it inside `c0`'s
//! run; issuing takes a dispatch, so `c0` counts as at least 1 ns), then
//! a run of `c1`; `E = c0 + c1` plus the top halves charged to
//! the server while the job runs is what it consumes of the budget; the
//! job completes within `T_a`; the queue never fills and the server never
//! overruns. With `r(x)` the FP RTA of a single job of `x` at the server's
//! priority (everything that can preempt the server interfering, on the
//! whole CPU):
//!
//! ```text
//! no suspension, E <= C:           R_job = r(E)
//! suspension, E + c0 <= C:         R_job = r(c0) + L + r(c1)
//! no suspension, E > C:            R_job = (k - 1) T + r(E - (k - 1) g)
//!                                  g = C - charged(r(C)), k = ceil(E / g),
//!                                  k T <= T_a, r(C) <= T
//! ```
//!
//! Proof (one budget): every execution at `u` is charged to a due entry
//! (time `<= u`), and an entry's new time is its old time (or, at Alg. 13
//! line 4 and its merges, the wake-up `now`) plus `T`. Let `A = r(c0) + L`
//! (`0` without a suspension). Invariant: at a release `r_k` every entry's
//! time is at most `r_k + A`. It holds at the start; job `k`'s wake-ups are
//! at most `r_k + A`, so every time it gives an entry is at most `r_k + A +
//! T <= r_{k+1} + A`. The entries not yet due at `r_k` are the previous
//! job's, at most `E`, so at least `C - E >= c0` is due: the first run
//! never waits for budget and ends by `r_k + r(c0)`, the wake-up is by
//! `r_k + A`, and from `r_k + A` on the whole budget is due while the job
//! needs at most `c1`: it never waits again and ends by `r_k + A + r(c1)`.
//! Without a suspension `A = 0` and the same argument gives `r(E)`. Beyond
//! one budget: the job wakes the server at `r`, which merges every due
//! entry into one `(C, r)` (Alg. 13 lines 4-12); the server stays
//! runnable, so each exhausted budget comes back exactly `T` later (Alg. 11
//! lines 2-8); the `j`-th budget is due at `r + (j - 1) T` and consumed
//! within `r(C) <= T`, giving the job at least `g`; the last, partial chunk
//! ends `r(E - (k - 1) g)` after its budget is due; the last entry comes
//! back at `r + k T <= r_{k+1}`, so the next job starts with the whole
//! budget again. This is MAST's `(k - 1) T + R_last` for a task in a
//! sporadic server. `tests/server_exhaustive.rs` checks S2 against the
//! core (every phasing of a periodic interferer, every pattern of
//! suspensions within `L`), shows it reached, and shows the invariant
//! necessary: a bound that counts the second run from its own wake-up
//! alone (`s + r(c1)`, what a per-segment analysis without the budget
//! gives) is exceeded (`s2_wakeup_alone_is_unsound`).
//!
//! **S3 -- a sporadic server that never runs out** (`never_depleted`).
//! Conditions: a sporadic server (no full queue, no overrun) whose clients
//! are tasks `i` with jobs at least `T_i` apart, execution `E_i` per job and
//! response `R_i` computed as if the server always had budget (the FP RTA
//! at the server's priority, the server's more urgent tasks and everything
//! that preempts the server above); `charged` what is charged to its
//! budget besides (top halves), in a window `T`. If
//!
//! ```text
//! sum_i E_i ceil((T + R_i) / T_i) + charged(T) < C
//! ```
//!
//! the server has budget whenever it has work, so those `R_i` are its
//! clients' bounds. Proof: each unit executed at `u` is due again by `u +
//! T`, so at any `v` at least `C - exec(v - T, v)` is due; a job that
//! executes in `(v - T, v)` was released in `(v - T - R_i, v)`, at most
//! `ceil((T + R_i) / T_i)` of task `i`; so `exec(v - T, v) < C` up to the
//! first instant the server could run out, a contradiction (induction on
//! that instant). `tests/server_exhaustive.rs::s3_never_depleted` checks
//! it on the core with two clients; where the condition fails the
//! no-stall RTAs are exceeded (`s3_condition_needed`). The search did not
//! find a case needing the `T` in `ceil((T + R_i) / T_i)` rather than
//! `ceil(R_i / T_i)`; the proof needs it, so it stays.
//!
//! Deferrable and polling servers get S1 only: a job released just before
//! a period boundary may find the budget used by the previous job's tail,
//! so "the whole budget at each release" does not hold for them.
//!
//! Design principles: integer nanoseconds, exact ceilings, saturating
//! arithmetic; a condition that does not hold is an `Err` naming it, never
//! a weaker bound silently.

use crate::rta::{analyse, demand, Analysed, Interferer, Origin, SupplyBound};
use serde::Serialize;

/// "Never again" as a period: one job in all (the same constant as the
/// whole-model analysis).
pub const ONCE: u64 = u64::MAX / 4;

/// A budgeted server's replenishment rule.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Replenish {
    /// QUEST-VCPU Alg. 3-6, 11-13.
    Sporadic,
    /// Full budget at each period boundary (VINT §III).
    Deferrable,
    /// Budget at each boundary if there is work then, lost when idle.
    Polling,
}

/// S1: the supply of a server `(C, T)` whose own response is `R`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OwnSupply {
    pub policy: Replenish,
    pub budget: u64,
    pub period: u64,
    pub response: u64,
}

impl OwnSupply {
    /// `Err` unless `0 < C <= R <= T`.
    pub fn new(
        policy: Replenish,
        budget: u64,
        period: u64,
        response: u64,
    ) -> Result<OwnSupply, String> {
        if budget == 0 || budget > response || response > period {
            return Err(format!(
                "S1 needs 0 < C <= R <= T (C {budget}, R {response}, T {period})"
            ));
        }
        Ok(OwnSupply {
            policy,
            budget,
            period,
            response,
        })
    }

    /// The longest window without supply, `B` (module doc).
    pub fn blackout(&self) -> u64 {
        let (c, t, r) = (self.budget, self.period, self.response);
        match self.policy {
            Replenish::Sporadic | Replenish::Deferrable => (t - c) + (r - c),
            Replenish::Polling => t + r - c,
        }
    }

    /// The supply-bound function: the least supply in a window `t`.
    pub fn sbf(&self, t: u64) -> u64 {
        let (c, p) = (self.budget, self.period);
        let b = self.blackout();
        if t <= b {
            return 0;
        }
        let k = (t - b) / p;
        k.saturating_mul(c).saturating_add(((t - b) % p).min(c))
    }
}

impl SupplyBound for OwnSupply {
    fn time_to(&self, x: u64) -> u64 {
        if x == 0 {
            return 0;
        }
        let (c, t) = (self.budget, self.period);
        let k = x.div_ceil(c) - 1;
        self.blackout()
            .saturating_add(k.saturating_mul(t))
            .saturating_add(x - k * c)
    }
    fn rate(&self) -> f64 {
        self.budget as f64 / self.period.max(1) as f64
    }
}

/// The response `R` of a server `(C, T)` below `hp` (the FP RTA of the
/// periodic task `(C, T)`, every job of its busy period; `None` above
/// `T`): S1's input.
pub fn server_response(budget: u64, period: u64, hp: &[Interferer]) -> Option<u64> {
    if budget == 0 {
        return Some(0);
    }
    analyse(
        Analysed::new(budget, period, 0),
        hp,
        Origin::Arrival,
        period,
    )
    .ok()
    .map(|r| r.response)
}

/// The job of S2 (module doc).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OwnJob {
    /// `c0`: its run at the release (before a suspension).
    pub head: u64,
    /// `L`: the suspension's bound (0: none).
    pub suspension: u64,
    /// `c1`: its run after the suspension (without one: the whole job).
    pub demand: u64,
    /// `T_a`: least time between releases (`ONCE`: released once).
    pub min_interarrival: u64,
}

/// S3: `(E_i, T_i, R_i)` of the clients, `charged` in a window `T`.
pub fn never_depleted(budget: u64, period: u64, clients: &[(u64, u64, u64)], charged: u64) -> bool {
    never_depleted_with(budget, period, clients, charged, true)
}

/// `never_depleted` with (`window`) or without the server's own period in
/// the count of jobs (without it is not safe; for the tests).
pub fn never_depleted_with(
    budget: u64,
    period: u64,
    clients: &[(u64, u64, u64)],
    charged: u64,
    window: bool,
) -> bool {
    let span = |r: u64| if window { period.saturating_add(r) } else { r };
    let used = clients.iter().fold(charged, |acc, &(e, t, r)| {
        acc.saturating_add(e.saturating_mul(span(r).div_ceil(t.max(1))))
    });
    used < budget
}

/// S2's bound and its terms.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OwnBound {
    pub response: u64,
    /// `k`: budgets the job spans.
    pub chunks: u64,
    /// `r(...)` of the last chunk.
    pub last_chunk: u64,
    /// Budget the job consumes with the top halves charged to it.
    pub consumed: u64,
}

fn rta_one(x: u64, hp: &[Interferer], limit: u64) -> Option<u64> {
    if x == 0 {
        return Some(0);
    }
    analyse(Analysed::new(x, ONCE, 0), hp, Origin::Arrival, limit)
        .ok()
        .map(|r| r.response)
}

/// S2: the response of a job of a sporadic server `(C, T)` that is its
/// server's only client (module doc). `hp`: everything that can preempt
/// the server, top halves included; `charged`: the interference in `hp`
/// charged to the server's budget while it runs (top halves on `quest`).
/// `Err`: which condition fails (use S1 then).
pub fn own_response(
    budget: u64,
    period: u64,
    job: OwnJob,
    hp: &[Interferer],
    charged: &[Interferer],
    limit: u64,
) -> Result<OwnBound, String> {
    let (c, t) = (budget, period);
    if c == 0 || t == 0 {
        return Err("a server without budget".into());
    }
    if job.min_interarrival < t {
        return Err(format!(
            "S2 needs jobs at least the server's period apart ({} < {t})",
            job.min_interarrival
        ));
    }
    let cap = limit.min(job.min_interarrival);
    let fits = |x: u64, r: u64| x.saturating_add(demand(charged, r)) <= c;
    let suspends = job.suspension > 0 || job.head > 0;
    if suspends {
        // issuing the read takes a dispatch: at least 1 ns of budget
        let head = job.head.max(1);
        let r0 = rta_one(head, hp, cap).ok_or("its first run exceeds its limit")?;
        let lead = r0.saturating_add(job.suspension);
        let r1 = rta_one(job.demand, hp, cap.saturating_sub(lead))
            .ok_or("its run after the suspension exceeds its limit")?;
        // what is charged to the budget lands inside the job's window
        let consumed = head
            .saturating_add(job.demand)
            .saturating_add(demand(charged, lead.saturating_add(r1)));
        if consumed.saturating_add(head) > c {
            return Err(format!(
                "S2 needs E + c0 <= C with a suspension ({consumed} + {head} > {c})"
            ));
        }
        return Ok(OwnBound {
            response: lead + r1,
            chunks: 1,
            last_chunk: r1,
            consumed,
        });
    }
    let e = job.demand;
    // one budget
    if let Some(r) = rta_one(e, hp, cap) {
        if fits(e, r) {
            return Ok(OwnBound {
                response: r,
                chunks: 1,
                last_chunk: r,
                consumed: e.saturating_add(demand(charged, r)),
            });
        }
    }
    let rc = rta_one(c, hp, t).ok_or("the server does not consume its budget within T")?;
    let g = c.saturating_sub(demand(charged, rc));
    if g == 0 {
        return Err("the charged top halves take the whole budget".into());
    }
    let mut k = e.div_ceil(g).max(1);
    loop {
        if k.saturating_mul(t) > job.min_interarrival {
            return Err(format!(
                "S2 needs ceil(E / g) T <= T_a ({k} x {t} > {})",
                job.min_interarrival
            ));
        }
        let rest = e - (k - 1).saturating_mul(g).min(e);
        let lim = cap.saturating_sub((k - 1) * t);
        let r = rta_one(rest, hp, lim).ok_or("the job exceeds its limit")?;
        if fits(rest, r) {
            return Ok(OwnBound {
                response: (k - 1) * t + r,
                chunks: k,
                last_chunk: r,
                consumed: e.saturating_add(demand(charged, rc).saturating_mul(k)),
            });
        }
        k += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The issue's example: a 58 us job alone in the top server 90 us /
    /// 4.8 ms gets its own 58 us (nothing above it), not 9,478 us.
    #[test]
    fn issue_top_server() {
        const US: u64 = 1000;
        let job = OwnJob {
            head: 0,
            suspension: 0,
            demand: 58 * US,
            min_interarrival: 4_800 * US,
        };
        let b = own_response(90 * US, 4_800 * US, job, &[], &[], 4_800 * US).unwrap();
        assert_eq!((b.response, b.chunks), (58 * US, 1));
    }

    /// S1 by hand: (C 2, T 10) with R 5: blackout 8 + 3 = 11; the PRM's is
    /// 16. time_to(1) = 12, time_to(3) = 11 + 10 + 1 = 22.
    #[test]
    fn s1_by_hand() {
        let s = OwnSupply::new(Replenish::Sporadic, 2, 10, 5).unwrap();
        assert_eq!(s.blackout(), 11);
        assert_eq!((s.time_to(1), s.time_to(2), s.time_to(3)), (12, 13, 22));
        for x in 0..9 {
            let w = s.time_to(x);
            assert!(s.sbf(w) >= x && (w == 0 || s.sbf(w - 1) < x), "x {x}");
        }
        assert_eq!(crate::prm::time_to_supply(10, 2, 1), 17);
        let p = OwnSupply::new(Replenish::Polling, 2, 10, 5).unwrap();
        assert_eq!(p.blackout(), 13);
        assert!(OwnSupply::new(Replenish::Sporadic, 3, 10, 2).is_err());
    }

    /// S2 beyond one budget: E 5 in (C 2, T 10), interference (1, 4): r(2)
    /// = 3, g = 2, k = 3, the last chunk r(1) = 2: 20 + 2 = 22 (MAST's
    /// (k - 1) T + R_last).
    #[test]
    fn s2_chunks() {
        let hp = [Interferer::new(1, 4, 0)];
        let job = OwnJob {
            head: 0,
            suspension: 0,
            demand: 5,
            min_interarrival: 30,
        };
        let b = own_response(2, 10, job, &hp, &[], 30).unwrap();
        assert_eq!((b.response, b.chunks, b.last_chunk), (22, 3, 2));
        // k T > T_a: not covered
        let job = OwnJob {
            min_interarrival: 29,
            ..job
        };
        assert!(own_response(2, 10, job, &hp, &[], 30).is_err());
    }
}
