//! VCPU response times as VINT Eq. 3 bounds them: how long a VCPU (or
//! pseudo-VCPU) that wants to run takes to receive its whole budget.
//!
//! A *job* of a budgeted server starts when it is backlogged (has runnable
//! work) with its whole budget `C`, and ends when it has consumed `C` or
//! its work is done, whichever comes first; its response time is the
//! difference. Eq. 3 bounds it for every job: the time to receive `C` from
//! a release, and finishing the work earlier only shortens it.
//!
//! * Deferrable server: the budget is whole at each period boundary `kT`
//!   (servers are created at time 0) and, until it first runs in the
//!   period, from the instant it becomes backlogged. A job still open at
//!   the next boundary did not receive `C` within its period; if it had
//!   been backlogged from the boundary on, that is a *budget miss* (the
//!   VCPU fails Eq. 3 in the simulation); a job started later in the period
//!   is simply cut by the replenishment.
//! * Sporadic server: the budget is whole when the server becomes
//!   backlogged after at least one period without running (every
//!   replenishment of what it used is then due, QUEST-VCPU Alg. 3-6), or,
//!   for a server that stays backlogged, from the instant the last of its
//!   pending replenishments is due with nothing used since (the machine
//!   reads the replenishment queue after each decision: `whole_since`).
//!
//! Design principles: this only observes -- the core decides; the machine
//! reports foreground execution (what is charged to the budget, VCPU
//! switches included) and backlog changes, and nothing here feeds back.
//! Pure logic, tested here without a machine.

use irqlab_core::{LatencyRecorder, Nanos};

pub(crate) use irqlab_core::vint::Replenish;

#[derive(Copy, Clone, Debug)]
struct Job {
    start: u64,
    consumed: u64,
    /// Backlogged from a period boundary on (deferrable).
    from_boundary: bool,
}

/// The observer of one budgeted server.
#[derive(Clone, Debug)]
pub(crate) struct VcpuResponses {
    policy: Replenish,
    budget: u64,
    period: u64,
    backlogged: bool,
    backlog_since: u64,
    job: Option<Job>,
    /// Deferrable: index of the current period, and whether the server ran
    /// in it (its budget is then no longer whole).
    k: u64,
    ran_in_period: bool,
    /// Sporadic: when it last ran in the foreground.
    last_run_end: Option<u64>,
    pub response: LatencyRecorder,
    pub misses: u64,
}

impl VcpuResponses {
    pub fn new(policy: Replenish, budget: u64, period: u64, samples: usize) -> VcpuResponses {
        VcpuResponses {
            policy,
            budget,
            period: period.max(1),
            backlogged: false,
            backlog_since: 0,
            job: None,
            k: 0,
            ran_in_period: false,
            last_run_end: None,
            response: LatencyRecorder::new(samples, None),
            misses: 0,
        }
    }

    /// Deferrable: pass the period boundaries up to `now`.
    fn roll(&mut self, now: u64) {
        if self.policy != Replenish::Deferrable {
            return;
        }
        let k_now = now / self.period;
        while self.k < k_now {
            if self.job.take().is_some_and(|j| j.from_boundary) {
                self.misses += 1;
            }
            self.k += 1;
            self.ran_in_period = false;
            if self.backlogged {
                self.job = Some(Job {
                    start: self.k * self.period,
                    consumed: 0,
                    from_boundary: true,
                });
            }
        }
    }

    /// The server became backlogged (`true`) or ran out of work at `now`.
    pub fn backlog(&mut self, now: u64, backlogged: bool) {
        self.roll(now);
        if backlogged == self.backlogged {
            return;
        }
        self.backlogged = backlogged;
        self.backlog_since = now;
        if !backlogged {
            if let Some(j) = self.job.take() {
                self.response.record(Nanos(now - j.start));
            }
            return;
        }
        let whole = match self.policy {
            Replenish::Deferrable => !self.ran_in_period,
            Replenish::Sporadic => self.last_run_end.is_none_or(|e| e + self.period <= now),
        };
        if whole && self.job.is_none() {
            self.job = Some(Job {
                start: now,
                consumed: 0,
                from_boundary: self.policy == Replenish::Deferrable && now == self.k * self.period,
            });
        }
    }

    /// Sporadic: would a whole budget start a job now (backlogged, none
    /// open)? Saves the machine reading the queue otherwise.
    pub fn wants_whole(&self) -> bool {
        self.policy == Replenish::Sporadic && self.backlogged && self.job.is_none()
    }

    /// Sporadic: the budget has been whole since `t` (every replenishment
    /// due, nothing used since). Starts a job at the later of `t` and the
    /// start of the backlog, unless the server ran after that.
    pub fn whole_since(&mut self, t: u64) {
        if !self.wants_whole() {
            return;
        }
        let start = t.max(self.backlog_since);
        if self.last_run_end.is_none_or(|e| e <= start) {
            self.job = Some(Job {
                start,
                consumed: 0,
                from_boundary: false,
            });
        }
    }

