//! The limits of a `SimConfig` given as JSON (bad input never panics, wraps or hangs: docs/model.md): every time at most
//! 10^6 s, sums and products of user times in 128-bit arithmetic, bounded
//! windows, counts and sizes -- the same limits `irqlab-model` applies to
//! a YAML model, so a configuration from Python can neither overflow the
//! simulator's time nor make it allocate without bound.

use super::super::*;
use super::bad;

/// Keys of the configuration (at any depth) whose numbers are times in ns.
pub(super) const TIME_KEYS: &[&str] = &[
    "duration",
    "window",
    "ns",
    "budget",
    "period",
    "runtime",
    "deadline",
    "offset",
    "at",
    "interval",
    "start",
    "stop",
    "gap",
    "every",
    "rtt",
    "top_half",
    "bottom_half",
    "latency",
    "per_sector",
    "jitter",
    "omega_io",
    "omega_main",
    "kfree",
    "min_interarrival",
    "isr",
    "dsr",
    "eoi",
    "ipi",
    "switch_overhead",
    "dispatch_delay",
    "context_switch",
    "priority_switch",
    "timer_latency",
    "moderation",
    "until",
    "max_softirq_time",
    "times",
];

/// `TIME_KEYS` as a set for the quick pass (`time_scan`).
pub(super) static TIME_KEY_SET: super::time_scan::KeySet = super::time_scan::KeySet::new(TIME_KEYS);

/// Every time in the configuration at most `MAX_TIME` (so sums of a few
/// thousand cannot wrap): the error names the JSON path.
pub(super) fn check_times(
    v: &serde_json::Value,
    path: &str,
    time: bool,
) -> Result<(), SystemError> {
    let max = irqlab_model::limits::MAX_TIME.0;
    match v {
        serde_json::Value::Object(o) => {
            for (k, x) in o {
                let here = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                check_times(x, &here, TIME_KEYS.contains(&k.as_str()))?;
            }
        }
        serde_json::Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                check_times(x, &format!("{path}[{i}]"), time)?;
            }
        }
        serde_json::Value::Number(n) if time && n.as_u64().is_none_or(|t| t > max) => {
            return Err(bad(
                path.to_owned(),
                n,
                &format!("exceeds the longest time accepted, {max} ns (10^6 s)"),
            ));
        }
        _ => {}
    }
    Ok(())
}

/// Time of one pass through `phases` (loops multiplied, an endless loop
/// counted once) in wide arithmetic.
fn program_time(phases: &[Phase]) -> u128 {
    phases.iter().fold(0u128, |acc, p| {
        acc.saturating_add(match p {
            Phase::Compute { ns } | Phase::Sleep { ns } => u128::from(*ns),
            Phase::Loop { body, count } => {
                program_time(body).saturating_mul(u128::from(count.unwrap_or(1)))
            }
            _ => 0,
        })
    })
}

/// `path`: the JSON path of `phases`, built only for an error.
fn check_counts(phases: &[Phase], path: &dyn Fn() -> String) -> Result<(), SystemError> {
    use irqlab_model::limits::MAX_COUNT;
    for (i, p) in phases.iter().enumerate() {
        if let Phase::Loop { body, count } = p {
            if let Some(c) = count.filter(|c| *c > MAX_COUNT) {
                return Err(bad(
                    format!("{}[{i}].count", path()),
                    c,
                    &format!("must be at most {MAX_COUNT}"),
                ));
            }
            check_counts(body, &|| format!("{}[{i}].body", path()))?;
        }
    }
    Ok(())
}

