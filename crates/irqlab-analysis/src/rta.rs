//! Fixed-priority response-time analysis on one CPU: the level-i busy
//! period with release jitter, constrained or arbitrary deadlines and
//! every job of the analysed task in the busy window (Lehoczky's busy
//! period, Tindell's jitter, Audsley et al.). It is exact for preemptive
//! fixed priorities when every task may be released synchronously with its
//! worst jitter, and it is the fixed-point iteration every VINT equation
//! (Eq. 3-8), every ISR, IPI and guest or VCPU task bound uses.
//!
//! Job `q` (`q = 0, 1, ...`) of the analysed task `(C, T, J)` in a level-i
//! busy period that opens at 0 completes at the latest at
//! `w_q = (q + 1) C + sum_j ceil((w_q + J_j) / T_j) C_j`, and the busy
//! period goes on to job `q + 1` while `w_q > (q + 1) T - J`. Two ways to
//! measure the response (`Origin`):
//! * `Arrival` -- from the job's own arrival, which can be up to `J` after
//!   its nominal release: job `q` arrives no earlier than
//!   `max(0, q T - J)`, so `R = max_q (w_q - max(0, q T - J))`. This is
//!   what an IPI or a bottom half needs: its arrival is the end of what
//!   sent it, which its own bound already covers.
//! * `Release` -- from the nominal release (Tindell's form):
//!   `R = max_q (w_q + J - q T)`. This is what a task with an end-to-end
//!   deadline from its nominal release needs.
//!
//! The issue-14 example (`tests/rta_exhaustive.rs`): hp tasks (26, 75, 0),
//! (10, 121, 0), (21, 362, 178), task (215, 596, J 262): `w_0 = 479`, the
//! second job may arrive 334 after the first and `w_1 = 885`, so from its
//! arrival the bound is `885 - 334 = 551` (a single-job analysis says 479);
//! from the nominal release it is `479 + 262 = 741`.
//!
//! Design principles: integer nanoseconds, exact ceilings, saturating
//! arithmetic; the iteration stops as soon as a response exceeds the
//! caller's `limit` (the deadline), so a failing test costs no more than a
//! passing one; a busy period of more than `MAX_JOBS` jobs of the analysed
//! task is reported as unbounded, never looped on.

/// A source of interference: `ceil((w + jitter) / period) * cost` in any
/// window `w` (a higher-priority task, an ISR, a server, a supply gap);
/// with `alt`, a second sound bound `(cost, period, jitter)` of the same
/// source, the smaller of the two in each window (e.g. a device's
/// requests per job and its one-transfer-at-a-time pace).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Interferer {
    pub cost: u64,
    pub period: u64,
    pub jitter: u64,
    pub alt: Option<(u64, u64, u64)>,
}

fn eta(cost: u64, period: u64, jitter: u64, w: u64) -> u64 {
    if period == 0 {
        return u64::MAX;
    }
    w.saturating_add(jitter)
        .div_ceil(period)
        .saturating_mul(cost)
}

impl Interferer {
    pub fn new(cost: u64, period: u64, jitter: u64) -> Interferer {
        Interferer {
            cost,
            period,
            jitter,
            alt: None,
        }
    }
    /// The same source with a second sound bound.
    pub fn or(self, cost: u64, period: u64, jitter: u64) -> Interferer {
        Interferer {
            alt: Some((cost, period, jitter)),
            ..self
        }
    }
    /// Interference in a window of length `w`.
    pub fn demand(&self, w: u64) -> u64 {
        let a = eta(self.cost, self.period, self.jitter, w);
        match self.alt {
            Some((c, p, j)) => a.min(eta(c, p, j, w)),
            None => a,
        }
    }
}

/// Total interference of `inter` in a window `w`.
pub fn demand(inter: &[Interferer], w: u64) -> u64 {
    inter
        .iter()
        .fold(0u64, |acc, i| acc.saturating_add(i.demand(w)))
}

/// The task under analysis.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Analysed {
    pub wcet: u64,
    pub period: u64,
    /// Release jitter: each job arrives up to `jitter` after its nominal
    /// release.
    pub jitter: u64,
}

impl Analysed {
    pub fn new(wcet: u64, period: u64, jitter: u64) -> Analysed {
        Analysed {
            wcet,
            period,
            jitter,
        }
    }
}

/// Where a response time is measured from (see the module doc).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum Origin {
    /// From the job's own (jittered) arrival.
    #[default]
    Arrival,
    /// From the job's nominal release (Tindell).
    Release,
}

