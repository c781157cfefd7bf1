//! Kernel upcalls: a handler for one UDP socket that runs in the kernel's
//! network bottom half (the NET_RX softirq), as an eBPF program, with a
//! budget the kernel side enforces (DESIGN §7; UPCALL §3.2's
//! `register_upcall_event(fd, module)` on a stock kernel, bounded like a
//! VINT/QUEST-VCPU budgeted server).
//!
//! What it is: [`KernelUpcall::attach`] loads `bpf/kupcall.bpf.c` (built by
//! `build.rs` with clang for the BPF target), configures it for the
//! socket's local address and port, a built-in [`KernelHandler`] and an
//! optional [`KernelBudget`], and attaches it at a [`Hook`] -- tc ingress by
//! default (docs/runtime.md, "Kernel upcalls", gives the measurement behind
//! the choice). Under the budget a datagram is handled in softirq and never
//! reaches the socket; past it the datagram is passed up unchanged and the
//! fd's normal path (its I/O class) takes it. Counts add up exactly:
//! `seen = handled + deferred + filtered + orphaned` (per-CPU counters in a
//! BPF map, no lock needed: NET_RX does not nest on a CPU).
//!
//! Design principles:
//! * Loading goes through `aya` (pure Rust, no C library to link: it built
//!   cleanly here, whereas `libbpf-rs` needs `libbpf-sys`, i.e. a vendored C
//!   build of libbpf, libelf and zlib or a system libbpf newer than
//!   Debian 12's 1.1).
//! * Nothing outlives its owner: tc and XDP are attached through BPF links
//!   (TCX, kernel >= 6.6), which the kernel removes when their last fd
//!   closes -- at `detach`, on drop, and when the process dies, even by
//!   SIGKILL. The upcall owns the socket, so the fd cannot close before the
//!   program is detached; the program also checks that a socket is still
//!   bound (bpf_sk_lookup_udp) and handles nothing once it is gone.
//! * Failures say why: the verifier's log for a rejected program, the
//!   kernel's errno for missing privileges or support
//!   ([`RtError::is_unavailable`] is true for those, so tests skip).

use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};

use aya::maps::{Array, PerCpuArray};
use aya::programs::{
    tc::TcAttachOptions, LinkOrder, SchedClassifier, SocketFilter, TcAttachType, Xdp, XdpMode,
};
use aya::{Ebpf, EbpfLoader};
use irqlab_core::Nanos;
use serde::Serialize;

use crate::error::RtError;

mod runtime;
pub use runtime::KernelUpcallReport;
pub(crate) use runtime::{detach_all, start_all, Registered};

/// The BPF object built by build.rs (empty when clang was missing).
static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kupcall.bpf.o"));
const BUILD_NOTE: &str = env!("IRQLAB_KUPCALL_NOTE");

/// Kernel names of the three programs (as `bpftool prog` lists them).
pub const PROGRAM_NAMES: [&str; 3] = ["kupcall_tc", "kupcall_xdp", "kupcall_sock"];

/// Where in the receive path the handler runs. All three run in the
/// NET_RX softirq of the CPU that processes the packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Hook {
    /// tc ingress on the device carrying the socket's traffic (TCX link):
    /// before the IP layer; can consume or reply. The default.
    #[default]
    Tc,
    /// Generic (skb-mode) XDP on that device: earlier still; can consume
    /// or reply (XDP_TX).
    Xdp,
    /// A socket filter on the fd itself: after the IP and UDP layers; can
    /// consume, cannot reply.
    SocketFilter,
}

/// A built-in handler.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelHandler {
    /// Count the datagram and consume it.
    #[default]
    Count,
    /// Send the datagram back to its sender (addresses and ports swapped),
    /// from the softirq (tc: bpf_redirect to the device's egress; XDP:
    /// XDP_TX). Not available as a socket filter.
    Echo,
}

/// The kernel-side budget: per CPU, per period (boundaries at multiples of
/// `period` of CLOCK_MONOTONIC), at most `events` handled events and
/// `time` of handler time (whichever is set; the time is checked before
/// each event, so a period may overrun by less than one handler).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct KernelBudget {
    pub period: Nanos,
    pub time: Option<Nanos>,
    pub events: Option<u64>,
}

