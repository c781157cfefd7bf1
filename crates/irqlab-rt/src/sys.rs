//! Thin, checked wrappers of the Linux calls the runtime needs: clocks,
//! per-thread CPU clocks, SCHED_FIFO, affinity, futexes, eventfd, epoll and
//! signals.
//!
//! Design principles: one `unsafe` block per call, each with the invariant
//! it relies on; every failure becomes an [`RtError`] naming the call and
//! its argument, classified as not-permitted / unsupported / other so tests
//! can skip with the kernel's reason.

use std::sync::atomic::{AtomicU32, Ordering};

use irqlab_core::Nanos;

use crate::error::RtError;

/// A kernel thread id.
pub type Tid = libc::pid_t;

fn ts_to_nanos(ts: libc::timespec) -> Nanos {
    Nanos(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

fn nanos_to_ts(t: Nanos) -> libc::timespec {
    libc::timespec {
        tv_sec: (t.0 / 1_000_000_000) as libc::time_t,
        tv_nsec: (t.0 % 1_000_000_000) as libc::c_long,
    }
}

/// Read a clock.
pub fn clock(id: libc::clockid_t) -> Result<Nanos, RtError> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    if unsafe { libc::clock_gettime(id, &mut ts) } != 0 {
        return Err(RtError::last_os(format!("clock_gettime({id})")));
    }
    Ok(ts_to_nanos(ts))
}

/// `CLOCK_MONOTONIC` now: the runtime's time base (the core's `now`).
pub fn now() -> Nanos {
    // CLOCK_MONOTONIC cannot fail on Linux; 0 would only be seen if it did.
    clock(libc::CLOCK_MONOTONIC).unwrap_or(Nanos::ZERO)
}

/// CPU time consumed by the calling thread.
pub fn own_cpu_time() -> Nanos {
    clock(libc::CLOCK_THREAD_CPUTIME_ID).unwrap_or(Nanos::ZERO)
}

/// Spend `work` of this thread's CPU time, spinning on its CPU clock (it
/// spends `work` plus up to one clock read past it; see
/// `io::MIN_TOP_HALF`).
pub fn spin_cpu(work: Nanos) {
    if work.is_zero() {
        return;
    }
    let end = own_cpu_time() + work;
    while own_cpu_time() < end {
        std::hint::spin_loop();
    }
}

/// The CPU-time clock of thread `tid` (Linux `MAKE_THREAD_CPUCLOCK(tid,
/// CPUCLOCK_SCHED)`), readable from any thread of the process.
pub fn thread_cpu_clock(tid: Tid) -> libc::clockid_t {
    ((!tid) << 3) | 6
}

/// The calling thread's kernel id.
pub fn gettid() -> Tid {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::gettid() }
}

/// Scheduling policy and priority of a thread, to restore it later.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SchedPolicy {
    pub policy: libc::c_int,
    pub priority: libc::c_int,
}

impl SchedPolicy {
    pub fn name(&self) -> &'static str {
        match self.policy {
            libc::SCHED_FIFO => "SCHED_FIFO",
            libc::SCHED_RR => "SCHED_RR",
            libc::SCHED_OTHER => "SCHED_OTHER",
            libc::SCHED_BATCH => "SCHED_BATCH",
            libc::SCHED_IDLE => "SCHED_IDLE",
            6 => "SCHED_DEADLINE",
            _ => "unknown",
        }
    }
}

/// The policy of thread `tid` (0: the caller).
pub fn get_policy(tid: Tid) -> Result<SchedPolicy, RtError> {
    // SAFETY: plain syscalls on a thread id; `p` is valid and writable.
    let policy = unsafe { libc::sched_getscheduler(tid) };
    if policy < 0 {
        return Err(RtError::last_os(format!("sched_getscheduler(tid {tid})")));
    }
    let mut p = libc::sched_param { sched_priority: 0 };
    if unsafe { libc::sched_getparam(tid, &mut p) } != 0 {
        return Err(RtError::last_os(format!("sched_getparam(tid {tid})")));
    }
    Ok(SchedPolicy {
        policy: policy & !libc::SCHED_RESET_ON_FORK,
        priority: p.sched_priority,
    })
}

