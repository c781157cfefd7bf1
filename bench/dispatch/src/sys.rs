//! Thin wrappers over the Linux calls the benchmark needs: clocks, CPU
//! affinity, scheduling policy, fork, and constants the libc crate does not
//! export on every target.

use std::io;

pub const SO_TIMESTAMPNS: libc::c_int = 35; // SO_TIMESTAMPNS_OLD; 64-bit timespec on x86_64/aarch64
pub const SCM_TIMESTAMPNS: libc::c_int = SO_TIMESTAMPNS;
pub const F_SETSIG: libc::c_int = 10;
pub const F_SETOWN_EX: libc::c_int = 15;
pub const F_OWNER_TID: libc::c_int = 0;

#[repr(C)]
pub struct FOwnerEx {
    pub kind: libc::c_int,
    pub pid: libc::pid_t,
}

pub fn last_err() -> io::Error {
    io::Error::last_os_error()
}

pub fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(last_err())
    } else {
        Ok(rc)
    }
}

fn now(clock: libc::clockid_t) -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// CLOCK_MONOTONIC in ns (vDSO, async-signal-safe).
pub fn now_mono() -> i64 {
    now(libc::CLOCK_MONOTONIC)
}

pub fn now_real() -> i64 {
    now(libc::CLOCK_REALTIME)
}

/// CLOCK_REALTIME - CLOCK_MONOTONIC in ns, from the tightest of a few
/// bracketed reads. Kernel socket timestamps (SO_TIMESTAMPNS) are
/// CLOCK_REALTIME; this converts them to the monotonic time line.
pub fn real_minus_mono() -> i64 {
    let mut best = (i64::MAX, 0);
    for _ in 0..16 {
        let a = now_mono();
        let r = now_real();
        let b = now_mono();
        if b - a < best.0 {
            best = (b - a, r - (a + (b - a) / 2));
        }
    }
    best.1
}

pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        check(libc::sched_setaffinity(
            0,
            std::mem::size_of::<libc::cpu_set_t>(),
            &set,
        ))?;
    }
    Ok(())
}

/// What the calling thread ended up with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sched {
    Fifo(i32),
    Other,
}

impl Sched {
    pub fn name(self) -> &'static str {
        match self {
            Sched::Fifo(_) => "SCHED_FIFO",
            Sched::Other => "SCHED_OTHER",
        }
    }
    pub fn prio(self) -> i32 {
        match self {
            Sched::Fifo(p) => p,
            Sched::Other => 0,
        }
    }
}

/// Ask for SCHED_FIFO `prio` (when `fifo`) for the calling thread; on EPERM
/// (not root, no CAP_SYS_NICE, RLIMIT_RTPRIO 0) fall back to SCHED_OTHER.
/// `reset_on_fork`: children start as SCHED_OTHER (the hogs and cyclictest
/// must not inherit the client's policy).
pub fn set_sched(fifo: bool, prio: i32, reset_on_fork: bool) -> io::Result<Sched> {
    let flag = if reset_on_fork {
        libc::SCHED_RESET_ON_FORK
    } else {
        0
    };
    if fifo {
        let p = libc::sched_param {
            sched_priority: prio,
        };
        let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO | flag, &p) };
        if rc == 0 {
            return Ok(Sched::Fifo(prio));
        }
        let e = last_err();
        if e.raw_os_error() != Some(libc::EPERM) {
            return Err(e);
        }
    }
    let p = libc::sched_param { sched_priority: 0 };
    check(unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER | flag, &p) })?;
    Ok(Sched::Other)
}

/// Kill this process when the parent dies (the benchmark's children must not
/// outlive it, whatever happens to it).
pub fn die_with_parent(parent: libc::pid_t) {
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        if libc::getppid() != parent {
            libc::_exit(1);
        }
    }
}

/// fork(); the child runs `f` and `_exit`s with its return value. The caller
/// must be single-threaded (the benchmark's parent is).
pub fn fork_child(f: impl FnOnce() -> i32) -> io::Result<libc::pid_t> {
    let parent = unsafe { libc::getpid() };
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(last_err());
    }
    if pid == 0 {
        die_with_parent(parent);
        let code = f();
        unsafe { libc::_exit(code) };
    }
    Ok(pid)
}

pub fn kill_and_reap(pid: libc::pid_t) {
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        let mut st = 0;
        libc::waitpid(pid, &mut st, 0);
    }
}

/// waitpid with a deadline (polling); true if the child exited.
pub fn wait_timeout(pid: libc::pid_t, timeout_ns: i64) -> bool {
    let end = now_mono() + timeout_ns;
    loop {
        let mut st = 0;
        let rc = unsafe { libc::waitpid(pid, &mut st, libc::WNOHANG) };
        if rc == pid || rc < 0 {
            return true;
        }
        if now_mono() > end {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

pub fn set_nonblocking(fd: libc::c_int, on: bool) -> io::Result<()> {
    unsafe {
        let fl = check(libc::fcntl(fd, libc::F_GETFL))?;
        let fl = if on {
            fl | libc::O_NONBLOCK
        } else {
            fl & !libc::O_NONBLOCK
        };
        check(libc::fcntl(fd, libc::F_SETFL, fl))?;
    }
    Ok(())
}

pub fn setsockopt_int(
    fd: libc::c_int,
    level: libc::c_int,
    opt: libc::c_int,
    v: libc::c_int,
) -> io::Result<()> {
    check(unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            &v as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

pub fn set_rcvtimeo(fd: libc::c_int, ns: i64) -> io::Result<()> {
    let tv = libc::timeval {
        tv_sec: ns / 1_000_000_000,
        tv_usec: (ns % 1_000_000_000) / 1000,
    };
    check(unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            &tv as *const libc::timeval as *const libc::c_void,
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// A UDP socket bound to 127.0.0.1 on an ephemeral port; returns (fd, addr).
pub fn udp_loopback() -> io::Result<(libc::c_int, libc::sockaddr_in)> {
    unsafe {
        let fd = check(libc::socket(
            libc::AF_INET,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            0,
        ))?;
        let mut a: libc::sockaddr_in = std::mem::zeroed();
        a.sin_family = libc::AF_INET as libc::sa_family_t;
        a.sin_addr.s_addr = u32::from_be_bytes([127, 0, 0, 1]).to_be();
        a.sin_port = 0;
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        check(libc::bind(fd, &a as *const _ as *const libc::sockaddr, len))?;
        let mut l = len;
        check(libc::getsockname(
            fd,
            &mut a as *mut _ as *mut libc::sockaddr,
            &mut l,
        ))?;
        Ok((fd, a))
    }
}

pub fn connect_to(fd: libc::c_int, a: &libc::sockaddr_in) -> io::Result<()> {
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    check(unsafe { libc::connect(fd, a as *const _ as *const libc::sockaddr, len) })?;
    Ok(())
}

pub fn pipe() -> io::Result<(libc::c_int, libc::c_int)> {
    let mut fds = [0; 2];
    check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    Ok((fds[0], fds[1]))
}

pub fn write_all(fd: libc::c_int, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        let n = unsafe { libc::write(fd, buf.as_ptr() as *const libc::c_void, buf.len()) };
        if n < 0 {
            let e = last_err();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        buf = &buf[n as usize..];
    }
    Ok(())
}

pub fn read_to_end(fd: libc::c_int) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        let n = unsafe { libc::read(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
        if n < 0 {
            let e = last_err();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Ok(out);
        }
        out.extend_from_slice(&buf[..n as usize]);
    }
}

pub fn close(fd: libc::c_int) {
    unsafe { libc::close(fd) };
}

pub fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}