/// How a kernel upcall is set up.
#[derive(Clone, Debug, Default)]
pub struct KernelUpcallSpec {
    pub hook: Hook,
    pub handler: KernelHandler,
    pub budget: Option<KernelBudget>,
    /// Extra busy time per handled event (a costlier handler; the flood
    /// experiments use it).
    pub cost: Nanos,
    /// Payload lengths handled in the kernel; others are passed to the fd
    /// ("filter and forward to the class"). Default: all.
    pub min_len: u32,
    pub max_len: Option<u32>,
    /// Payload offset of a little-endian u64 CLOCK_MONOTONIC send time
    /// stamp, recorded with each handled event's sample.
    pub send_time_offset: Option<u32>,
    /// `(offset, value)`: datagrams whose payload byte at `offset` equals
    /// `value` are forwarded to the fd, never handled in the kernel (control
    /// messages of a protocol; counted as `filtered`).
    pub forward_byte: Option<(u32, u8)>,
    /// The device to attach to (tc, XDP); default: the one holding the
    /// socket's local address.
    pub interface: Option<String>,
    /// In a runtime: when the kernel refuses the upcall for want of
    /// privilege or support, leave every event to the fd's normal path
    /// (its I/O class) with a warning, instead of failing. Off by default.
    pub fallback: bool,
    /// The device's top-half cost for each event that reaches the fd
    /// (`BindOptions::top_half`); the kernel handles the others in its own
    /// softirq.
    pub top_half: Nanos,
}

/// Counters summed over CPUs: `seen = handled + deferred + filtered +
/// orphaned`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct KernelStats {
    pub seen: u64,
    pub handled: u64,
    pub deferred: u64,
    pub filtered: u64,
    pub orphaned: u64,
    /// Echo replies the kernel refused to redirect (those were passed up).
    pub errors: u64,
    /// Handler time of the handled events (bpf_ktime_get_ns, ns).
    pub busy_ns: u64,
    /// Periods (per CPU) in which the budget ran out.
    pub exhausted_periods: u64,
}

/// One handled event, CLOCK_MONOTONIC ns.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct KernelSample {
    pub start: u64,
    pub end: u64,
    /// The sender's time stamp (0 without `send_time_offset`).
    pub t_send: u64,
    /// The kernel's receive time stamp (skb->tstamp, CLOCK_REALTIME ns; tc
    /// only, 0 unless some socket asked for time stamps).
    pub rx_tstamp: u64,
    /// The payload's first 8 bytes (little-endian), 0 if shorter.
    pub head: u64,
    pub cpu: u32,
}

#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
struct RawStats {
    seen: u64,
    handled: u64,
    deferred: u64,
    filtered: u64,
    orphaned: u64,
    errors: u64,
    busy_ns: u64,
    periods: u64,
    period_start: u64,
    used_ns: u64,
    used_events: u64,
    exhausted: u64,
}
// SAFETY: plain old data, laid out like `struct kup_stats`.
unsafe impl aya::Pod for RawStats {}

#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
struct RawSample {
    start: u64,
    end: u64,
    t_send: u64,
    rx_tstamp: u64,
    head: u64,
    cpu: u64,
}
// SAFETY: plain old data, laid out like `struct kup_sample`.
unsafe impl aya::Pod for RawSample {}

/// A kernel upcall attached to a socket it owns.
pub struct KernelUpcall {
    ebpf: Option<Ebpf>,
    socket: Option<OwnedFd>,
    hook: Hook,
    interface: Option<String>,
    program_id: Option<u32>,
}

/// The program's section name in the object.
fn program_name(hook: Hook) -> &'static str {
    match hook {
        Hook::Tc => PROGRAM_NAMES[0],
        Hook::Xdp => PROGRAM_NAMES[1],
        Hook::SocketFilter => PROGRAM_NAMES[2],
    }
}

/// Classify an aya error: the verifier's log for a rejected program, the
/// kernel's errno for missing privilege or support.
fn bpf_error(what: &str, e: &(dyn std::error::Error + 'static)) -> RtError {
    if let Some(aya::programs::ProgramError::LoadError { io_error, .. }) =
        e.downcast_ref::<aya::programs::ProgramError>()
    {
        if io_error.raw_os_error() == Some(libc::EPERM) {
            return RtError::from_io(what, std::io::Error::from_raw_os_error(libc::EPERM));
        }
        return RtError::Bpf {
            what: what.to_string(),
            reason: e.to_string(),
        };
    }
    // Find the kernel's answer in the chain.
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cur {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            if let Some(code) = io.raw_os_error() {
                return RtError::from_io(
                    format!("{what}: {e}"),
                    std::io::Error::from_raw_os_error(code),
                );
            }
        }
        cur = c.source();
    }
    RtError::Bpf {
        what: what.to_string(),
        reason: e.to_string(),
    }
}