/// Most jobs of the analysed task looked at in one busy period.
pub const MAX_JOBS: u64 = 1 << 20;

/// A bound and how it was found.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Rta {
    pub response: u64,
    /// Jobs of the analysed task in its level-i busy period.
    pub jobs: u64,
    /// The job (0-based) whose response is the bound.
    pub worst_job: u64,
    /// Length of the level-i busy period.
    pub busy_period: u64,
}

/// Why there is no bound.
#[derive(Copy, Clone, Debug, PartialEq, thiserror::Error)]
pub enum NoBound {
    #[error("response of job {job} exceeds {limit} ns")]
    ExceedsLimit { job: u64, limit: u64 },
    #[error("the level-i busy period holds more than {MAX_JOBS} jobs (utilization 1 with jitter)")]
    BusyPeriodUnbounded,
    #[error("a zero period: unbounded interference")]
    ZeroPeriod,
    #[error("utilization {0:.4} above the supply: the busy period never ends")]
    Overload(f64),
}

/// Which terms of the analysis are used. `Terms::ALL` is the analysis;
/// the others exist to show, in tests, that each term is needed (a test
/// that passes without a term does not check it).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Terms {
    /// `J_j` of higher-priority tasks.
    pub interferer_jitter: bool,
    /// `J` of the analysed task (later jobs may arrive early).
    pub own_jitter: bool,
    /// Jobs after the first in the busy period.
    pub later_jobs: bool,
}

impl Terms {
    pub const ALL: Terms = Terms {
        interferer_jitter: true,
        own_jitter: true,
        later_jobs: true,
    };
}

/// The worst-case response of `me` below `hp`, measured from `origin`;
/// `Err` when it exceeds `limit` or the busy period is unbounded.
pub fn analyse(
    me: Analysed,
    hp: &[Interferer],
    origin: Origin,
    limit: u64,
) -> Result<Rta, NoBound> {
    analyse_terms(me, hp, origin, limit, Terms::ALL)
}

/// `analyse` with some terms left out (see `Terms`; not safe unless
/// `Terms::ALL`).
pub fn analyse_terms(
    me: Analysed,
    hp: &[Interferer],
    origin: Origin,
    limit: u64,
    terms: Terms,
) -> Result<Rta, NoBound> {
    analyse_supplied(me, hp, origin, limit, terms, &Supply::Full)
}

/// What the analysed task and its interferers run on.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Supply {
    /// The whole CPU.
    Full,
    /// A periodic resource `theta` every `pi` (Shin & Lee), late by at
    /// most `delay` more: at least `prm::sbf(pi, theta, t - delay)` in any
    /// window `t` (`delay` 0 is the periodic resource model; a polling
    /// server that lost its budget waits `delay = theta` longer).
    Periodic { pi: u64, theta: u64, delay: u64 },
}

impl Supply {
    /// Shortest window guaranteed to supply `x` (the inverse of the sbf).
    pub fn time_to(&self, x: u64) -> u64 {
        match *self {
            Supply::Full => x,
            Supply::Periodic { pi, theta, delay } => match x {
                0 => 0,
                _ => delay.saturating_add(crate::prm::time_to_supply(pi, theta, x)),
            },
        }
    }
    /// Long-run fraction of the CPU supplied.
    pub fn rate(&self) -> f64 {
        match *self {
            Supply::Full => 1.0,
            Supply::Periodic { pi, theta, .. } => theta as f64 / pi.max(1) as f64,
        }
    }
}

/// A lower bound on what a resource supplies, by its inverse: the
/// shortest window surely supplying `x`, and the long-run rate. `Supply`
/// is one; `server::OwnSupply` (a budgeted server's supply from its own
/// schedule) is another.
pub trait SupplyBound {
    /// Shortest window guaranteed to supply `x` (`u64::MAX`: never).
    fn time_to(&self, x: u64) -> u64;
    /// Long-run fraction of the CPU supplied.
    fn rate(&self) -> f64;
}

impl SupplyBound for Supply {
    fn time_to(&self, x: u64) -> u64 {
        Supply::time_to(self, x)
    }
    fn rate(&self) -> f64 {
        Supply::rate(self)
    }
}

/// The busy-period analysis over a supply: the window of job `q` is the
/// least fixed point of `w = supply.time_to((q + 1) C + sum demand(w))`
/// (the request-bound function against the inverse supply-bound
/// function). With `Supply::Full` this is `analyse_terms`.
pub fn analyse_supplied(
    me: Analysed,
    hp: &[Interferer],
    origin: Origin,
    limit: u64,
    terms: Terms,
    supply: &Supply,
) -> Result<Rta, NoBound> {
    analyse_over(me, hp, origin, limit, terms, supply)
}

