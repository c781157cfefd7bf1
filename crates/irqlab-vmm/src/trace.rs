//! The Perfetto / Chrome trace of a real VMM run, written with the
//! simulator's trace writer (`irqlab_sim::Trace`: the same formats, the
//! same track layout) from the run's report.
//!
//! What is drawn (times are host CLOCK_MONOTONIC ns from the first event
//! of the trace; guest stamps converted by the report's TSC fit):
//! * process "host: top half": per host event a "physical isr" slice from
//!   its arrival to its injection (clipped so slices never overlap: the
//!   top half drains a socket in one go), and a flow arrow from the
//!   injection to the guest ISR that found the event;
//! * process "guest VCPU v" (one per VCPU): the guest's own spans -- each ISR (entry to
//!   the stamp before its EOI), each DSR run per event, each periodic
//!   task's job (start to end) -- nested as they ran (one guest stack;
//!   the guest's clock is one line, so nesting is kept exactly);
//! * process "VCPU v runners": which host thread ran that VCPU when, a
//!   slice per stretch on the process's track and on its server's track
//!   ("vcpuN" or "pseudo-<device>", VINT §V) under "servers on VCPU v
//!   runners".
//!
//! Process (trace "CPU") numbers: 0 the host, `1 + 2v` guest VCPU `v`,
//! `2 + 2v` its runners.
//!
//! Design principle: no second trace format; everything comes from
//! `VmmReport`, so a trace can be written after the fact from a saved run.

use std::collections::HashSet;
use std::io::Write;

use irqlab_sim::{Trace, TraceFormat};

use crate::machine::VmmReport;

/// The "CPUs" of a VMM trace: the host's top half, and per guest VCPU
/// `v` its guest spans (`guest(v)`) and its runners (`runners(v)`).
pub const HOST: usize = 0;
pub const fn guest(v: usize) -> usize {
    1 + 2 * v
}
pub const fn runners(v: usize) -> usize {
    2 + 2 * v
}

/// Build the trace of `r` (at most `max_events` trace events; the writer
/// says when it cut).
pub fn build(r: &VmmReport, max_events: usize) -> Trace {
    let mut t = Trace::new(true, None, max_events);
    let nv = r.vcpus.max(1);
    let mut labels = vec!["host: top half".to_string()];
    for v in 0..nv {
        labels.push(format!("guest VCPU {v}"));
        labels.push(format!("VCPU {v} runners"));
    }
    t.cpu_labels(&labels);
    // Servers: vcpu0, the pseudo-VCPUs (of VCPU 0), then vcpu1...
    let mut servers = vec![(runners(0), "vcpu0".to_string())];
    servers.extend(
        r.devices
            .iter()
            .map(|d| (runners(0), format!("pseudo-{}", d.name))),
    );
    let ap_server = servers.len();
    servers.extend((1..nv).map(|v| (runners(v), format!("vcpu{v}"))));
    t.names(labels.len(), &servers);
    let t0 = r
        .events
        .iter()
        .map(|e| e.arrival_ns)
        .chain(r.runner_slices.iter().map(|s| s.start_ns))
        .chain(r.guest.jobs.iter().map(|j| j.start_ns))
        .min()
        .unwrap_or(0);
    let at = |ns: u64| ns.saturating_sub(t0);
    let dev_name = |d: usize| r.devices.get(d).map_or("?", |x| x.name.as_str());
    let dev_guest = |d: usize| guest(r.devices.get(d).map_or(0, |x| x.vcpu));

    let mut last_host = 0u64;
    let mut isrs = HashSet::new();
    for (k, e) in r.events.iter().enumerate() {
        let name = dev_name(e.device);
        let start = at(e.arrival_ns).max(last_host);
        let end = at(e.inject_ns).max(start + 1);
        t.irq_slice(
            HOST,
            "physical isr",
            &format!("physical isr {name}"),
            start,
            end,
        );
        last_host = end;
        if e.isr_ns != 0 {
            let token = k as u64;
            t.flow_begin(token, HOST, end, "injection");
            t.flow_end(token, dev_guest(e.device), at(e.isr_ns));
            // One slice per guest ISR (several events may share one).
            if isrs.insert((e.device, e.isr_ns)) {
                let isr_end = at(e.isr_end_ns.max(e.isr_ns + 1));
                t.irq_slice(
                    dev_guest(e.device),
                    "isr",
                    &format!("isr {name}"),
                    at(e.isr_ns),
                    isr_end,
                );
            }
        }
        if e.dsr_start_ns != 0 && e.dsr_end_ns >= e.dsr_start_ns {
            let (a, b) = (at(e.dsr_start_ns), at(e.dsr_end_ns));
            t.irq_slice(
                dev_guest(e.device),
                "dsr",
                &format!("dsr {name}"),
                a,
                b.max(a + 1),
            );
        }
    }
    for j in &r.guest.jobs {
        let name = r.guest.tasks.get(j.task).map_or("?", |k| k.name.as_str());
        let (a, b) = (at(j.start_ns), at(j.end_ns));
        t.irq_slice(guest(0), "task", name, a, b.max(a + 1));
    }
    for s in &r.runner_slices {
        let (server, thread) = match (s.vcpu, s.pseudo) {
            (0, None) => (0, "vcpu0".to_string()),
            (_, Some(d)) => (d + 1, format!("pseudo-{}", dev_name(d))),
            (v, None) => (ap_server + v - 1, format!("vcpu{v}")),
        };
        let (a, b) = (at(s.start_ns), at(s.end_ns));
        t.run(runners(s.vcpu), server, &thread, a, b, false);
    }
    t
}

/// Write the trace of `r` to `w` in `format`; returns whether it was cut
/// at `max_events`.
pub fn write(
    r: &VmmReport,
    w: &mut dyn Write,
    format: TraceFormat,
    max_events: usize,
) -> std::io::Result<bool> {
    let mut t = build(r, max_events);
    t.write(w, format)?;
    Ok(t.truncated)
}
