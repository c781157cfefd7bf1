//! `irqlab._native.core`: the scheduling core in Python, stepped by hand.
//!
//! A notebook or a test creates servers and threads, then drives the
//! scheduler with explicit times (integer nanoseconds): `wakeup`, `block`,
//! `schedule`, and reads budgets, replenishment queues, eligibility times and
//! inherited periods. Invalid arguments raise `ValueError` with the core's
//! message (`budget 12ms exceeds period 10ms`); the calls that change the
//! scheduler run under [`crate::guard`] (a panic is a `RuntimeError`).

use irqlab_core::{
    Cbs, CoreError, DeferrableServer, Inherit, LatencyRecorder, Nanos, Pibs, PollingServer,
    Scheduler, Server, ServerId, ServerPolicy, ServerPriority, SporadicServer, ThreadId,
    ThreadPolicy, Unbounded, Utilization,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

fn err(e: CoreError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// Accept anything with integer `numerator`/`denominator` (int, Fraction).
fn utilization(obj: &Bound<'_, PyAny>) -> PyResult<Utilization> {
    let num: i128 = obj
        .getattr("numerator")
        .and_then(|v| v.extract())
        .map_err(|_| {
            PyValueError::new_err(
                "utilization must be a fractions.Fraction or an int, e.g. Fraction(1, 10)",
            )
        })?;
    let den: i128 = obj.getattr("denominator")?.extract()?;
    if num <= 0 || den <= 0 || num > den || den > u64::MAX as i128 {
        return Err(PyValueError::new_err(format!(
            "utilization {num}/{den} must be in (0, 1]"
        )));
    }
    Utilization::new(num as u64, den as u64).map_err(err)
}

fn priority(rank: Option<u64>) -> ServerPriority {
    rank.map_or(ServerPriority::RateMonotonic, ServerPriority::Rank)
}

fn threads(quantum: Option<u64>) -> ThreadPolicy {
    quantum.map_or(ThreadPolicy::FixedPriority, |q| ThreadPolicy::RoundRobin {
        quantum: Nanos(q),
    })
}

/// The decision of one `schedule` call.
#[pyclass(module = "irqlab._native.core", frozen, get_all)]
#[derive(Clone)]
pub struct Dispatch {
    /// Server id, or None when idle.
    server: Option<usize>,
    /// Thread id to run, or None when idle.
    thread: Option<usize>,
    /// The server runs depleted below every server with budget.
    background: bool,
    /// Call `schedule` again at this time (ns) at the latest.
    next_update: Option<u64>,
}

#[pymethods]
impl Dispatch {
    fn __repr__(&self) -> String {
        let opt = |v: Option<u64>| v.map_or("None".to_owned(), |x| x.to_string());
        format!(
            "Dispatch(server={}, thread={}, background={}, next_update={})",
            opt(self.server.map(|x| x as u64)),
            opt(self.thread.map(|x| x as u64)),
            if self.background { "True" } else { "False" },
            opt(self.next_update)
        )
    }
}

/// One physical CPU's scheduler (QUEST-VCPU Alg. 1-2). Times are ns.
#[pyclass(module = "irqlab._native.core", name = "Scheduler", subclass)]
pub struct PyScheduler {
    inner: Scheduler,
}

#[pymethods]
impl PyScheduler {
    #[new]
    fn new() -> Self {
        PyScheduler {
            inner: Scheduler::new(),
        }
    }

    /// Main VCPU: sporadic server (QUEST-VCPU Alg. 3-6, 11-13), `budget`
    /// every `period` (ns), full at `now` (ns); returns its id.
    #[pyo3(signature = (name, budget, period, *, max_repl=32, background=false, rank=None, now=0, quantum=None))]
    #[allow(clippy::too_many_arguments)]
    fn add_sporadic(
        &mut self,
        name: &str,
        budget: u64,
        period: u64,
        max_repl: usize,
        background: bool,
        rank: Option<u64>,
        now: u64,
        quantum: Option<u64>,
    ) -> PyResult<usize> {
        let s = SporadicServer::new(
            Nanos(budget),
            Nanos(period),
            max_repl,
            priority(rank),
            background,
            Nanos(now),
        )
        .map_err(err)?;
        self.add(name, Server::Sporadic(s), quantum)
    }

    /// I/O VCPU: PIBS (QUEST-VCPU Alg. 7-10). `inherit` is "paper" or "strict".
    #[pyo3(signature = (name, utilization, *, inherit="paper", quantum=None))]
    fn add_pibs(
        &mut self,
        name: &str,
        utilization: &Bound<'_, PyAny>,
        inherit: &str,
        quantum: Option<u64>,
    ) -> PyResult<usize> {
        let mode = match inherit {
            "paper" => Inherit::Paper,
            "strict" => Inherit::Strict,
            other => {
                return Err(PyValueError::new_err(format!(
                    "inherit: {other:?} is not one of \"paper\", \"strict\""
                )))
            }
        };
        let p = Pibs::new(self::utilization(utilization)?, mode).map_err(err)?;
        self.add(name, Server::Pibs(p), quantum)
    }

    /// Deferrable server: `budget` every `period` (ns), full at `now` (ns);
    /// `rank` orders it among servers (default: rate-monotonic by period).
    #[pyo3(signature = (name, budget, period, *, rank=None, now=0, quantum=None))]
    fn add_deferrable(
        &mut self,
        name: &str,
        budget: u64,
        period: u64,
        rank: Option<u64>,
        now: u64,
        quantum: Option<u64>,
    ) -> PyResult<usize> {
        let s = DeferrableServer::new(Nanos(budget), Nanos(period), priority(rank), Nanos(now))
            .map_err(err)?;
        self.add(name, Server::Deferrable(s), quantum)
    }

    /// Polling server: `budget` every `period` (ns), first period at `now`
    /// (ns); `rank` orders it among servers (default: rate-monotonic by period).
    #[pyo3(signature = (name, budget, period, *, rank=None, now=0, quantum=None))]
    fn add_polling(
        &mut self,
        name: &str,
        budget: u64,
        period: u64,
        rank: Option<u64>,
        now: u64,
        quantum: Option<u64>,
    ) -> PyResult<usize> {
        let s = PollingServer::new(Nanos(budget), Nanos(period), priority(rank), Nanos(now))
            .map_err(err)?;
        self.add(name, Server::Polling(s), quantum)
    }

    /// SCHED_DEADLINE-like constant bandwidth server (EDF class): `runtime`
    /// every `period` (ns), starting at `now` (ns); returns its id.
    #[pyo3(signature = (name, runtime, period, *, now=0, quantum=None))]
    fn add_cbs(
        &mut self,
        name: &str,
        runtime: u64,
        period: u64,
        now: u64,
        quantum: Option<u64>,
    ) -> PyResult<usize> {
        let s = Cbs::new(Nanos(runtime), Nanos(period), Nanos(now)).map_err(err)?;
        self.add(name, Server::Cbs(s), quantum)
    }

    /// Plain fixed-priority thread container (rank: smaller is more urgent).
    #[pyo3(signature = (name, rank, *, quantum=None))]
    fn add_unbounded(&mut self, name: &str, rank: u64, quantum: Option<u64>) -> PyResult<usize> {
        self.add(name, Server::Unbounded(Unbounded::new(rank)), quantum)
    }

    /// A thread of `server` (starts blocked); higher `priority` is more urgent.
    #[pyo3(signature = (name, server, priority=1))]
    fn add_thread(&mut self, name: &str, server: usize, priority: u32) -> PyResult<usize> {
        crate::guard("Scheduler.add_thread", || {
            self.inner
                .add_thread(name, ServerId(server), priority)
                .map(|t| t.0)
                .map_err(err)
        })
    }

    /// Alg. 2. Returns True when `schedule` must be called now (preemption).
    #[pyo3(signature = (now, thread, inherit_period=None))]
    fn wakeup(&mut self, now: u64, thread: usize, inherit_period: Option<u64>) -> PyResult<bool> {
        crate::guard("Scheduler.wakeup", || {
            self.inner
                .wakeup(Nanos(now), ThreadId(thread), inherit_period.map(Nanos))
                .map_err(err)
        })
    }

    /// The thread blocks at `now` (ns). Returns True when it was running.
    fn block(&mut self, now: u64, thread: usize) -> PyResult<bool> {
        crate::guard("Scheduler.block", || {
            self.inner.block(Nanos(now), ThreadId(thread)).map_err(err)
        })
    }

    /// Alg. 1: the decision at `now` (ns), a `Dispatch`.
    fn schedule(&mut self, now: u64) -> PyResult<Dispatch> {
        let d = crate::guard("Scheduler.schedule", || {
            self.inner.schedule(Nanos(now)).map_err(err)
        })?;
        Ok(Dispatch {
            server: d.server.map(|s| s.0),
            thread: d.thread.map(|t| t.0),
            background: d.background,
            next_update: d.next_update.map(|t| t.as_ns()),
        })
    }

    /// Strict PIBS inheritance: at `now` (ns), one request for a Main VCPU
    /// of period `main_period` (ns) is done.
    fn io_service_done(&mut self, now: u64, server: usize, main_period: u64) -> PyResult<()> {
        crate::guard("Scheduler.io_service_done", || {
            self.inner
                .io_service_done(Nanos(now), ServerId(server), Nanos(main_period))
                .map_err(err)
        })
    }

    /// State of a server: kind, name, budget, priority key and policy state
    /// (replenishments, eligibility, inherited period, deadline).
    fn server_state<'py>(&self, py: Python<'py>, server: usize) -> PyResult<Bound<'py, PyDict>> {
        let id = ServerId(server);
        let s = self.inner.server(id).map_err(err)?;
        let d = PyDict::new(py);
        d.set_item("name", self.inner.server_name(id).map_err(err)?)?;
        d.set_item("kind", s.kind())?;
        d.set_item("budget", budget_value(s.budget()))?;
        d.set_item("runnable", self.inner.is_runnable(id).map_err(err)?)?;
        let k = self.inner.priority_key(id).map_err(err)?;
        d.set_item("priority_key", (format!("{:?}", k.class), k.key, k.id))?;
        match s {
            Server::Sporadic(ss) => {
                d.set_item("capacity", ss.capacity_c().as_ns())?;
                d.set_item("period", ss.period().as_ns())?;
                d.set_item("usage", ss.usage().as_ns())?;
                d.set_item("foreground", ss.is_foreground())?;
                let q: Vec<(u64, u64)> = ss
                    .replenishments()
                    .map(|r| (r.time.as_ns(), r.amount.as_ns()))
                    .collect();
                d.set_item("replenishments", PyList::new(py, q)?)?;
                d.set_item("replenishment_ops", ss.ops)?;
            }
            Server::Pibs(p) => {
                d.set_item(
                    "utilization",
                    (p.utilization().num(), p.utilization().den()),
                )?;
                d.set_item("inherited_period", p.period().map(|t| t.as_ns()))?;
                d.set_item("c_max", p.c_max().as_ns())?;
                d.set_item("eligibility", p.eligibility().as_ns())?;
                d.set_item("usage", p.usage().as_ns())?;
                d.set_item(
                    "replenishment",
                    p.replenishment().map(|(t, b)| (t.as_ns(), b.as_ns())),
                )?;
                d.set_item("budgeted", p.is_budgeted())?;
            }
            Server::Cbs(c) => {
                d.set_item("runtime", c.runtime().as_ns())?;
                d.set_item("period", c.period().as_ns())?;
                d.set_item("deadline", c.deadline().as_ns())?;
                d.set_item("throttled", c.is_throttled())?;
            }
            Server::Deferrable(x) => {
                d.set_item("capacity", x.capacity_c().as_ns())?;
                d.set_item("period", x.period().as_ns())?;
            }
            Server::Polling(x) => {
                d.set_item("capacity", x.capacity_c().as_ns())?;
                d.set_item("period", x.period().as_ns())?;
            }
            Server::Unbounded(_) => {}
        }
        Ok(d)
    }

    /// The name `server` (an id from an `add_*` call) was given.
    fn server_name(&self, server: usize) -> PyResult<String> {
        self.inner
            .server_name(ServerId(server))
            .map(str::to_owned)
            .map_err(err)
    }

    /// The name `thread` (an id from `add_thread`) was given.
    fn thread_name(&self, thread: usize) -> PyResult<String> {
        self.inner
            .thread_name(ThreadId(thread))
            .map(str::to_owned)
            .map_err(err)
    }

    /// Number of servers added.
    #[getter]
    fn num_servers(&self) -> usize {
        self.inner.num_servers()
    }

    /// Counters: schedule calls, wake-ups, blocks, server switches, busy and
    /// background time, replenishment-queue operations.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.stats();
        let d = PyDict::new(py);
        d.set_item("schedule_calls", s.schedule_calls)?;
        d.set_item("wakeups", s.wakeups)?;
        d.set_item("blocks", s.blocks)?;
        d.set_item("server_switches", s.server_switches)?;
        d.set_item("busy", s.busy.as_ns())?;
        d.set_item("background", s.background.as_ns())?;
        d.set_item("replenishment_ops", self.inner.replenishment_ops())?;
        Ok(d)
    }
}