/// `analyse_supplied` over any `SupplyBound`.
pub fn analyse_over(
    me: Analysed,
    hp: &[Interferer],
    origin: Origin,
    limit: u64,
    terms: Terms,
    supply: &dyn SupplyBound,
) -> Result<Rta, NoBound> {
    if me.period == 0 {
        return Err(NoBound::ZeroPeriod);
    }
    let stripped: Vec<Interferer>;
    let hp = if terms.interferer_jitter {
        hp
    } else {
        stripped = hp
            .iter()
            .map(|i| Interferer {
                jitter: 0,
                alt: i.alt.map(|(c, p, _)| (c, p, 0)),
                ..*i
            })
            .collect();
        &stripped
    };
    let u = hp
        .iter()
        .map(|i| {
            let r = i.cost as f64 / i.period.max(1) as f64;
            i.alt
                .map_or(r, |(c, p, _)| r.min(c as f64 / p.max(1) as f64))
        })
        .sum::<f64>()
        + me.wcet as f64 / me.period as f64;
    if u > supply.rate() + 1e-9 {
        return Err(NoBound::Overload(u));
    }
    let (c, t) = (me.wcet, me.period);
    let j = if terms.own_jitter { me.jitter } else { 0 };
    // earliest arrival of job q after job 0, and its response from w_q
    let arrival = |q: u64| q.saturating_mul(t).saturating_sub(j);
    let response = |q: u64, w: u64| match origin {
        Origin::Arrival => w - arrival(q).min(w),
        Origin::Release => w.saturating_add(j).saturating_sub(q.saturating_mul(t)),
    };
    let mut best = Rta {
        response: 0,
        jobs: 0,
        worst_job: 0,
        busy_period: 0,
    };
    let mut w = 0u64;
    for q in 0..MAX_JOBS {
        let work = (q + 1).saturating_mul(c);
        // w_{q-1} + C is below w_q: start there
        w = w.saturating_add(c).max(work);
        loop {
            if response(q, w) > limit || w == u64::MAX {
                return Err(NoBound::ExceedsLimit { job: q, limit });
            }
            let next = supply.time_to(work.saturating_add(demand(hp, w)));
            if next == w {
                break;
            }
            w = next;
        }
        let r = response(q, w);
        if r > best.response || q == 0 {
            best.response = r;
            best.worst_job = q;
        }
        best.jobs = q + 1;
        best.busy_period = w;
        // the next job arrives at (q + 1) T - J at the earliest: it is in
        // the busy period if that is before w_q
        if !terms.later_jobs || w <= (q + 1).saturating_mul(t).saturating_sub(j) {
            return Ok(best);
        }
    }
    Err(NoBound::BusyPeriodUnbounded)
}

/// `analyse`'s bound, measured from the arrival, or `None`.
pub fn response_time(me: Analysed, hp: &[Interferer], limit: u64) -> Option<u64> {
    analyse(me, hp, Origin::Arrival, limit)
        .ok()
        .map(|r| r.response)
}

/// A task of a fixed-priority task set.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FpTask {
    pub wcet: u64,
    pub period: u64,
    pub deadline: u64,
    pub jitter: u64,
    /// Higher is more urgent; equal priorities interfere with each other
    /// (any order among them).
    pub prio: u32,
}