/// The socket's local IPv4 address and port (network order).
fn local_v4(fd: RawFd) -> Result<(u32, u16), RtError> {
    // SAFETY: getsockname into a zeroed sockaddr_storage of the given size.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    if unsafe { libc::getsockname(fd, &mut ss as *mut _ as *mut libc::sockaddr, &mut len) } != 0 {
        return Err(RtError::last_os(format!("getsockname(fd {fd})")));
    }
    let mut ty: libc::c_int = 0;
    let mut tl = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: SO_TYPE into an int.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TYPE,
            &mut ty as *mut _ as *mut libc::c_void,
            &mut tl,
        )
    };
    if r != 0 || ty != libc::SOCK_DGRAM || ss.ss_family != libc::AF_INET as libc::sa_family_t {
        return Err(RtError::config(
            "kernel upcall fd",
            fd,
            "must be a bound IPv4 UDP socket",
        ));
    }
    // SAFETY: the family is AF_INET, so the storage holds a sockaddr_in.
    let sin = unsafe { *(&ss as *const _ as *const libc::sockaddr_in) };
    if sin.sin_port == 0 {
        return Err(RtError::config(
            "kernel upcall fd",
            fd,
            "must be bound to a port",
        ));
    }
    Ok((sin.sin_addr.s_addr, sin.sin_port))
}

/// The device holding IPv4 address `addr` (network order).
fn interface_of(addr: u32) -> Result<String, RtError> {
    if u32::from_be(addr) >> 24 == 127 {
        return Ok("lo".into());
    }
    let mut ifa: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs allocates a list freed below.
    if unsafe { libc::getifaddrs(&mut ifa) } != 0 {
        return Err(RtError::last_os("getifaddrs"));
    }
    let mut found = None;
    let mut p = ifa;
    while !p.is_null() {
        // SAFETY: p walks the list getifaddrs returned.
        let i = unsafe { &*p };
        if !i.ifa_addr.is_null()
            && unsafe { (*i.ifa_addr).sa_family } == libc::AF_INET as libc::sa_family_t
        {
            // SAFETY: AF_INET address.
            let sin = unsafe { *(i.ifa_addr as *const libc::sockaddr_in) };
            if sin.sin_addr.s_addr == addr {
                // SAFETY: ifa_name is a C string.
                let n = unsafe { std::ffi::CStr::from_ptr(i.ifa_name) };
                found = Some(n.to_string_lossy().into_owned());
                break;
            }
        }
        p = i.ifa_next;
    }
    // SAFETY: the list from getifaddrs.
    unsafe { libc::freeifaddrs(ifa) };
    found.ok_or_else(|| {
        RtError::config(
            "kernel upcall interface",
            std::net::Ipv4Addr::from(u32::from_be(addr)),
            "no device holds the socket's address (bound to 0.0.0.0?): give `interface`",
        )
    })
}

fn if_index(name: &str) -> Result<u32, RtError> {
    let c = std::ffi::CString::new(name)
        .map_err(|_| RtError::config("kernel upcall interface", name, "no NUL bytes"))?;
    // SAFETY: a valid C string.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if i == 0 {
        return Err(RtError::config(
            "kernel upcall interface",
            name,
            "no such network device",
        ));
    }
    Ok(i)
}

impl KernelUpcall {
    /// Load, verify and attach a kernel upcall for `socket` (a bound IPv4
    /// UDP socket, which the upcall owns from now on).
    pub fn attach(socket: OwnedFd, spec: &KernelUpcallSpec) -> Result<KernelUpcall, RtError> {
        let mut ku = KernelUpcall::load(socket, spec)?;
        ku.start()?;
        Ok(ku)
    }

