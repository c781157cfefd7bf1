//! Kernel upcalls in a [`Runtime`]: registration (load and verify at once,
//! attach at `start`, detach at `stop` or drop), the fd's normal path (its
//! I/O class takes what is past the budget), the optional fallback to that
//! path when the kernel refuses, and the report.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use irqlab_core::{LatencyRecorder, Nanos};
use serde::Serialize;

use super::{Hook, KernelHandler, KernelStats, KernelUpcall, KernelUpcallSpec};
use crate::error::RtError;
use crate::report::Latency;
use crate::{Event, IoClass, Runtime, Shared, SAMPLES};

/// What a runtime reports of one kernel upcall.
#[derive(Clone, Debug, Serialize)]
pub struct KernelUpcallReport {
    pub name: String,
    pub hook: Hook,
    pub handler: KernelHandler,
    /// The fd whose normal path (I/O class) takes deferred events.
    pub fd: i32,
    pub budget_period_ns: Option<u64>,
    pub budget_time_ns: Option<u64>,
    pub budget_events: Option<u64>,
    pub cost_ns: u64,
    /// `None` when the kernel refused and the runtime fell back (`fallback`
    /// says why).
    pub stats: Option<KernelStats>,
    pub fallback: Option<String>,
    /// Handler start minus the sender's time stamp (with
    /// `send_time_offset`), handled events.
    pub dispatch: Latency,
    /// Handler time (bpf_ktime_get_ns around it), handled events.
    pub handling: Latency,
}

/// A kernel upcall registered with a runtime.
pub(crate) struct Registered {
    name: String,
    spec: KernelUpcallSpec,
    fd: RawFd,
    ku: Option<KernelUpcall>,
    /// The socket, kept open here when the runtime fell back.
    _socket: Option<OwnedFd>,
    fallback: Option<String>,
}

/// Attach every loaded upcall; one the kernel refuses to attach for want of
/// privilege or support is dropped (its events take the class) when it
/// asked for the fallback, and fails the start otherwise.
pub(crate) fn start_all(shared: &Shared, regs: &mut [Registered]) -> Result<(), RtError> {
    for r in regs.iter_mut() {
        let Some(k) = r.ku.as_mut() else { continue };
        match k.start() {
            Ok(()) => {}
            Err(e) if r.spec.fallback && e.is_unavailable() => {
                let why = format!(
                    "kernel upcall {}: {e}; every event takes the fd's I/O class",
                    r.name
                );
                shared.warn(why.clone());
                r.fallback = Some(why);
                // Keep the socket open for the class: detach, then take it.
                let _ = k.detach();
                r._socket = k.socket.take();
                r.ku = None;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

pub(crate) fn detach_all(regs: &mut [Registered]) -> Vec<KernelUpcallReport> {
    regs.iter_mut()
        .map(|r| {
            let mut dispatch = LatencyRecorder::new(SAMPLES, None);
            let mut handling = LatencyRecorder::new(SAMPLES, None);
            let mut stats = None;
            let mut fallback = r.fallback.clone();
            if let Some(k) = r.ku.as_mut() {
                for s in k.samples().unwrap_or_default() {
                    if s.t_send != 0 {
                        dispatch.record(Nanos(s.start.saturating_sub(s.t_send)));
                    }
                    handling.record(Nanos(s.end.saturating_sub(s.start)));
                }
                match k.detach() {
                    Ok(s) => stats = Some(s),
                    Err(e) => fallback = Some(format!("counters unreadable: {e}")),
                }
            }
            let b = r.spec.budget;
            KernelUpcallReport {
                name: r.name.clone(),
                hook: r.spec.hook,
                handler: r.spec.handler,
                fd: r.fd,
                budget_period_ns: b.map(|b| b.period.0),
                budget_time_ns: b.and_then(|b| b.time).map(|t| t.0),
                budget_events: b.and_then(|b| b.events),
                cost_ns: r.spec.cost.0,
                stats,
                fallback,
                dispatch: Latency::of(&dispatch),
                handling: Latency::of(&handling),
            }
        })
        .collect()
}

impl Runtime {
    /// Put a kernel upcall on `socket` (UPCALL's `register_upcall_event`
    /// with a kernel-side budget): events under the budget are handled by
    /// `spec.handler` in the softirq; the others reach the socket, which is
    /// bound to `class` with `handler` (the fd's normal path, a budgeted
    /// bottom half). The program is loaded and verified now (errors carry
    /// the verifier's log), attached at `start`, detached at `stop` or
    /// drop; the runtime owns the socket from now on. Returns its fd.
    pub fn register_kernel_upcall<F>(
        &mut self,
        name: &str,
        socket: OwnedFd,
        spec: &KernelUpcallSpec,
        class: IoClass,
        handler: F,
    ) -> Result<RawFd, RtError>
    where
        F: FnMut(&mut Event) -> u64 + Send + 'static,
    {
        self.not_running("register_kernel_upcall")?;
        let fd = socket.as_raw_fd();
        // Kept only if the runtime falls back (the upcall owns the socket).
        let spare = socket
            .try_clone()
            .map_err(|e| RtError::from_io("dup the kernel upcall's socket", e))?;
        let (ku, socket, fallback) = match KernelUpcall::load(socket, spec) {
            Ok(k) => (Some(k), None, None),
            Err(e) if spec.fallback && e.is_unavailable() => {
                let why =
                    format!("kernel upcall {name}: {e}; every event takes the fd's I/O class");
                self.shared.warn(why.clone());
                (None, Some(spare), Some(why))
            }
            Err(e) => return Err(e),
        };
        // With the upcall loaded the spare dup is closed here, so `fd` stays
        // the socket's only descriptor besides the upcall's.
        let fd = match &socket {
            Some(s) => s.as_raw_fd(),
            None => fd,
        };
        let opts = crate::io::BindOptions {
            top_half: spec.top_half,
            ..Default::default()
        };
        self.bind_fd_with(fd, class, opts, handler)?;
        self.kupcalls.push(Registered {
            name: name.to_string(),
            spec: spec.clone(),
            fd,
            ku,
            _socket: socket,
            fallback,
        });
        Ok(fd)
    }
}
