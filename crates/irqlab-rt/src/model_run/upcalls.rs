//! A model's upcalls on irqlab-rt (`devices[].upcall`, irqlab_model's
//! `handling.rs`): a user upcall runs the device's handler in the
//! runtime's top half under its own sporadic server (UPCALL §3.2,
//! `Runtime::register_upcall`); a kernel upcall loads an eBPF count handler
//! into the network softirq of a nic's socket, under a kernel-side budget,
//! and binds the socket to the device's class for the events past it
//! (`Runtime::register_kernel_upcall`).
//!
//! Design principles: the handler is the bottom half the class would run --
//! one item per call, the model's per-item work, the readers woken -- so a
//! device moves between a class and an upcall without changing what its
//! readers see; the kernel side's refusals name the model's keys
//! (`devices[i].upcall.budget`), not the runtime's.

use std::sync::Arc;

use irqlab_core::Nanos;
use irqlab_model::model::UpcallMode;

use super::devices::DevShared;
use super::plan::Plan;
use crate::error::RtError;
use crate::kupcall::{KernelBudget, KernelUpcallSpec};
use crate::{Event, IoClass, Runtime, TaskHandle, UpcallBudget};

/// The bottom half of device `d` as a handler: one item per call, `work`
/// each, then its readers woken.
pub(crate) fn handler(
    dev: Arc<DevShared>,
    work: Nanos,
    readers: Vec<TaskHandle>,
) -> impl FnMut(&mut Event) -> u64 + Send + 'static {
    move |ev: &mut Event| {
        let n = dev.take_fd(1);
        dev.deliver(n, work);
        if n > 0 {
            for &r in &readers {
                ev.wake(r);
            }
        }
        n
    }
}

/// Register the user upcall of every device that has one.
pub(crate) fn register_user(
    rt: &mut Runtime,
    p: &Plan,
    devs: &[Arc<DevShared>],
    readers: &dyn Fn(usize) -> Vec<TaskHandle>,
) -> Result<(), RtError> {
    for (i, d) in p.devices.iter().enumerate() {
        let Some(u) = d.upcall.as_ref().filter(|u| u.mode == UpcallMode::User) else {
            continue;
        };
        let budget = UpcallBudget {
            budget: u.budget.0,
            period: u.period.0,
        };
        let h = handler(devs[i].clone(), d.bottom_half, readers(i));
        rt.register_upcall_with(&d.name, devs[i].fd, budget, d.top_half, h)
            .map_err(|e| model_key(e, i))?;
    }
    Ok(())
}

/// Bind device `i` to `class` through its kernel upcall, if it has one;
/// `false` if it has none (the caller binds it to the class itself).
pub(crate) fn bind_kernel(
    rt: &mut Runtime,
    p: &Plan,
    i: usize,
    dev: &Arc<DevShared>,
    class: IoClass,
    readers: Vec<TaskHandle>,
) -> Result<bool, RtError> {
    let d = &p.devices[i];
    let Some(u) = d.upcall.as_ref().filter(|u| u.mode == UpcallMode::Kernel) else {
        return Ok(false);
    };
    let spec = KernelUpcallSpec {
        cost: d.bottom_half,
        budget: Some(KernelBudget {
            period: u.period.0,
            time: Some(u.budget.0),
            events: u.events,
        }),
        fallback: u.fallback,
        top_half: d.top_half,
        ..Default::default()
    };
    // The upcall owns a dup of the socket; the class's handler reads
    // through the device's own descriptor.
    // SAFETY: `dev.fd` is open (the device keeps it) for this call.
    let dup = unsafe { std::os::fd::BorrowedFd::borrow_raw(dev.fd) }
        .try_clone_to_owned()
        .map_err(|e| RtError::from_io(format!("devices[{i}]"), e))?;
    let h = handler(dev.clone(), d.bottom_half, readers);
    rt.register_kernel_upcall(&d.name, dup, &spec, class, h)
        .map_err(|e| model_key(e, i))?;
    Ok(true)
}

/// A runtime refusal of an upcall, named by the model's key:
/// `kernel upcall budget.time` / `upcall[x].budget` is
/// `devices[i].upcall.budget`.
fn model_key(e: RtError, i: usize) -> RtError {
    match e {
        RtError::Config { field, value, rule } => {
            let key = field
                .strip_prefix("kernel upcall ")
                .map(|k| k.strip_suffix(".time").unwrap_or(k).to_string())
                .or_else(|| {
                    field
                        .starts_with("upcall[")
                        .then(|| field.rsplit('.').next().unwrap_or("budget").to_string())
                })
                .unwrap_or(field);
            RtError::config(format!("devices[{i}].upcall.{key}"), value, rule)
        }
        e => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_refusals_name_the_model_key() {
        let e = model_key(
            RtError::config("kernel upcall budget.time", "20ms", "at most the period"),
            3,
        );
        assert_eq!(
            e.to_string(),
            RtError::config("devices[3].upcall.budget", "20ms", "at most the period").to_string()
        );
        let e = model_key(RtError::config("upcall[tick].budget", "0", "positive"), 1);
        assert!(e.to_string().starts_with("devices[1].upcall.budget"), "{e}");
    }
}
