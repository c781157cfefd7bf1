//! A model's devices as real event sources: a `nic` is a UDP socket on
//! loopback fed by a generator thread with the model's arrival process
//! (periodic, flood, Poisson, bursts, the times of a trace file, or a
//! closed `ping -f` loop whose next packet goes `rtt` after the reply --
//! the end of the previous packet's bottom half, on the linux path its
//! read); a `generic` device is an eventfd
//! written every minimum inter-arrival time plus a uniform jitter. Each
//! device keeps the items its bottom half delivered and a reader has not
//! taken yet (bounded by the model's `buffer`), and the latency of every
//! read, from the call to its return (the simulator's `latency`).
//!
//! Design principles: generators run on a CPU the run does not manage when
//! there is one, with a 1 ns timer slack, on absolute times from the run's
//! start (late sends catch up, so the rate is the model's); random
//! processes draw from the model's seed (one stream per device), so a seed
//! gives the same arrival times as far as the host lets the generator keep
//! them.

use std::net::UdpSocket;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use irqlab_core::rng::SplitMix64;
use irqlab_core::{LatencyRecorder, Nanos};

use irqlab_model::model::Source;

use super::plan::{Arrival, DevKind, DevPlan};
use super::program::{spin, KEEP};
use crate::error::RtError;
use crate::sys;

/// A device's open descriptor and its counters.
pub(crate) struct DevShared {
    pub kind: DevKind,
    /// A generic device's source (`sources.rs`).
    pub source: Source,
    /// A pipe's write end.
    writer: Option<sys::Fd>,
    /// The socket or eventfd (nic, generic); -1 for a request device, whose
    /// fds are its routes (`requests.rs`).
    pub fd: RawFd,
    /// Keeps the socket or eventfd open.
    _owner: Owner,
    /// The generator's destination (nic).
    to: Option<std::net::SocketAddr>,
    pub cap: u64,
    /// Items delivered and not yet read.
    pub avail: AtomicU64,
    /// Items the bottom half handled.
    pub handled: AtomicU64,
    /// Items dropped for a full buffer (the kernel's drops come apart).
    pub overflow: AtomicU64,
    pub sent: Arc<AtomicU64>,
    pub reads: Mutex<LatencyRecorder>,
    /// A closed loop's replies (ping flood): signalled per item handled.
    reply: Option<Arc<sys::Fd>>,
}

/// Held only to keep the descriptor open for the run.
#[allow(dead_code)]
enum Owner {
    Udp(UdpSocket),
    Fd(sys::Fd),
    None,
}

impl DevShared {
    pub fn open(p: &DevPlan, field: &str) -> Result<DevShared, RtError> {
        let mut writer = None;
        let (fd, owner, to) = match p.kind {
            DevKind::Nic => {
                let rx = UdpSocket::bind("127.0.0.1:0")
                    .and_then(|r| r.set_nonblocking(true).map(|_| r))
                    .map_err(|e| RtError::from_io(field, e))?;
                let to = rx.local_addr().map_err(|e| RtError::from_io(field, e))?;
                (rx.as_raw_fd(), Owner::Udp(rx), Some(to))
            }
            DevKind::Generic => {
                let (e, w) = super::sources::open(p.source)?;
                writer = w;
                (e.0, Owner::Fd(e), None)
            }
            DevKind::Usb | DevKind::Disk => (-1, Owner::None, None),
        };
        Ok(DevShared {
            kind: p.kind,
            source: p.source,
            writer,
            fd,
            _owner: owner,
            to,
            cap: p.buffer.max(1),
            avail: AtomicU64::new(0),
            handled: AtomicU64::new(0),
            overflow: AtomicU64::new(0),
            sent: Arc::new(AtomicU64::new(0)),
            reads: Mutex::new(LatencyRecorder::new(KEEP, None)),
            reply: match p.arrival {
                Some(Arrival::PingFlood { .. }) => Some(Arc::new(sys::eventfd()?)),
                _ => None,
            },
        })
    }

    /// `n` items were handled: a closed loop's replies go out.
    pub fn replied(&self, n: u64) {
        if let Some(r) = &self.reply {
            for _ in 0..n {
                sys::eventfd_signal(r.0);
            }
        }
    }

    /// Take what the descriptor holds now, at most `max` items: one
    /// datagram (nic) or the eventfd's count (generic). 0: nothing.
    pub fn take_fd(&self, max: u64) -> u64 {
        match self.kind {
            DevKind::Nic => {
                let mut buf = [0u8; 2048];
                let mut n = 0;
                while n < max {
                    // SAFETY: reads into a live buffer of its length.
                    let r = unsafe {
                        libc::recv(
                            self.fd,
                            buf.as_mut_ptr().cast(),
                            buf.len(),
                            libc::MSG_DONTWAIT,
                        )
                    };
                    if r < 0 {
                        break;
                    }
                    n += 1;
                }
                n
            }
            DevKind::Generic => super::sources::take(self.source, self.fd, max),
            DevKind::Usb | DevKind::Disk => 0,
        }
    }