/// The limits of `irqlab_model::limits` for a configuration given as JSON
/// (from Python): times, windows, counts, sizes, rates, queue bounds.
pub(super) fn check_limits(c: &SimConfig) -> Result<(), SystemError> {
    use irqlab_model::limits as lim;
    // the exact check (it names the path) only when the quick pass, which
    // builds no JSON tree, finds a time it cannot pass
    if !super::time_scan::config_times_within(c, &TIME_KEY_SET, lim::MAX_TIME.0) {
        if let Ok(v) = serde_json::to_value(c) {
            check_times(&v, "", false)?;
        }
    }
    if c.window > 0 {
        let n = c.duration.div_ceil(c.window);
        if n > lim::MAX_WINDOWS {
            return Err(bad(
                "window".into(),
                c.window,
                &format!(
                    "duration {} / window is {n} windows: at most {} per run (raise the window)",
                    c.duration,
                    lim::MAX_WINDOWS
                ),
            ));
        }
    }
    if c.cpus > 1024 {
        return Err(bad("cpus".into(), c.cpus, "must be between 1 and 1024"));
    }
    for (i, s) in c.servers.iter().enumerate() {
        match s.policy {
            PolicyCfg::Sporadic { max_repl, .. }
                if !(2..=irqlab_core::MAX_MAX_REPL).contains(&max_repl) =>
            {
                return Err(bad(
                    format!("servers[{i}].max_repl"),
                    max_repl,
                    &format!("must be between 2 and {}", irqlab_core::MAX_MAX_REPL),
                ))
            }
            PolicyCfg::Pibs { num, den, .. } if den == 0 || num == 0 || num > den => {
                return Err(bad(
                    format!("servers[{i}]"),
                    format!("num {num}, den {den}"),
                    "a PIBS utilization num/den must be in (0, 1]",
                ))
            }
            _ => {}
        }
    }
    for (i, t) in c.tasks.iter().enumerate() {
        let path = || format!("tasks[{i}].program");
        check_counts(&t.program, &path)?;
        let all = program_time(&t.program);
        if all > u128::from(lim::MAX_TIME.0) {
            return Err(bad(
                path(),
                format!("{all} ns per pass"),
                "compute and sleep (loops multiplied) exceed the longest time accepted, 10^6 s",
            ));
        }
        if let Release::Periodic { jobs: Some(j), .. } = t.release {
            if j > lim::MAX_COUNT {
                return Err(bad(
                    format!("tasks[{i}].release.jobs"),
                    j,
                    &format!("must be at most {}", lim::MAX_COUNT),
                ));
            }
        }
    }
    for (i, d) in c.devices.iter().enumerate() {
        let p = |f: &str| format!("devices[{i}].{f}");
        let sizes: Vec<(&str, u64, u64)> = match &d.kind {
            DeviceKind::Nic {
                bytes,
                buffer,
                ring,
                arrival,
                ..
            } => {
                for (f, v) in [("buffer", *buffer), ("ring", *ring)] {
                    if v > lim::MAX_QUEUE {
                        return Err(bad(
                            p(f),
                            v,
                            &format!("must be at most {} packets", lim::MAX_QUEUE),
                        ));
                    }
                }
                match arrival {
                    ArrivalCfg::Periodic { interval, .. }
                    | ArrivalCfg::PingFlood { interval, .. }
                        if *interval > 0 && *interval < lim::MIN_PACKET_INTERVAL.0 =>
                    {
                        return Err(bad(
                            p("arrival.interval"),
                            interval,
                            "a NIC delivers at most 2e8 packets/s (an interval of at least 5 ns)",
                        ))
                    }
                    ArrivalCfg::Poisson { rate_per_s, .. }
                        if *rate_per_s > lim::MAX_PACKET_RATE =>
                    {
                        return Err(bad(
                            p("arrival.rate_per_s"),
                            rate_per_s,
                            "a NIC delivers at most 2e8 packets/s",
                        ))
                    }
                    ArrivalCfg::Burst { count, gap, .. }
                        if *count > lim::MAX_BURST
                            || (*count > 1 && *gap < lim::MIN_PACKET_INTERVAL.0) =>
                    {
                        return Err(bad(
                            p("arrival"),
                            format!("count {count}, gap {gap}"),
                            "a burst has at most 10^6 packets, at least 5 ns apart (2e8 packets/s)",
                        ))
                    }
                    _ => {}
                }
                vec![("bytes", *bytes, lim::MAX_PACKET_BYTES)]
            }
            DeviceKind::Disk {
                per_sector,
                sectors,
                sector_bytes,
                ..
            } => {
                if u128::from(*per_sector) * u128::from(*sectors) > u128::from(lim::MAX_TIME.0) {
                    return Err(bad(
                        p("per_sector"),
                        format!("{per_sector} × sectors {sectors}"),
                        "the bottom half of one request exceeds the longest time accepted, 10^6 s",
                    ));
                }
                vec![
                    ("sectors", *sectors, lim::MAX_COUNT),
                    ("sector_bytes", *sector_bytes, lim::MAX_SIZE_BYTES),
                ]
            }
            DeviceKind::Usb { bytes, rate, .. } => vec![
                ("bytes", *bytes, lim::MAX_SIZE_BYTES),
                ("rate", *rate, lim::MAX_DATA_RATE),
            ],
            DeviceKind::Generic { .. } => vec![],
        };
        for (f, v, hi) in sizes {
            if !(1..=hi).contains(&v) {
                return Err(bad(p(f), v, &format!("must be between 1 and {hi}")));
            }
        }
    }
    Ok(())
}
