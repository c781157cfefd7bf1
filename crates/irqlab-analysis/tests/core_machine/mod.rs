//! A unit-step fake machine for checking the analyses against the core
//! (`irqlab_core::Scheduler` decides everything): one CPU, threads whose
//! jobs are sequences of suspensions and computes, the schedule recorded
//! as segments and each job's release and completion.

#![allow(dead_code)]

use irqlab_core::{
    DeferrableServer, Inherit, Nanos, Pibs, PollingServer, Scheduler, Server, ServerId,
    ServerPriority, SporadicServer, ThreadId, ThreadPolicy, Unbounded, Utilization,
};

/// One job: released at `release`; then, in order, each `(suspend,
/// compute)`: wait `suspend` (0: at once), then compute `compute` (> 0).
#[derive(Clone, Debug)]
pub struct Job {
    pub release: u64,
    pub segs: Vec<(u64, u64)>,
}

/// A thread's jobs (run one after the other, FIFO) and the period its
/// wake-ups pass to a PIBS server.
#[derive(Clone, Debug)]
pub struct Work {
    pub thread: ThreadId,
    pub jobs: Vec<Job>,
    pub inherit: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub server: ServerId,
    pub thread: ThreadId,
    pub start: u64,
    pub end: u64,
}

pub struct Outcome {
    pub segs: Vec<Segment>,
    /// Per `Work`, per job: `(release, first wake-up of its last segment,
    /// completion)`; jobs not completed by the horizon are absent.
    pub done: Vec<Vec<(u64, u64, u64)>>,
}

struct State {
    next_job: usize,
    /// (job, seg) in progress
    cur: Option<(usize, usize)>,
    remaining: u64,
    wake_at: Option<u64>,
    last_wake: u64,
}

pub fn sporadic(c: u64, t: u64) -> Server {
    Server::Sporadic(
        SporadicServer::new(
            Nanos(c),
            Nanos(t),
            32,
            ServerPriority::RateMonotonic,
            false,
            Nanos(0),
        )
        .expect("valid sporadic server"),
    )
}

pub fn deferrable(c: u64, t: u64) -> Server {
    Server::Deferrable(
        DeferrableServer::new(Nanos(c), Nanos(t), ServerPriority::RateMonotonic, Nanos(0))
            .expect("valid deferrable server"),
    )
}

pub fn polling(c: u64, t: u64) -> Server {
    Server::Polling(
        PollingServer::new(Nanos(c), Nanos(t), ServerPriority::RateMonotonic, Nanos(0))
            .expect("valid polling server"),
    )
}

pub fn pibs(num: u64, den: u64, inherit: Inherit) -> Server {
    Server::Pibs(Pibs::new(Utilization::new(num, den).expect("valid U"), inherit).expect("valid"))
}

pub fn unbounded(rank: u64) -> Server {
    Server::Unbounded(Unbounded::new(rank))
}

/// A scheduler with `servers` (each with fixed-priority threads) and
/// `threads` as `(server index, priority)`.
pub fn machine(
    servers: Vec<Server>,
    threads: &[(usize, u32)],
) -> (Scheduler, Vec<ServerId>, Vec<ThreadId>) {
    let mut s = Scheduler::new();
    let ids: Vec<ServerId> = servers
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            s.add_server(format!("s{i}"), v, ThreadPolicy::FixedPriority)
                .expect("server")
        })
        .collect();
    let th = threads
        .iter()
        .enumerate()
        .map(|(i, &(sv, p))| s.add_thread(format!("t{i}"), ids[sv], p).expect("thread"))
        .collect();
    (s, ids, th)
}

/// Periodic jobs of `segs` at `phase + k period` before `until`.
pub fn periodic(phase: u64, period: u64, until: u64, segs: &[(u64, u64)]) -> Vec<Job> {
    (0..)
        .map(|k| phase + k * period)
        .take_while(|&r| r < until)
        .map(|release| Job {
            release,
            segs: segs.to_vec(),
        })
        .collect()
}