    /// The bottom half of `n` items: `work` each, then into the buffer.
    pub fn deliver(&self, n: u64, work: Nanos) {
        for _ in 0..n {
            spin(work);
            self.handled.fetch_add(1, Ordering::Relaxed);
            self.replied(1);
            let cap = self.cap;
            let ok = self
                .avail
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |a| {
                    (a < cap).then_some(a + 1)
                })
                .is_ok();
            if !ok {
                self.overflow.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Take one delivered item if there is one.
    pub fn take(&self) -> bool {
        self.avail
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |a| a.checked_sub(1))
            .is_ok()
    }

    pub fn record_read(&self, since: Nanos) {
        let t = sys::now().saturating_sub(since);
        // Not parked while the recorder may allocate (see program.rs).
        crate::park::critical(|| {
            if let Ok(mut r) = self.reads.lock() {
                r.record(t);
            }
        });
    }

    /// Datagrams the kernel dropped on the socket (nic).
    pub fn kernel_drops(&self) -> u64 {
        match self.kind {
            DevKind::Nic => crate::io::socket_drops(self.fd).unwrap_or(0),
            _ => 0,
        }
    }
}

/// Arrival times of one device, relative to the run's start.
struct Times {
    a: Arrival,
    rng: SplitMix64,
    next: Option<Nanos>,
    left_in_burst: u64,
}

impl Times {
    fn new(a: Arrival, seed: u64, dev: usize) -> Times {
        let mut rng = SplitMix64::stream(seed, dev as u64);
        let next = match &a {
            Arrival::Periodic { start, .. } => Some(*start),
            Arrival::Poisson {
                start, rate_per_s, ..
            } => Some(*start + Nanos(rng.exponential_ns(*rate_per_s))),
            Arrival::Burst { start, .. } => Some(*start),
            Arrival::Sporadic { start, .. } => Some(*start),
            Arrival::Trace { times } => times.first().copied(),
            // Sent by `ping_flood`, not from a list of times.
            Arrival::PingFlood { .. } => None,
        };
        let left_in_burst = match &a {
            Arrival::Burst { count, .. } => *count,
            _ => 0,
        };
        Times {
            a,
            rng,
            next,
            left_in_burst,
        }
    }
}

impl Iterator for Times {
    type Item = Nanos;
    fn next(&mut self) -> Option<Nanos> {
        let now = self.next?;
        let (after, stop) = match &self.a {
            Arrival::Periodic { interval, stop, .. } => (now + *interval, *stop),
            Arrival::Poisson {
                rate_per_s, stop, ..
            } => (
                now + Nanos(self.rng.exponential_ns(*rate_per_s).max(1)),
                *stop,
            ),
            Arrival::Burst {
                count,
                gap,
                every,
                start,
                stop,
            } => {
                self.left_in_burst = self.left_in_burst.saturating_sub(1);
                if self.left_in_burst > 0 {
                    (now + Nanos(gap.0.max(1)), *stop)
                } else {
                    self.left_in_burst = *count;
                    let every = every.0.max(1);
                    let k = now.saturating_sub(*start).0 / every + 1;
                    (*start + Nanos(k.saturating_mul(every)), *stop)
                }
            }
            Arrival::Sporadic { min, jitter, .. } => {
                let j = self.rng.below(jitter.0.saturating_add(1));
                (now + *min + Nanos(j), None)
            }
            Arrival::Trace { times } => {
                self.next = times.get(times.partition_point(|&x| x <= now)).copied();
                return Some(now);
            }
            Arrival::PingFlood { .. } => return None,
        };
        self.next = stop.is_none_or(|s| after < s).then_some(after);
        Some(now)
    }
}

/// Sleep until `t` in slices, so a stop is seen within 20 ms; `false` if
/// stopped first.
pub(crate) fn sleep_abs(t: Nanos, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = sys::now();
        if now >= t {
            return true;
        }
        let until = t.min(now + Nanos::from_ms(20));
        let ts = libc::timespec {
            tv_sec: (until.0 / 1_000_000_000) as libc::time_t,
            tv_nsec: (until.0 % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: valid timespec; an interrupted sleep is retried.
        unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            );
        }
    }
}