    /// Load and verify, without attaching (`start` attaches).
    pub fn load(socket: OwnedFd, spec: &KernelUpcallSpec) -> Result<KernelUpcall, RtError> {
        if OBJECT.is_empty() {
            return Err(RtError::Unsupported {
                what: format!("kernel upcalls were not built ({BUILD_NOTE})"),
                source: std::io::Error::from_raw_os_error(libc::ENOSYS),
            });
        }
        let (addr, port) = local_v4(socket.as_raw_fd())?;
        if spec.hook == Hook::SocketFilter && spec.handler == KernelHandler::Echo {
            return Err(RtError::config(
                "kernel upcall handler",
                "echo",
                "a socket filter cannot send a reply: use hook tc or xdp",
            ));
        }
        let interface = match (spec.hook, &spec.interface) {
            (Hook::SocketFilter, _) => None,
            (_, Some(i)) => Some(i.clone()),
            (_, None) => Some(interface_of(addr)?),
        };
        let ifindex = match &interface {
            Some(i) => if_index(i)?,
            None => 0,
        };
        let max_len = spec.max_len.unwrap_or(65535);
        if spec.min_len > max_len {
            return Err(RtError::config(
                "kernel upcall min_len",
                spec.min_len,
                format!("must not exceed max_len = {max_len}"),
            ));
        }
        let (period, budget_ns, budget_events) = match spec.budget {
            None => (0, 0, 0),
            Some(b) => {
                if b.period.is_zero() {
                    return Err(RtError::config(
                        "kernel upcall budget.period",
                        b.period,
                        "must be > 0",
                    ));
                }
                if b.time.is_none() && b.events.is_none() {
                    return Err(RtError::config(
                        "kernel upcall budget",
                        "(none)",
                        "give a time budget, an event budget or both",
                    ));
                }
                if let Some(t) = b.time {
                    if t.is_zero() || t > b.period {
                        return Err(RtError::config(
                            "kernel upcall budget.time",
                            t,
                            format!("must be in (0, period = {}]", b.period),
                        ));
                    }
                }
                if b.events == Some(0) {
                    return Err(RtError::config(
                        "kernel upcall budget.events",
                        0,
                        "must be > 0",
                    ));
                }
                (b.period.0, b.time.map_or(0, |t| t.0), b.events.unwrap_or(0))
            }
        };
        let tsend: i32 = match spec.send_time_offset {
            None => -1,
            Some(o) if o <= 1400 => o as i32,
            Some(o) => {
                return Err(RtError::config(
                    "kernel upcall send_time_offset",
                    o,
                    "at most 1400 bytes",
                ))
            }
        };
        let (fwd_off, fwd_val): (i32, u32) = match spec.forward_byte {
            None => (-1, 0),
            Some((o, v)) if o <= 1400 => (o as i32, u32::from(v)),
            Some((o, _)) => {
                return Err(RtError::config(
                    "kernel upcall forward_byte",
                    o,
                    "offset at most 1400 bytes",
                ))
            }
        };
        let handler: u32 = match spec.handler {
            KernelHandler::Count => 0,
            KernelHandler::Echo => 1,
        };
        let port = u32::from(port);
        let cost = spec.cost.0;
        let mut loader = EbpfLoader::new();
        loader
            .override_global("cfg_addr", &addr, true)
            .override_global("cfg_port", &port, true)
            .override_global("cfg_handler", &handler, true)
            .override_global("cfg_ifindex", &ifindex, true)
            .override_global("cfg_min_len", &spec.min_len, true)
            .override_global("cfg_max_len", &max_len, true)
            .override_global("cfg_cost_ns", &cost, true)
            .override_global("cfg_period_ns", &period, true)
            .override_global("cfg_budget_ns", &budget_ns, true)
            .override_global("cfg_budget_events", &budget_events, true)
            .override_global("cfg_tsend_off", &tsend, true)
            .override_global("cfg_fwd_off", &fwd_off, true)
            .override_global("cfg_fwd_val", &fwd_val, true);
        let mut ebpf = loader
            .load(OBJECT)
            .map_err(|e| bpf_error("load the kernel-upcall object", &e))?;
        let name = program_name(spec.hook);
        let what = format!("load BPF program {name}");
        let prog = ebpf
            .program_mut(name)
            .ok_or_else(|| RtError::State(format!("{name} missing from the BPF object")))?;
        let loaded = match spec.hook {
            Hook::Tc => {
                let p: &mut SchedClassifier = prog.try_into().map_err(|e| bpf_error(&what, &e))?;
                p.load().map_err(|e| bpf_error(&what, &e))?;
                p.info().ok().map(|i| i.id())
            }
            Hook::Xdp => {
                let p: &mut Xdp = prog.try_into().map_err(|e| bpf_error(&what, &e))?;
                p.load().map_err(|e| bpf_error(&what, &e))?;
                p.info().ok().map(|i| i.id())
            }
            Hook::SocketFilter => {
                let p: &mut SocketFilter = prog.try_into().map_err(|e| bpf_error(&what, &e))?;
                p.load().map_err(|e| bpf_error(&what, &e))?;
                p.info().ok().map(|i| i.id())
            }
        };
        Ok(KernelUpcall {
            ebpf: Some(ebpf),
            socket: Some(socket),
            hook: spec.hook,
            interface,
            program_id: loaded,
        })
    }