pub fn run(sched: &mut Scheduler, works: &[Work], horizon: u64) -> Outcome {
    let mut st: Vec<State> = works
        .iter()
        .map(|_| State {
            next_job: 0,
            cur: None,
            remaining: 0,
            wake_at: None,
            last_wake: 0,
        })
        .collect();
    let mut done: Vec<Vec<(u64, u64, u64)>> = vec![Vec::new(); works.len()];
    let mut segs: Vec<Segment> = Vec::new();
    let by_thread = |t: ThreadId| works.iter().position(|w| w.thread == t);
    let mut now = 0u64;
    loop {
        // start jobs and end suspensions due now
        for (i, w) in works.iter().enumerate() {
            let s = &mut st[i];
            if s.cur.is_none() && s.next_job < w.jobs.len() && w.jobs[s.next_job].release <= now {
                s.cur = Some((s.next_job, 0));
                s.next_job += 1;
                s.wake_at = Some(now + w.jobs[s.next_job - 1].segs[0].0);
            }
            if let (Some((j, g)), Some(t)) = (s.cur, s.wake_at) {
                if t <= now {
                    s.wake_at = None;
                    s.remaining = w.jobs[j].segs[g].1;
                    s.last_wake = now;
                    sched
                        .wakeup(Nanos(now), w.thread, w.inherit.map(Nanos))
                        .expect("wakeup");
                }
            }
        }
        if now >= horizon {
            break;
        }
        let d = sched.schedule(Nanos(now)).expect("schedule");
        let mut until = horizon;
        if let Some(t) = d.next_update {
            assert!(t.as_ns() > now, "next_update {t} not after {now}");
            until = until.min(t.as_ns());
        }
        for (i, w) in works.iter().enumerate() {
            let s = &st[i];
            if let Some(t) = s.wake_at {
                until = until.min(t);
            }
            if s.cur.is_none() && s.next_job < w.jobs.len() {
                until = until.min(w.jobs[s.next_job].release.max(now));
            }
        }
        let running = match (d.server, d.thread) {
            (Some(sv), Some(t)) => by_thread(t).map(|i| (sv, t, i)),
            _ => None,
        };
        if let Some((sv, t, i)) = running {
            until = until.min(now + st[i].remaining);
            if until > now {
                match segs.last_mut() {
                    Some(l) if l.server == sv && l.thread == t && l.end == now => l.end = until,
                    _ => segs.push(Segment {
                        server: sv,
                        thread: t,
                        start: now,
                        end: until,
                    }),
                }
            }
            st[i].remaining -= until - now;
            now = until;
            if st[i].remaining == 0 {
                if sched.block(Nanos(now), t).expect("block") {
                    sched.schedule(Nanos(now)).expect("schedule");
                }
                let (j, g) = st[i].cur.expect("a job in progress");
                let job = &works[i].jobs[j];
                if g + 1 < job.segs.len() {
                    st[i].cur = Some((j, g + 1));
                    st[i].wake_at = Some(now + job.segs[g + 1].0);
                } else {
                    done[i].push((job.release, st[i].last_wake, now));
                    st[i].cur = None;
                }
            }
        } else {
            if until == now {
                continue;
            }
            now = until;
        }
    }
    Outcome { segs, done }
}

/// Time `server` executed inside `[a, b)`.
pub fn consumed(segs: &[Segment], server: ServerId, a: u64, b: u64) -> u64 {
    segs.iter()
        .filter(|s| s.server == server)
        .map(|s| s.end.min(b).saturating_sub(s.start.max(a)))
        .sum()
}

/// The largest consumption of `server` in any window of length `len`
/// (reached by a window starting at one of its segments' starts).
pub fn max_window(segs: &[Segment], server: ServerId, len: u64) -> u64 {
    segs.iter()
        .filter(|s| s.server == server)
        .map(|s| consumed(segs, server, s.start, s.start + len))
        .max()
        .unwrap_or(0)
}
