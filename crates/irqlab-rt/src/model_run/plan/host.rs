//! What this machine and its kernel allow a real run: the real CPUs of the
//! model's CPUs and the generators' (`runtime.cpus`, `generator_cpu`), and
//! the linux path's softirq knobs, which must be this kernel's.

use irqlab_core::Nanos;
use irqlab_model::model::{PathKind, RunOptions};
use irqlab_system::config::{LinuxCfg, PolicyCfg};

use super::refuse;
use crate::error::RtError;
use crate::sys;

/// The real CPU of each of the `ncpu` model CPUs (`runtime.cpus`, else the
/// last allowed ones) and the generators' (`runtime.generator_cpu`, else
/// an allowed CPU the run does not manage, if any).
pub(super) fn real_cpus(
    ncpu: usize,
    opts: &RunOptions,
) -> Result<(Vec<usize>, Option<usize>), RtError> {
    let allowed = sys::allowed_cpus();
    let usable = |field: String, c: u32| {
        if allowed.contains(&(c as usize)) {
            Ok(c as usize)
        } else {
            Err(refuse(
                field,
                c,
                &format!("not a CPU this run may use ({allowed:?})"),
            ))
        }
    };
    let cpus: Vec<usize> = match opts.cpus.as_ref() {
        Some(c) => c
            .iter()
            .enumerate()
            .map(|(k, &x)| usable(format!("runtime.cpus[{k}]"), x))
            .collect::<Result<_, _>>()?,
        None if ncpu > allowed.len() => {
            return Err(refuse(
                "machine.cpus",
                ncpu,
                &format!(
                    "this machine lets the run use {} CPU(s) ({:?})",
                    allowed.len(),
                    allowed
                ),
            ))
        }
        None => allowed[allowed.len() - ncpu..].to_vec(),
    };
    let gen_cpu = match opts.generator_cpu {
        Some(g) => Some(usable("runtime.generator_cpu".into(), g)?),
        None => allowed.iter().copied().find(|c| !cpus.contains(c)),
    };
    Ok((cpus, gen_cpu))
}

/// The kernel's own softirq handling is what the linux path measures: the
/// resolved knobs for it (`machine.linux`, defaults applied) must match
/// this kernel, or be refused; returns the ksoftirqd priority to apply for
/// the run (`fifo`: the one the model states, if it states one).
pub(super) fn linux_knobs(
    l: &LinuxCfg,
    fifo: Option<u32>,
    path: PathKind,
) -> Result<Option<u32>, RtError> {
    if path != PathKind::Linux {
        return Ok(None);
    }
    if l.max_restart != 10 {
        return Err(refuse(
            "machine.linux.max_softirq_restart",
            l.max_restart,
            "this kernel's MAX_SOFTIRQ_RESTART is 10, a compile-time constant",
        ));
    }
    if l.max_softirq_time != Nanos::from_ms(2).0 {
        return Err(refuse(
            "machine.linux.max_softirq_time",
            Nanos(l.max_softirq_time),
            "this kernel's MAX_SOFTIRQ_TIME is 2ms, a compile-time constant",
        ));
    }
    let rt = std::fs::read_to_string("/sys/kernel/realtime").is_ok_and(|s| s.trim() == "1");
    if l.threaded_bh && !rt {
        return Err(refuse(
            "machine.linux.threaded_bh",
            "true",
            "this kernel is not PREEMPT_RT (/sys/kernel/realtime): its bottom halves are not \
             all threaded",
        ));
    }
    match l.ksoftirqd {
        PolicyCfg::Cbs { runtime, period } => Err(refuse(
            "machine.linux.ksoftirqd",
            format!("deadline {{runtime: {runtime} ns, period: {period} ns}}"),
            "ksoftirqd/N is bound to its CPU and the kernel admits SCHED_DEADLINE only for a \
             task whose affinity spans its root domain; a one-CPU root domain needs an \
             exclusive cpuset partition, which a per-CPU kernel thread cannot join: use fifo",
        )),
        _ => Ok(fifo),
    }
}