/// Every task's bound (within its deadline) in a fully preemptive
/// fixed-priority task set on one CPU, in input order.
pub fn fp_rta(tasks: &[FpTask], origin: Origin) -> Vec<Result<Rta, NoBound>> {
    tasks
        .iter()
        .enumerate()
        .map(|(i, me)| {
            let hp: Vec<Interferer> = tasks
                .iter()
                .enumerate()
                .filter(|&(k, o)| k != i && o.prio >= me.prio)
                .map(|(_, o)| Interferer::new(o.wcet, o.period, o.jitter))
                .collect();
            analyse(
                Analysed::new(me.wcet, me.period, me.jitter),
                &hp,
                origin,
                me.deadline,
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt(c: u64, hp: &[Interferer], limit: u64) -> Option<u64> {
        response_time(Analysed::new(c, u64::MAX / 4, 0), hp, limit)
    }

    /// Textbook example (Burns & Wellings): tasks (C, T) = (3, 7), (3, 12),
    /// (5, 20) under RM. R1 = 3; R2 = 3 + ceil(6/7)3 = 6; R3: 5 -> 5 + 3 + 3
    /// = 11 -> 5 + 2*3 + 3 = 14 -> 5 + 2*3 + 2*3 = 17 -> 5 + 3*3 + 2*3 = 20
    /// -> 5 + 3*3 + 2*3 = 20.
    #[test]
    fn textbook_rm() {
        let t1 = Interferer::new(3, 7, 0);
        let t2 = Interferer::new(3, 12, 0);
        assert_eq!(rt(3, &[], 7), Some(3));
        assert_eq!(rt(3, &[t1], 12), Some(6));
        assert_eq!(rt(5, &[t1, t2], 20), Some(20));
        assert_eq!(rt(5, &[t1, t2], 19), None);
    }

    /// Release jitter of an interferer: C = 4 below (C 2, T 10). Without
    /// jitter: 4 + 2 = 6. With J = 7: w = 4 -> ceil(11/10) = 2 hits -> 8;
    /// ceil(15/10) = 2 -> 8.
    #[test]
    fn jitter() {
        assert_eq!(rt(4, &[Interferer::new(2, 10, 0)], 100), Some(6));
        assert_eq!(rt(4, &[Interferer::new(2, 10, 7)], 100), Some(8));
    }

    /// Arbitrary deadline (Lehoczky's example shape): (C 26, T 70) above
    /// (C 62, T 100), D = 200. Job 0: 62 + 26 -> 88 -> 62 + 2*26 = 114 ->
    /// 114 (ceil(114/70) = 2). 114 > 100: job 1: 124 + 2*26 = 176 -> 124 +
    /// 3*26 = 202 -> 202; response 202 - 100 = 102 > 100 = T. 202 > 200:
    /// job 2: 186 + 3*26 = 264 -> 186 + 4*26 = 290 -> 290 (ceil(290/70) =
    /// 5: 316 -> ceil(316/70) = 5: 316); response 316 - 200 = 116. 316 >
    /// 300: job 3: 248 + 5*26 = 378 -> 248 + 6*26 = 404 -> 404 (ceil = 6);
    /// 404 - 300 = 104; 404 > 400: job 4: 310 + 6*26 = 466 -> 310 + 7*26
    /// = 492 -> 492 (ceil(492/70) = 8: 518 -> ceil(518/70) = 8: 518);
    /// 518 - 400 = 118; 518 > 500: job 5: 372 + 8*26 = 580 -> ceil(580/70)
    /// = 9: 606 -> 9: 606; 606 - 500 = 106; 606 > 600: job 6: 434 + 9*26 =
    /// 668 -> 10: 694 -> 10: 694; 694 <= 700: the busy period ends.
    /// Worst: job 4, 118.
    #[test]
    fn arbitrary_deadline_by_hand() {
        let r = analyse(
            Analysed::new(62, 100, 0),
            &[Interferer::new(26, 70, 0)],
            Origin::Arrival,
            200,
        )
        .unwrap();
        assert_eq!(
            (r.response, r.worst_job, r.jobs, r.busy_period),
            (118, 4, 7, 694)
        );
        // a single-job analysis would say 114
        let one = analyse_terms(
            Analysed::new(62, 100, 0),
            &[Interferer::new(26, 70, 0)],
            Origin::Arrival,
            200,
            Terms {
                later_jobs: false,
                ..Terms::ALL
            },
        )
        .unwrap();
        assert_eq!(one.response, 114);
    }

    /// Utilization above 1: no bound, whatever the limit; exactly 1 with
    /// jitter: the busy period never closes.
    #[test]
    fn overload() {
        let hp = [Interferer::new(5, 10, 0)];
        assert!(matches!(
            analyse(Analysed::new(6, 10, 0), &hp, Origin::Arrival, 1 << 40),
            Err(NoBound::Overload(_))
        ));
        assert!(matches!(
            analyse(Analysed::new(5, 10, 0), &hp, Origin::Arrival, 9),
            Err(NoBound::ExceedsLimit { job: 0, limit: 9 })
        ));
        assert_eq!(
            analyse(Analysed::new(10, 10, 1), &[], Origin::Arrival, 1 << 40),
            Err(NoBound::BusyPeriodUnbounded)
        );
        assert_eq!(
            analyse(Analysed::new(1, 0, 0), &[], Origin::Arrival, 10),
            Err(NoBound::ZeroPeriod)
        );
    }
}