/// Start the generator of device `i` on its own thread: items at the
/// model's arrival times from `t0` until `stop`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn start_generator(
    i: usize,
    p: &DevPlan,
    arrival: &Arrival,
    d: &DevShared,
    seed: u64,
    t0: Nanos,
    cpu: Option<usize>,
    stop: Arc<AtomicBool>,
) -> Result<std::thread::JoinHandle<()>, RtError> {
    let times = Times::new(arrival.clone(), seed, i);
    let ping = arrival.clone();
    let reply = d.reply.clone();
    let sent = d.sent.clone();
    let (to, bytes) = (d.to, p.bytes);
    if d.kind == DevKind::Generic && d.source == Source::Timerfd {
        let Arrival::Sporadic { min, start, .. } = *arrival else {
            return Err(RtError::config(
                format!("devices[{i}].source"),
                "timerfd",
                "a timerfd fires at a generic device's min_interarrival",
            ));
        };
        return super::sources::run_timerfd(&p.name, d.fd, t0 + start, min, sent, stop);
    }
    // The generator writes through its own descriptor (a dup of the
    // eventfd, or of the pipe's write end).
    let efd = match d.kind {
        DevKind::Generic => {
            let w = d.writer.as_ref().map_or(d.fd, |w| w.0);
            // SAFETY: dup of a descriptor this device keeps open.
            let r = unsafe { libc::dup(w) };
            if r < 0 {
                return Err(RtError::last_os("dup(eventfd)"));
            }
            Some(sys::Fd(r))
        }
        _ => None,
    };
    std::thread::Builder::new()
        .name(format!("irqlab-gen-{}", p.name))
        .spawn(move || {
            if let Some(c) = cpu {
                let _ = sys::pin(0, c);
            }
            // SAFETY: prctl on the calling thread.
            unsafe {
                libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
            }
            let tx = match to {
                Some(_) => UdpSocket::bind("127.0.0.1:0").ok(),
                None => None,
            };
            let buf = vec![0u8; bytes];
            if let (Some(reply), Some(tx), Some(to)) = (&reply, &tx, to) {
                let send = || {
                    if tx.send_to(&buf, to).is_ok() {
                        sent.fetch_add(1, Ordering::Relaxed);
                    }
                };
                ping_flood(&ping, reply.0, t0, &stop, send);
                return;
            }
            for t in times {
                if !sleep_abs(t0 + t, &stop) {
                    break;
                }
                let ok = match (&tx, to, &efd) {
                    (Some(tx), Some(to), _) => tx.send_to(&buf, to).is_ok(),
                    (_, _, Some(e)) => super::sources::put(e.0),
                    _ => false,
                };
                if ok {
                    sent.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
        .map_err(|e| RtError::from_io("spawn generator", e))
}

/// A closed loop (`ping -f`, irqlab-sim `closed_loop_reply`): send at the
/// start, then `rtt` after each reply, or `interval` after the last send
/// when no reply came, until `stop`.
fn ping_flood(a: &Arrival, reply: RawFd, t0: Nanos, stop: &AtomicBool, send: impl Fn()) {
    let Arrival::PingFlood {
        rtt,
        interval,
        start,
        stop: end,
    } = a
    else {
        return;
    };
    let mut next = *start;
    while end.is_none_or(|e| next < e) && sleep_abs(t0 + next, stop) {
        send();
        let fallback = next + *interval;
        next = loop {
            let left = (t0 + fallback).saturating_sub(sys::now());
            if left.is_zero() || stop.load(Ordering::Relaxed) {
                break fallback;
            }
            if sys::wait_readable(reply, Some(left.min(Nanos::from_ms(20)))) {
                sys::eventfd_drain(reply);
                break (sys::now().saturating_sub(t0) + *rtt).min(fallback);
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first(a: Arrival, n: usize) -> Vec<u64> {
        Times::new(a, 7, 0).take(n).map(|t| t.0).collect()
    }

    #[test]
    fn arrival_times_by_hand() {
        let p = Arrival::Periodic {
            interval: Nanos(10),
            start: Nanos(5),
            stop: Some(Nanos(40)),
        };
        assert_eq!(first(p, 10), vec![5, 15, 25, 35]);
        let b = Arrival::Burst {
            count: 3,
            gap: Nanos(1),
            every: Nanos(100),
            start: Nanos(0),
            stop: None,
        };
        assert_eq!(first(b, 7), vec![0, 1, 2, 100, 101, 102, 200]);
        let s = Arrival::Sporadic {
            min: Nanos(100),
            jitter: Nanos(10),
            start: Nanos(0),
        };
        let t = first(s, 50);
        assert!(t.windows(2).all(|w| (100..=110).contains(&(w[1] - w[0]))));
        // Poisson: the same seed gives the same times; the mean gap is
        // about 1/rate (1000 gaps at 1e6/s: mean 1 us within 10 %).
        let p = Arrival::Poisson {
            rate_per_s: 1e6,
            start: Nanos(0),
            stop: None,
        };
        let tr = Arrival::Trace {
            times: vec![Nanos(3), Nanos(7), Nanos(20)],
        };
        assert_eq!(first(tr, 10), vec![3, 7, 20]);
        let (a, b) = (first(p.clone(), 1001), first(p, 1001));
        assert_eq!(a, b);
        let mean = (a[1000] - a[0]) as f64 / 1000.0;
        assert!((900.0..1100.0).contains(&mean), "{mean}");
    }
}