/// Set the policy of thread `tid` (0: the caller).
pub fn set_policy(tid: Tid, p: SchedPolicy) -> Result<(), RtError> {
    let param = libc::sched_param {
        sched_priority: p.priority,
    };
    // SAFETY: `param` is a valid sched_param for the call's duration.
    if unsafe { libc::sched_setscheduler(tid, p.policy, &param) } != 0 {
        return Err(RtError::last_os(format!(
            "sched_setscheduler(tid {tid}, {}, {})",
            p.name(),
            p.priority
        )));
    }
    Ok(())
}

/// SCHED_FIFO at `priority` (1..=99) for thread `tid`.
pub fn set_fifo(tid: Tid, priority: i32) -> Result<(), RtError> {
    set_policy(
        tid,
        SchedPolicy {
            policy: libc::SCHED_FIFO,
            priority,
        },
    )
}

/// Pin thread `tid` (0: the caller) to one CPU.
pub fn pin(tid: Tid, cpu: usize) -> Result<(), RtError> {
    // SAFETY: cpu_set_t is plain data; CPU_SET bounds-checks `cpu` against
    // the set's size (it panics beyond CPU_SETSIZE, checked first).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(RtError::config("cpu", cpu, "must be below CPU_SETSIZE"));
        }
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(RtError::last_os(format!(
                "sched_setaffinity(tid {tid}, cpu {cpu})"
            )));
        }
    }
    Ok(())
}

/// The calling thread's CPU affinity (to restore later).
pub fn affinity() -> Option<libc::cpu_set_t> {
    // SAFETY: `set` is plain data written by the kernel.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        (libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0)
            .then_some(set)
    }
}

/// Restore an affinity read by [`affinity`] (best effort).
pub fn set_affinity(tid: Tid, set: &libc::cpu_set_t) {
    // SAFETY: `set` is a valid cpu_set_t.
    unsafe {
        libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), set);
    }
}

/// CPUs this process may run on.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: `set` is plain data written by the kernel.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return vec![0];
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// Can this process use SCHED_FIFO? Tries it on the calling thread and
/// restores the old policy. `Err` carries the kernel's reason.
pub fn probe_fifo() -> Result<(), RtError> {
    let old = get_policy(0)?;
    set_fifo(0, 1)?;
    set_policy(0, old)
}

/// Wait while `*word == expected` (FUTEX_WAIT, private). Returns on wake,
/// on a value change, on a signal or after `timeout` (relative).
pub fn futex_wait(word: &AtomicU32, expected: u32, timeout: Option<Nanos>) {
    let ts = timeout.map(nanos_to_ts);
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `word` is a live, aligned u32; `tsp` is null or valid. The
    // call is async-signal-safe (the park signal handler uses it).
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            tsp,
        );
    }
}

/// Wake every waiter on `word`.
pub fn futex_wake(word: &AtomicU32) {
    // SAFETY: `word` is a live, aligned u32.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            i32::MAX,
        );
    }
}

/// A binary "open/closed" gate threads wait on (futex based).
#[derive(Debug, Default)]
pub struct Gate(AtomicU32);

impl Gate {
    pub fn close(&self) {
        self.0.store(0, Ordering::SeqCst);
    }
    pub fn open(&self) {
        self.0.store(1, Ordering::SeqCst);
        futex_wake(&self.0);
    }
    pub fn is_open(&self) -> bool {
        self.0.load(Ordering::SeqCst) != 0
    }
    /// Wait until open.
    pub fn wait(&self) {
        while self.0.load(Ordering::SeqCst) == 0 {
            futex_wait(&self.0, 0, None);
        }
    }
}

/// An owned file descriptor closed on drop.
#[derive(Debug)]
pub struct Fd(pub libc::c_int);

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: the descriptor is owned by this value.
        unsafe {
            libc::close(self.0);
        }
    }
}

