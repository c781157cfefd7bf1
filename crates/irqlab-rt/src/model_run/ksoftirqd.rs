//! The model's `machine.linux.ksoftirqd` on the real `linux` path: the
//! kernel's `ksoftirqd/N` threads of the run's CPUs get the model's
//! SCHED_FIFO priority for the run and their own policy back afterwards.
//!
//! What the kernel allows, and so what a model may ask:
//! * `fifo: P` -- `sched_setscheduler(ksoftirqd/N, SCHED_FIFO, P)` for every
//!   CPU the run uses (the model's CPUs and the generators' CPU, where
//!   loopback raises its NET_RX softirq). Needs CAP_SYS_NICE (root);
//!   without it the run is refused with the kernel's reason.
//! * `deadline: {runtime, period}` -- refused: ksoftirqd/N is bound to its
//!   CPU, and the kernel admits a SCHED_DEADLINE task only if its affinity
//!   spans its whole root domain (`__sched_setscheduler`: EPERM). A root
//!   domain of one CPU needs an exclusive cpuset partition, into which a
//!   per-CPU kernel thread cannot be moved (PF_NO_SETAFFINITY).
//!
//! Design principles: the change is scoped to the run -- a guard saves each
//! thread's policy and priority first and restores them on drop, so an
//! error, an early return or a Ctrl-C (the run's signal guard turns it into
//! a normal stop, and this guard is dropped before the signal guard) leaves
//! the kernel as it was; only SIGKILL can skip the restore, and the guard's
//! `applied` list says what to reset by hand then. A partial apply is undone
//! before the error is returned.

use crate::error::RtError;
use crate::sys::{self, SchedPolicy};

/// The `ksoftirqd/N` threads (tid, N) of `cpus`, from `/proc`.
pub(crate) fn threads(cpus: &[usize]) -> Vec<(i32, usize)> {
    let mut out = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return out;
    };
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(comm) = std::fs::read_to_string(format!("/proc/{pid}/comm")) else {
            continue;
        };
        let Some(n) = comm
            .trim()
            .strip_prefix("ksoftirqd/")
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        if cpus.contains(&n) {
            out.push((pid, n));
        }
    }
    out.sort_by_key(|&(_, n)| n);
    out
}

/// ksoftirqd at the model's policy for as long as it lives.
pub(crate) struct KsoftirqdGuard {
    saved: Vec<(i32, usize, SchedPolicy)>,
}

impl KsoftirqdGuard {
    /// Give the ksoftirqd threads of `cpus` SCHED_FIFO `priority`; the
    /// error names `machine.linux.ksoftirqd` and the kernel's reason.
    pub(crate) fn apply(priority: u32, cpus: &[usize]) -> Result<KsoftirqdGuard, RtError> {
        let field = "machine.linux.ksoftirqd";
        let value = format!("fifo: {priority}");
        let found = threads(cpus);
        if found.len() != cpus.len() {
            return Err(RtError::config(
                field,
                value,
                format!(
                    "no ksoftirqd thread found in /proc for every CPU of the run ({cpus:?}; found \
                     {:?})",
                    found.iter().map(|&(_, n)| n).collect::<Vec<_>>()
                ),
            ));
        }
        let mut g = KsoftirqdGuard { saved: Vec::new() };
        for (tid, n) in found {
            let old = sys::get_policy(tid)?;
            let want = SchedPolicy {
                policy: libc::SCHED_FIFO,
                priority: priority as i32,
            };
            if let Err(e) = sys::set_policy(tid, want) {
                drop(g); // undo the CPUs already changed
                return Err(RtError::config(
                    field,
                    value,
                    format!("ksoftirqd/{n} (tid {tid}) cannot be given SCHED_FIFO {priority}: {e}"),
                ));
            }
            g.saved.push((tid, n, old));
        }
        Ok(g)
    }

    /// What was changed: (ksoftirqd/N, the policy restored on drop).
    pub(crate) fn applied(&self) -> Vec<(usize, SchedPolicy)> {
        self.saved.iter().map(|&(_, n, p)| (n, p)).collect()
    }
}

impl Drop for KsoftirqdGuard {
    fn drop(&mut self) {
        for &(tid, n, old) in self.saved.iter().rev() {
            if let Err(e) = sys::set_policy(tid, old) {
                eprintln!(
                    "irqlab: could not restore ksoftirqd/{n} (tid {tid}) to {} {}: {e}; \
                     reset it with: chrt -p -o 0 {tid}",
                    old.name(),
                    old.priority
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> bool {
        // SAFETY: plain syscall.
        unsafe { libc::geteuid() == 0 }
    }

    /// Applied while the guard lives, restored when it drops (root only:
    /// without CAP_SYS_NICE the apply must be refused with the field).
    #[test]
    fn ksoftirqd_policy_applied_and_restored() {
        let cpus = sys::allowed_cpus();
        let before: Vec<(i32, SchedPolicy)> = threads(&cpus)
            .into_iter()
            .filter_map(|(t, _)| sys::get_policy(t).ok().map(|p| (t, p)))
            .collect();
        assert_eq!(before.len(), cpus.len(), "one ksoftirqd per CPU");
        match KsoftirqdGuard::apply(7, &cpus) {
            Ok(g) => {
                for &(t, _) in &before {
                    let p = sys::get_policy(t).expect("readable");
                    assert_eq!((p.policy, p.priority), (libc::SCHED_FIFO, 7), "tid {t}");
                }
                assert_eq!(g.applied().len(), cpus.len());
                drop(g);
                for &(t, old) in &before {
                    assert_eq!(sys::get_policy(t).expect("readable"), old, "tid {t}");
                }
            }
            Err(e) => {
                assert!(!root(), "root could not set ksoftirqd: {e}");
                let s = e.to_string();
                assert!(s.contains("machine.linux.ksoftirqd"), "{s}");
                eprintln!("skipped: not root, setting ksoftirqd refused: {s}");
            }
        }
    }

    /// A CPU without a ksoftirqd thread (none has this number) is refused
    /// before anything changes.
    #[test]
    fn missing_cpu_is_refused() {
        let e = match KsoftirqdGuard::apply(7, &[usize::MAX]) {
            Ok(_) => panic!("accepted a CPU without ksoftirqd"),
            Err(e) => e.to_string(),
        };
        assert!(
            e.contains("machine.linux.ksoftirqd") && e.contains("no ksoftirqd"),
            "{e}"
        );
    }
}