    /// The server ran in the foreground over `[from, to)`.
    pub fn run(&mut self, from: u64, to: u64) {
        let mut a = from;
        while a < to {
            self.roll(a);
            let b = match self.policy {
                Replenish::Deferrable => to.min((self.k + 1) * self.period),
                Replenish::Sporadic => to,
            };
            self.ran_in_period = true;
            if let Some(j) = self.job.as_mut() {
                let need = self.budget.saturating_sub(j.consumed);
                if b - a >= need {
                    let start = j.start;
                    self.job = None;
                    self.response.record(Nanos(a.saturating_add(need) - start));
                } else {
                    j.consumed += b - a;
                }
            }
            a = b;
        }
        self.last_run_end = Some(to);
    }

    /// The run ends at `end`: count the budget misses up to it.
    pub fn finish(&mut self, end: u64) {
        self.roll(end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(s: &VcpuResponses) -> Vec<u64> {
        s.response.samples().iter().map(|n| n.as_ns()).collect()
    }

    /// Deferrable 3 / 10, backlogged from 0: runs [2, 4) and [6, 7): whole
    /// budget received at 7 (response 7). Period 1: backlogged from 10, it
    /// runs [10, 12) and then nothing: at 20 it had not received its
    /// budget (a miss); the new job of period 2 ends with its work at 21.
    #[test]
    fn deferrable_jobs_and_misses() {
        let mut s = VcpuResponses::new(Replenish::Deferrable, 3, 10, 64);
        s.backlog(0, true);
        s.run(2, 4);
        s.run(6, 7);
        s.run(10, 12);
        s.backlog(21, false);
        s.finish(30);
        assert_eq!(samples(&s), [7, 1]);
        assert_eq!(s.misses, 1);
    }

    /// Mid-period wake-up with an untouched budget starts a job there; a
    /// second wake-up in a period where it already ran does not; a job
    /// started mid-period and cut by the boundary is not a miss.
    #[test]
    fn deferrable_mid_period() {
        let mut s = VcpuResponses::new(Replenish::Deferrable, 3, 10, 64);
        s.backlog(4, true);
        s.run(4, 5);
        s.run(6, 8); // budget consumed at 8: response 4
        s.backlog(8, false);
        s.backlog(9, true); // ran in this period: budget not whole
        s.backlog(9, false);
        s.backlog(18, true); // whole budget at 18, cut at 20
        s.run(18, 19);
        s.run(20, 23); // the boundary job (from 20) gets 3 by 23
        s.backlog(23, false);
        s.finish(40);
        assert_eq!(samples(&s), [4, 3]);
        assert_eq!(s.misses, 0);
    }

    /// A run that crosses a boundary: the old job's part before it, the new
    /// job's after it.
    #[test]
    fn deferrable_run_across_boundary() {
        let mut s = VcpuResponses::new(Replenish::Deferrable, 3, 10, 64);
        s.backlog(0, true);
        s.run(8, 12); // period 0 got 2 of 3 by 10: miss; period 1 job from 10
        s.run(13, 14); // 3 by 14: response 4
        s.finish(15);
        assert_eq!(samples(&s), [4]);
        assert_eq!(s.misses, 1);
    }

    /// Sporadic 3 / 10: a job per wake-up after a period without running;
    /// none when it ran less than a period ago; a late job is sampled, not
    /// cut.
    #[test]
    fn sporadic_jobs() {
        let mut s = VcpuResponses::new(Replenish::Sporadic, 3, 10, 64);
        s.backlog(5, true);
        s.run(6, 9); // 4
        s.backlog(9, false);
        s.backlog(15, true); // ran until 9: not whole
        s.run(15, 16);
        s.backlog(16, false);
        s.backlog(30, true);
        s.run(31, 32);
        s.run(44, 46); // 3 received at 46: 16, more than the period
        s.finish(50);
        assert_eq!(samples(&s), [4, 16]);
        assert_eq!(s.misses, 0);
    }

    /// Sporadic, always backlogged: whole again when its replenishment is
    /// due (10), a job from there; not while one is open, nor from an
    /// instant it ran after.
    #[test]
    fn sporadic_whole_again_while_backlogged() {
        let mut s = VcpuResponses::new(Replenish::Sporadic, 3, 10, 64);
        s.backlog(0, true);
        s.run(0, 3); // 3
        s.whole_since(10);
        s.whole_since(11); // a job is open: ignored
        s.run(12, 15); // 5
        s.whole_since(14); // it ran until 15 after that: no job
        s.run(15, 16);
        s.finish(30);
        assert_eq!(samples(&s), [3, 5]);
    }
}
