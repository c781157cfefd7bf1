//! What a run produced: per-server CPU use, per-task jobs, misses (and
//! which of them the platform probe explains) and response times,
//! per-class and per-upcall event counts and latencies, supervisor
//! counters beside each CPU's platform probe, threads that did not return
//! at the stop, and warnings. Serializable to JSON; latency summaries carry
//! percentiles from the core's histogram.

use std::sync::atomic::Ordering;

use irqlab_core::{LatencyRecorder, Nanos};
use serde::Serialize;

use crate::binding::{Notes, Target};
use crate::probe::ProbeState;
use crate::{Mode, Shared};

/// Summary of one latency recorder, in nanoseconds.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Latency {
    pub count: u64,
    pub min: Option<u64>,
    pub mean: Option<f64>,
    pub p50: Option<u64>,
    pub p99: Option<u64>,
    pub max: Option<u64>,
    pub std_dev: Option<f64>,
    /// Histogram buckets `(low, high, count)` with a non-zero count.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub histogram: Vec<(u64, u64, u64)>,
}

impl Latency {
    pub fn of(r: &LatencyRecorder) -> Latency {
        let h = r.histogram();
        // Histogram quantiles are bucket bounds: never above the true max.
        let max = r.max().map(|n| n.0);
        let q = |p: f64| h.quantile(p).map(|v| max.map_or(v, |m| v.min(m)));
        Latency {
            count: r.num(),
            min: r.min().map(|n| n.0),
            mean: r.mean(),
            p50: q(0.5),
            p99: q(0.99),
            max,
            std_dev: r.std_dev(),
            histogram: h.buckets().filter(|b| b.2 > 0).collect(),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct ServerReport {
    pub name: String,
    pub cpu: usize,
    pub kind: &'static str,
    pub budget_ns: Option<u64>,
    pub period_ns: Option<u64>,
    /// CPU time of the server's threads.
    pub cpu_time_ns: u64,
    /// `cpu_time / run time`.
    pub share: f64,
    /// CPU time used past the budget at each exhaustion before the
    /// supervisor (or the cooperative check) stopped the server.
    pub overrun: Latency,
}

#[derive(Clone, Debug, Serialize)]
pub struct TaskReport {
    pub name: String,
    pub server: String,
    pub cpu_time_ns: u64,
    pub parks: u64,
    pub period_ns: Option<u64>,
    /// Jobs that finished.
    pub jobs: Option<u64>,
    /// Finished jobs that were late plus `unfinished_past_deadline`.
    pub deadline_misses: Option<u64>,
    /// Released jobs still unfinished at the end of the run although their
    /// deadline had passed (a starved task shows its misses here).
    pub unfinished_past_deadline: Option<u64>,
    pub response: Option<Latency>,
    /// From a waking event's arrival to the task running.
    pub wake: Latency,
    /// What the task does after a stall.
    pub catch_up: Option<crate::CatchUp>,
    /// Releases skipped after a stall (`CatchUp::Skip`; not in `jobs`,
    /// not counted as misses).
    pub skipped_jobs: Option<u64>,
    /// Jobs started after their deadline had passed (`CatchUp::RunLate`).
    pub late_starts: Option<u64>,
    /// Misses during which the platform probe of the task's CPU saw a
    /// stall (the CPU was taken from every thread): the platform's, not
    /// the runtime's. `None` without a probe.
    pub misses_platform: Option<u64>,
    /// The other misses: nothing the probe saw explains them.
    pub misses_unexplained: Option<u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct EventReport {
    pub name: String,
    /// "class" (bottom half on an I/O VCPU) or "upcall".
    pub path: &'static str,
    pub fds: Vec<i32>,
    pub events: u64,
    pub handled: u64,
    pub items: u64,
    pub panics: u64,
    /// The first panics' messages and locations (no backtrace is taken).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub panic_messages: Vec<String>,
    /// Events whose fd was unbound, errored or found closed before their
    /// handler's turn (not handled, counted).
    pub discarded: u64,
    /// Events still queued at the stop (counted, not lost).
    pub pending: u64,
    /// Upcalls: events deferred for want of budget.
    pub deferrals: u64,
    /// Bottom halves: times the cooperative check found the budget spent
    /// between handlers (before the supervisor's timer).
    pub budget_yields: u64,
    /// Kernel-side drops on the fds (UDP receive-buffer overflows).
    pub kernel_drops: u64,
    pub closed: Vec<String>,
    /// Arrival (top half) to handler start.
    pub dispatch: Latency,
    /// The first `Config::report_samples` dispatch latencies, in order
    /// (empty unless asked for).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dispatch_samples_ns: Vec<u64>,
    /// Arrival to handler end.
    pub handling: Latency,
}

#[derive(Clone, Debug, Serialize)]
pub struct SupervisorReport {
    pub cpu: usize,
    pub passes: u64,
    pub priority_changes: u64,
    pub throttles: u64,
    pub errors: u64,
    /// How late the supervisor's timer woke it (the floor of enforcement).
    pub timer_latency: Latency,
    /// The platform-latency probe of this CPU, if it ran.
    pub probe: Option<ProbeReport>,
    /// The supervisor thread's CPU time over the run (its scheduling
    /// overhead; QUEST-VCPU Figure 7 measured).
    pub cpu_time_ns: u64,
}

/// What a CPU's platform probe saw (`probe`).
#[derive(Clone, Debug, Serialize)]
pub struct ProbeReport {
    pub interval_ns: u64,
    /// A sample at least this late is a stall.
    pub stall_threshold_ns: u64,
    /// The probe ran at SCHED_FIFO (otherwise its lateness includes the
    /// fair scheduler's).
    pub fifo: bool,
    /// How late each sample woke.
    pub lateness: Latency,
    pub stalls: u64,
    /// Sum of the stalls' lateness.
    pub stall_time_ns: u64,
}

impl ProbeReport {
    fn of(p: &ProbeState) -> ProbeReport {
        ProbeReport {
            interval_ns: p.cfg.interval.0,
            stall_threshold_ns: p.cfg.stall.0,
            fifo: p.fifo,
            lateness: Latency::of(&p.lateness),
            stalls: p.stall_count,
            stall_time_ns: p.stall_time.0,
        }
    }
}

/// Everything a run produced.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub mode: Mode,
    pub duration_ns: u64,
    pub top_half_cpu_ns: u64,
    pub servers: Vec<ServerReport>,
    pub tasks: Vec<TaskReport>,
    pub events: Vec<EventReport>,
    pub supervisors: Vec<SupervisorReport>,
    pub warnings: Vec<String>,
    /// Threads that had not returned `Config::stop_timeout` after the stop
    /// (left running, detached, their scheduling policy restored).
    pub unreturned_threads: Vec<String>,
    /// How long `stop` took from its call to the report.
    pub stop_ns: u64,
    /// Kernel upcalls (eBPF handlers in the softirq), if any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kernel_upcalls: Vec<crate::kupcall::KernelUpcallReport>,
}

impl Report {
    pub(crate) fn collect(shared: &Shared, t_end: Nanos) -> Report {
        let t0 = Nanos(shared.t0.load(Ordering::SeqCst));
        let dur = t_end.saturating_sub(t0);
        let keep = shared.cfg.report_samples;
        let mut r = Report {
            mode: shared.mode,
            duration_ns: dur.0,
            top_half_cpu_ns: shared
                .io
                .top_half_cpu
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .0,
            servers: Vec::new(),
            tasks: Vec::new(),
            events: Vec::new(),
            supervisors: Vec::new(),
            unreturned_threads: Vec::new(),
            stop_ns: 0,
            kernel_upcalls: Vec::new(),
            warnings: shared
                .warnings
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        };
        let slots = shared.io.slot_list();
        // Kernel drops and closures of the fds bound to a target.
        let notes = |pick: &dyn Fn(Target) -> bool| {
            let mut n = Notes::default();
            for s in slots.iter().filter(|s| pick(s.target)) {
                let x = s.notes();
                n.drops += x.drops;
                n.closed.extend(x.closed);
            }
            n
        };
        for (ci, cpu) in shared.cpus.iter().enumerate() {
            let probe = {
                let p = cpu.probe();
                p.running.then(|| (ProbeReport::of(&p), p))
            };
            let st = cpu.lock();
            for (sid, s) in st.servers.iter().enumerate() {
                let used: u64 = st
                    .threads
                    .iter()
                    .filter(|t| t.server.0 == sid)
                    .map(|t| t.cpu_total.0)
                    .sum();
                r.servers.push(ServerReport {
                    name: s.name.clone(),
                    cpu: cpu.cpu,
                    kind: s.kind,
                    budget_ns: s.budget.map(|b| b.0),
                    period_ns: s.period.map(|p| p.0),
                    cpu_time_ns: used,
                    share: if dur.0 > 0 {
                        used as f64 / dur.0 as f64
                    } else {
                        0.0
                    },
                    overrun: Latency::of(&s.overrun),
                });
            }
            for t in &st.threads {
                let (platform, unexplained) = match (&t.periodic, &probe) {
                    (Some(p), Some((_, ps))) => {
                        let misses = p.misses + p.unfinished_past_deadline(t0, t_end);
                        let late = p.late.iter().filter(|w| ps.saw_stall(w.0, w.1)).count();
                        let first = p.next_release.unwrap_or(t0);
                        let unfinished = ps.unfinished_explained(
                            first,
                            p.period,
                            p.unfinished_past_deadline(t0, t_end),
                            t_end,
                        );
                        let platform = late as u64 + unfinished;
                        (Some(platform), Some(misses - platform))
                    }
                    _ => (None, None),
                };
                r.tasks.push(TaskReport {
                    name: t.name.clone(),
                    server: st.servers[t.server.0].name.clone(),
                    cpu_time_ns: t.cpu_total.0,
                    parks: t.sh.park.parks.load(Ordering::Relaxed),
                    period_ns: t.periodic.as_ref().map(|p| p.period.0),
                    jobs: t.periodic.as_ref().map(|p| p.jobs),
                    deadline_misses: t
                        .periodic
                        .as_ref()
                        .map(|p| p.misses + p.unfinished_past_deadline(t0, t_end)),
                    unfinished_past_deadline: t
                        .periodic
                        .as_ref()
                        .map(|p| p.unfinished_past_deadline(t0, t_end)),
                    response: t.periodic.as_ref().map(|p| Latency::of(&p.response)),
                    wake: Latency::of(&t.wake_latency),
                    catch_up: t.periodic.as_ref().map(|p| p.catch_up),
                    skipped_jobs: t.periodic.as_ref().map(|p| p.skipped),
                    late_starts: t.periodic.as_ref().map(|p| p.late_starts),
                    misses_platform: platform,
                    misses_unexplained: unexplained,
                });
            }
            for (k, c) in st.classes.iter().enumerate() {
                let n = notes(
                    &|t| matches!(t, Target::Class { cpu, index, .. } if cpu == ci && index == k),
                );
                r.events.push(EventReport {
                    name: c.name.clone(),
                    path: "class",
                    fds: c.fds.clone(),
                    events: c.events,
                    handled: c.handled,
                    items: c.items,
                    panics: c.panics,
                    panic_messages: c.panic_messages.clone(),
                    discarded: c.discarded,
                    pending: c.events - c.handled - c.panics - c.discarded,
                    deferrals: 0,
                    budget_yields: c.budget_yields,
                    kernel_drops: n.drops,
                    closed: n.closed,
                    dispatch: Latency::of(&c.dispatch),
                    dispatch_samples_ns: first(&c.dispatch, keep),
                    handling: Latency::of(&c.handling),
                });
            }
            r.supervisors.push(SupervisorReport {
                cpu: cpu.cpu,
                passes: st.passes,
                priority_changes: st.prio_changes,
                throttles: st.throttles,
                errors: st.errors,
                timer_latency: Latency::of(&st.timer_latency),
                probe: probe.as_ref().map(|(p, _)| p.clone()),
                cpu_time_ns: st.supervisor_cpu.0,
            });
        }
        for u in shared
            .io
            .upcalls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            let n = slots.get(u.slot).map(|s| s.notes()).unwrap_or_default();
            r.events.push(EventReport {
                name: u.name.clone(),
                path: "upcall",
                fds: vec![u.fd],
                events: u.events,
                handled: u.handled,
                items: u.items,
                panics: u.panics,
                panic_messages: u.panic_messages.clone(),
                discarded: u.discarded,
                pending: u.events - u.handled - u.panics - u.discarded,
                deferrals: u.deferrals,
                budget_yields: 0,
                kernel_drops: n.drops,
                closed: n.closed,
                dispatch: Latency::of(&u.dispatch),
                dispatch_samples_ns: first(&u.dispatch, keep),
                handling: Latency::of(&u.handling),
            });
        }
        r
    }

    /// The event report named `name`.
    pub fn event(&self, name: &str) -> Option<&EventReport> {
        self.events.iter().find(|e| e.name == name)
    }
    pub fn task(&self, name: &str) -> Option<&TaskReport> {
        self.tasks.iter().find(|t| t.name == name)
    }
    pub fn server(&self, name: &str) -> Option<&ServerReport> {
        self.servers.iter().find(|s| s.name == name)
    }
}

/// The first `n` samples a recorder kept.
fn first(r: &LatencyRecorder, n: usize) -> Vec<u64> {
    r.samples().iter().take(n).map(|s| s.0).collect()
}

/// Latencies above this go to the overflow count of the histogram file.
const HIST_MAX_US: u64 = 10_000;

impl Report {
    /// The event paths' dispatch latencies (arrival to handler start) in
    /// the order of `events`.
    fn dispatch_columns(&self) -> Vec<(&str, &Latency)> {
        self.events
            .iter()
            .map(|e| (e.name.as_str(), &e.dispatch))
            .collect()
    }

    /// One cyclictest-style line per event path (microseconds), so scripts
    /// that read cyclictest's summary read this too.
    pub fn cyclictest_summary(&self) -> String {
        let us = |v: Option<u64>| v.map_or(0, |n| n.div_ceil(1000));
        let mut out = String::new();
        for (i, (name, l)) in self.dispatch_columns().into_iter().enumerate() {
            out.push_str(&format!(
                "T:{i:2} ({name}) C:{:8} Min:{:7} Avg:{:7} Max:{:7}\n",
                l.count,
                us(l.min),
                l.mean.map_or(0, |m| (m / 1000.0).round() as u64),
                us(l.max),
            ));
        }
        out
    }

    /// cyclictest's `--histfile` format: one row per microsecond
    /// (`latency count count ...`, one column per event path), then the
    /// `# Total`, `# Min/Avg/Max Latencies` and `# Histogram Overflows`
    /// lines.
    pub fn histogram_file(&self) -> String {
        let cols = self.dispatch_columns();
        let top = cols
            .iter()
            .filter_map(|(_, l)| l.max)
            .max()
            .map_or(0, |m| (m / 1000).min(HIST_MAX_US - 1));
        let mut rows = vec![vec![0u64; cols.len()]; top as usize + 1];
        let mut overflows = vec![0u64; cols.len()];
        for (c, (_, l)) in cols.iter().enumerate() {
            for &(low, _, n) in &l.histogram {
                let us = low / 1000;
                if us >= HIST_MAX_US {
                    overflows[c] += n;
                } else if let Some(r) = rows.get_mut(us as usize) {
                    r[c] += n;
                }
            }
        }
        let mut out = String::new();
        out.push_str("# irqlab run: dispatch latency (arrival to handler start), us\n");
        out.push_str(&format!(
            "# columns: {}\n",
            cols.iter().map(|c| c.0).collect::<Vec<_>>().join(" ")
        ));
        for (us, r) in rows.iter().enumerate() {
            out.push_str(&format!("{us:06}"));
            for n in r {
                out.push_str(&format!(" {n:06}"));
            }
            out.push('\n');
        }
        let line = |label: &str, f: &dyn Fn(&Latency) -> u64| {
            let v: Vec<String> = cols.iter().map(|(_, l)| format!("{:05}", f(l))).collect();
            format!("# {label}: {}\n", v.join(" "))
        };
        out.push_str(&line("Total", &|l| l.count));
        out.push_str(&line("Min Latencies", &|l| l.min.map_or(0, |v| v / 1000)));
        out.push_str(&line("Avg Latencies", &|l| {
            l.mean.map_or(0, |m| (m / 1000.0) as u64)
        }));
        out.push_str(&line("Max Latencies", &|l| l.max.map_or(0, |v| v / 1000)));
        let ov: Vec<String> = overflows.iter().map(|n| format!("{n:05}")).collect();
        out.push_str(&format!("# Histogram Overflows: {}\n", ov.join(" ")));
        out
    }
}