/// A non-blocking eventfd: the supervisor's doorbell and a test event source.
pub fn eventfd() -> Result<Fd, RtError> {
    // SAFETY: plain syscall.
    let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(RtError::last_os("eventfd"));
    }
    Ok(Fd(fd))
}

/// A non-blocking, unarmed CLOCK_MONOTONIC timerfd.
pub fn timerfd() -> Result<Fd, RtError> {
    // SAFETY: plain syscall; the descriptor is owned by the result.
    let fd = unsafe {
        libc::timerfd_create(
            libc::CLOCK_MONOTONIC,
            libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(RtError::last_os("timerfd_create"));
    }
    Ok(Fd(fd))
}

/// Add 1 to an eventfd.
pub fn eventfd_signal(fd: libc::c_int) {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from a live u64. A full counter (EAGAIN) is
    // fine: the reader is already due to wake.
    unsafe {
        libc::write(fd, (&one as *const u64).cast(), 8);
    }
}

/// Drain an eventfd; returns its count (0 when empty).
pub fn eventfd_drain(fd: libc::c_int) -> u64 {
    let mut v: u64 = 0;
    // SAFETY: reads 8 bytes into a live u64.
    let n = unsafe { libc::read(fd, (&mut v as *mut u64).cast(), 8) };
    if n == 8 {
        v
    } else {
        0
    }
}

/// Wait until `fd` is readable or `timeout` (relative; `None`: forever)
/// passes. Interrupted waits return early. Returns whether `fd` is
/// readable.
pub fn wait_readable(fd: libc::c_int, timeout: Option<Nanos>) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = timeout.map(nanos_to_ts);
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `pfd` and `tsp` are valid for the call.
    let n = unsafe { libc::ppoll(&mut pfd, 1, tsp, std::ptr::null()) };
    n > 0
}

/// Send signal `sig` to thread `tid` of this process.
pub fn tgkill(tid: Tid, sig: libc::c_int) -> Result<(), RtError> {
    // SAFETY: plain syscall on ids.
    let r = unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, sig) };
    if r != 0 {
        return Err(RtError::last_os(format!("tgkill(tid {tid}, signal {sig})")));
    }
    Ok(())
}

/// The RT throttling settings (`sched_rt_runtime_us`, `sched_rt_period_us`).
/// A runtime below the period lets the kernel stall SCHED_FIFO threads
/// (about 50 ms per second at the default 950000/1000000).
pub fn rt_throttling() -> Option<(i64, i64)> {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok())
    };
    Some((
        read("/proc/sys/kernel/sched_rt_runtime_us")?,
        read("/proc/sys/kernel/sched_rt_period_us")?,
    ))
}

/// The fair server of `cpu` (`runtime`, `period` in ns), from debugfs
/// (`/sys/kernel/debug/sched/fair_server/cpuN/`) when it is mounted and
/// readable; `None` otherwise. On kernels with it (6.12+), starved
/// SCHED_OTHER tasks run above SCHED_FIFO for `runtime` every `period`.
pub fn fair_server(cpu: usize) -> Option<(i64, i64)> {
    let dir = format!("/sys/kernel/debug/sched/fair_server/cpu{cpu}");
    let read = |f: &str| {
        std::fs::read_to_string(format!("{dir}/{f}"))
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok())
    };
    Some((read("runtime")?, read("period")?))
}

/// A close-on-exec duplicate of `fd`, owned.
pub fn dup(fd: libc::c_int) -> Result<Fd, RtError> {
    // SAFETY: F_DUPFD_CLOEXEC on a caller-supplied number; the result, if
    // any, is a new descriptor owned by `Fd`.
    let d = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if d < 0 {
        return Err(RtError::last_os(format!("dup(fd {fd})")));
    }
    Ok(Fd(d))
}

/// What identifies an open file without `kcmp`: device, inode and the
/// file status flags' access mode (the two ends of a pipe share an inode).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FileId {
    dev: u64,
    ino: u64,
    rdev: u64,
    access: libc::c_int,
}