    /// Attach the loaded program (once).
    pub fn start(&mut self) -> Result<(), RtError> {
        let (Some(ebpf), Some(sock)) = (self.ebpf.as_mut(), self.socket.as_ref()) else {
            return Err(RtError::State("kernel upcall already detached".into()));
        };
        let name = program_name(self.hook);
        let what = format!("attach BPF program {name}");
        let prog = ebpf
            .program_mut(name)
            .ok_or_else(|| RtError::State(format!("{name} missing from the BPF object")))?;
        let iface = self.interface.as_deref().unwrap_or("lo");
        match self.hook {
            Hook::Tc => {
                let p: &mut SchedClassifier = prog.try_into().map_err(|e| bpf_error(&what, &e))?;
                p.attach_with_options(
                    iface,
                    TcAttachType::Ingress,
                    TcAttachOptions::TcxOrder(LinkOrder::default()),
                )
                .map_err(|e| bpf_error(&format!("{what} (tc ingress, TCX) on {iface}"), &e))?;
            }
            Hook::Xdp => {
                let p: &mut Xdp = prog.try_into().map_err(|e| bpf_error(&what, &e))?;
                p.attach(iface, XdpMode::Skb)
                    .map_err(|e| bpf_error(&format!("{what} (generic XDP) on {iface}"), &e))?;
            }
            Hook::SocketFilter => {
                let p: &mut SocketFilter = prog.try_into().map_err(|e| bpf_error(&what, &e))?;
                p.attach(sock.as_fd())
                    .map_err(|e| bpf_error(&format!("{what} (SO_ATTACH_BPF)"), &e))?;
            }
        }
        Ok(())
    }

    /// The socket's descriptor (for the fd's normal path: bind it to an I/O
    /// class; do not close it: the upcall owns it).
    pub fn fd(&self) -> RawFd {
        self.socket.as_ref().map_or(-1, |s| s.as_raw_fd())
    }

    pub fn hook(&self) -> Hook {
        self.hook
    }

    /// The kernel's id of the loaded program (`bpftool prog show id N`).
    pub fn program_id(&self) -> Option<u32> {
        self.program_id
    }

    /// Counters summed over CPUs.
    pub fn stats(&self) -> Result<KernelStats, RtError> {
        let ebpf = self
            .ebpf
            .as_ref()
            .ok_or_else(|| RtError::State("kernel upcall detached".into()))?;
        let map = ebpf
            .map("stats")
            .ok_or_else(|| RtError::State("stats map missing".into()))?;
        let arr: PerCpuArray<_, RawStats> =
            PerCpuArray::try_from(map).map_err(|e| bpf_error("stats map", &e))?;
        let per_cpu = arr.get(&0, 0).map_err(|e| bpf_error("read stats", &e))?;
        let mut s = KernelStats::default();
        for r in per_cpu.iter() {
            s.seen += r.seen;
            s.handled += r.handled;
            s.deferred += r.deferred;
            s.filtered += r.filtered;
            s.orphaned += r.orphaned;
            s.errors += r.errors;
            s.busy_ns += r.busy_ns;
            s.exhausted_periods += r.periods;
        }
        Ok(s)
    }