impl PyScheduler {
    fn add(&mut self, name: &str, server: Server, quantum: Option<u64>) -> PyResult<usize> {
        crate::guard("Scheduler.add_server", || {
            self.inner
                .add_server(name, server, threads(quantum))
                .map(|s| s.0)
                .map_err(err)
        })
    }
}

fn budget_value(b: Nanos) -> Option<u64> {
    (b != Nanos::MAX).then_some(b.as_ns())
}

/// Latency recorder (LATENCY-IP §4 software twin). Times in ns.
#[pyclass(module = "irqlab._native.core", name = "LatencyRecorder", subclass)]
pub struct PyLatencyRecorder {
    inner: LatencyRecorder,
}

#[pymethods]
impl PyLatencyRecorder {
    #[new]
    #[pyo3(signature = (capacity=512, alarm_lat=None))]
    fn new(capacity: usize, alarm_lat: Option<u64>) -> Self {
        PyLatencyRecorder {
            inner: LatencyRecorder::new(capacity, alarm_lat.map(Nanos)),
        }
    }
    /// Rising edge of `irq_in` at `t` (ns); a second one before the ack
    /// counts in `irq_overruns`.
    fn irq(&mut self, t: u64) {
        self.inner.irq(Nanos(t));
    }
    /// Rising edge of `ack_in` at `t` (ns): records and returns `t - irq`
    /// in ns (LATENCY-IP Eq. 2), or None (a spurious ack) with no pending irq.
    fn ack(&mut self, t: u64) -> Option<u64> {
        self.inner.ack(Nanos(t)).map(|l| l.as_ns())
    }
    /// Record a latency (ns) measured elsewhere.
    fn record(&mut self, latency: u64) {
        self.inner.record(Nanos(latency));
    }
    /// Reset the alarm flag.
    fn clear_alarm(&mut self) {
        self.inner.clear_alarm();
    }
    /// True once a latency above `alarm_lat` (ns) was recorded.
    #[getter]
    fn alarm(&self) -> bool {
        self.inner.alarm()
    }
    /// The last latency recorded (ns), or None.
    #[getter]
    fn last(&self) -> Option<u64> {
        self.inner.last().map(|x| x.as_ns())
    }
    /// The smallest latency recorded (ns), or None.
    #[getter]
    fn min(&self) -> Option<u64> {
        self.inner.min().map(|x| x.as_ns())
    }
    /// The largest latency recorded (ns), or None.
    #[getter]
    fn max(&self) -> Option<u64> {
        self.inner.max().map(|x| x.as_ns())
    }
    /// Number of latencies recorded.
    #[getter]
    fn num(&self) -> u64 {
        self.inner.num()
    }
    /// The first `capacity` latencies (ns), in order.
    #[getter]
    fn samples(&self) -> Vec<u64> {
        self.inner.samples().iter().map(|x| x.as_ns()).collect()
    }
    /// Mean latency (ns), or None.
    #[getter]
    fn mean(&self) -> Option<f64> {
        self.inner.mean()
    }
    /// Standard deviation of the latencies (ns), or None.
    #[getter]
    fn std_dev(&self) -> Option<f64> {
        self.inner.std_dev()
    }
    /// Irq edges that arrived while one was still pending.
    #[getter]
    fn irq_overruns(&self) -> u64 {
        self.inner.irq_overruns
    }
    /// Ack edges with no pending irq.
    #[getter]
    fn spurious_acks(&self) -> u64 {
        self.inner.spurious_acks
    }
    /// Latencies recorded past `capacity` (counted in the statistics,
    /// not kept as samples).
    #[getter]
    fn samples_dropped(&self) -> u64 {
        self.inner.samples_dropped
    }
    /// Value at quantile `q` from the histogram (within one bucket, < 0.8 %).
    fn quantile(&self, q: f64) -> Option<u64> {
        self.inner.histogram().quantile(q)
    }
    /// Non-empty histogram buckets as (low, width, count).
    fn histogram(&self) -> Vec<(u64, u64, u64)> {
        self.inner.histogram().buckets().collect()
    }
}

pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = PyModule::new(parent.py(), "core")?;
    m.add_class::<PyScheduler>()?;
    m.add_class::<Dispatch>()?;
    m.add_class::<PyLatencyRecorder>()?;
    parent.add_submodule(&m)?;
    Ok(())
}