/// The identity of the file behind `fd`; `None` if `fd` is not open.
pub fn file_id(fd: libc::c_int) -> Option<FileId> {
    // SAFETY: `st` is plain data written by the kernel; F_GETFL only reads.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(fd, &mut st) != 0 {
            return None;
        }
        let fl = libc::fcntl(fd, libc::F_GETFL);
        Some(FileId {
            dev: st.st_dev,
            ino: st.st_ino,
            rdev: st.st_rdev,
            access: fl & libc::O_ACCMODE,
        })
    }
}

/// Does descriptor `fd` refer to the same open file (the same `struct
/// file`) as `anchor`, a duplicate taken when `fd` was bound? `kcmp(2)`
/// answers exactly; where it is unavailable (no CONFIG_KCMP) the
/// identities recorded at bind time (`id`) are compared. `false` when `fd`
/// is closed or now names another file.
pub fn same_file(fd: libc::c_int, anchor: libc::c_int, id: Option<FileId>) -> bool {
    const KCMP_FILE: libc::c_long = 0;
    // SAFETY: kcmp compares two descriptors of this process; no memory is
    // passed.
    let r = unsafe {
        let pid = libc::getpid() as libc::c_long;
        libc::syscall(
            libc::SYS_kcmp,
            pid,
            pid,
            KCMP_FILE,
            fd as libc::c_long,
            anchor as libc::c_long,
        )
    };
    match r {
        0 => true,
        1..=3 => false,
        _ => {
            let e = std::io::Error::last_os_error().raw_os_error();
            if e == Some(libc::EBADF) {
                return false;
            }
            // ENOSYS / EPERM: compare what fstat says.
            id.is_some() && file_id(fd) == id
        }
    }
}

/// Another process's real-time thread that may run on a CPU the runtime
/// manages (it competes with the runtime's threads).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Competitor {
    pub pid: i32,
    pub tid: i32,
    pub comm: String,
    pub policy: SchedPolicy,
    /// The managed CPUs it may run on.
    pub cpus: Vec<usize>,
}

impl std::fmt::Display for Competitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} thread {} of process {} ({}) may run on CPU {:?}",
            self.policy.name(),
            self.policy.priority,
            self.tid,
            self.pid,
            self.comm.escape_debug(),
            self.cpus
        )
    }
}

/// SCHED_FIFO / SCHED_RR threads of other user-space processes allowed on
/// any of `cpus` (kernel threads, e.g. `migration/N`, are left out: they run
/// briefly by design). Read from `/proc`; unreadable entries are skipped.
pub fn rt_competitors(cpus: &[usize]) -> Vec<Competitor> {
    const PF_KTHREAD: u64 = 0x0020_0000;
    let me = std::process::id() as i32;
    let mut out = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return out;
    };
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")) else {
                continue;
            };
            // comm is in parentheses and may contain spaces or ')'.
            let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
                continue;
            };
            let comm = stat[open + 1..close].to_string();
            let rest: Vec<&str> = stat[close + 1..].split_whitespace().collect();
            // Fields from 3 (state) on: flags is field 9, rt_priority 40,
            // policy 41 (proc(5)).
            let field = |k: usize| rest.get(k - 3).and_then(|v| v.parse::<u64>().ok());
            let (Some(flags), Some(prio), Some(policy)) = (field(9), field(40), field(41)) else {
                continue;
            };
            let policy = policy as libc::c_int;
            if flags & PF_KTHREAD != 0 || !(policy == libc::SCHED_FIFO || policy == libc::SCHED_RR)
            {
                continue;
            }
            // SAFETY: `set` is plain data written by the kernel.
            let allowed: Vec<usize> = unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                if libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set)
                    != 0
                {
                    continue;
                }
                cpus.iter()
                    .copied()
                    .filter(|&c| c < libc::CPU_SETSIZE as usize && libc::CPU_ISSET(c, &set))
                    .collect()
            };
            if allowed.is_empty() {
                continue;
            }
            out.push(Competitor {
                pid,
                tid,
                comm,
                policy: SchedPolicy {
                    policy,
                    priority: prio as libc::c_int,
                },
                cpus: allowed,
            });
        }
    }
    out
}