    /// The recorded samples of handled events (the last 65,536), oldest
    /// first.
    pub fn samples(&self) -> Result<Vec<KernelSample>, RtError> {
        let ebpf = self
            .ebpf
            .as_ref()
            .ok_or_else(|| RtError::State("kernel upcall detached".into()))?;
        let next = ebpf
            .map("sample_next")
            .ok_or_else(|| RtError::State("sample_next map missing".into()))?;
        let next: Array<_, u64> = Array::try_from(next).map_err(|e| bpf_error("samples", &e))?;
        let n = next.get(&0, 0).map_err(|e| bpf_error("samples", &e))?;
        let map = ebpf
            .map("samples")
            .ok_or_else(|| RtError::State("samples map missing".into()))?;
        let arr: Array<_, RawSample> =
            Array::try_from(map).map_err(|e| bpf_error("samples", &e))?;
        let cap = u64::from(arr.len());
        (n.saturating_sub(cap)..n)
            .map(|i| {
                arr.get(&((i % cap) as u32), 0)
                    .map(|r| KernelSample {
                        start: r.start,
                        end: r.end,
                        t_send: r.t_send,
                        rx_tstamp: r.rx_tstamp,
                        head: r.head,
                        cpu: r.cpu as u32,
                    })
                    .map_err(|e| bpf_error("samples", &e))
            })
            .collect()
    }

    /// Detach and unload the program (its counters are returned), keeping
    /// the socket open.
    pub fn detach(&mut self) -> Result<KernelStats, RtError> {
        let stats = self.stats();
        if let (Hook::SocketFilter, Some(s)) = (self.hook, self.socket.as_ref()) {
            // A socket filter lives as long as the socket: take it off (an
            // error leaves it to go with the socket, as it would anyway).
            let _ = SocketFilter::detach(s.as_fd());
        }
        // Dropping the object closes the TCX/XDP link fds: the kernel
        // detaches and unloads the program.
        self.ebpf = None;
        stats
    }

    /// Detach, then close the socket.
    pub fn close(mut self) -> Result<KernelStats, RtError> {
        let s = self.detach();
        self.socket = None;
        s
    }
}

impl Drop for KernelUpcall {
    fn drop(&mut self) {
        let _ = self.detach();
    }
}

/// Ids of loaded kernel-upcall programs (any process), from the kernel's
/// list: empty once every upcall is detached.
pub fn loaded_program_ids() -> Result<Vec<(u32, String)>, RtError> {
    let mut out = Vec::new();
    for p in aya::programs::loaded_programs() {
        let p = p.map_err(|e| bpf_error("list loaded BPF programs", &e))?;
        if let Some(n) = p.name_as_str() {
            if PROGRAM_NAMES.contains(&n) {
                out.push((p.id(), n.to_string()));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aya::maps::MapError;
    use aya::programs::ProgramError;

    fn os(code: i32) -> std::io::Error {
        std::io::Error::from_raw_os_error(code)
    }

    #[test]
    fn a_verifier_rejection_carries_the_log_and_is_not_a_skip() {
        let e = ProgramError::LoadError {
            io_error: os(libc::EACCES),
            verifier_log: aya_obj::VerifierLog::new(
                "114: (79) r2 = *(u64 *)(r7 +152)\ninvalid bpf_context access off=152 size=8"
                    .into(),
            ),
        };
        let r = bpf_error("load BPF program kupcall_sock", &e);
        assert!(matches!(r, RtError::Bpf { .. }), "{r:?}");
        let msg = r.to_string();
        assert!(msg.contains("kupcall_sock") && msg.contains("invalid bpf_context access off=152"));
        assert!(!r.is_unavailable());
    }

    #[test]
    fn missing_privilege_or_support_is_unavailable_with_the_kernels_reason() {
        let e = ProgramError::LoadError {
            io_error: os(libc::EPERM),
            verifier_log: aya_obj::VerifierLog::new(String::new()),
        };
        assert!(matches!(
            bpf_error("load", &e),
            RtError::NotPermitted { .. }
        ));
        // A map the kernel will not create, deep in the loader's error chain.
        let e = aya::EbpfError::MapError(MapError::CreateError {
            name: "stats".into(),
            io_error: os(libc::EPERM),
        });
        let r = bpf_error("load the kernel-upcall object", &e);
        assert!(r.is_unavailable(), "{r:?}");
        assert!(r.to_string().contains("stats"), "{r}");
        let e = aya::EbpfError::MapError(MapError::CreateError {
            name: "samples".into(),
            io_error: os(libc::ENOSYS),
        });
        assert!(matches!(bpf_error("load", &e), RtError::Unsupported { .. }));
        // Anything else is neither a skip nor a verifier log.
        let e = aya::EbpfError::MapError(MapError::CreateError {
            name: "stats".into(),
            io_error: os(libc::EINVAL),
        });
        assert!(matches!(bpf_error("load", &e), RtError::Sys { .. }));
    }
}
