//! Event-delivery mechanisms: how the echo server learns that a datagram
//! arrived and gets to run its handler. Each is one [`Mechanism`] and one
//! line in [`ALL`].

use crate::server::Handler;
use std::io;

mod aio;
mod blocking;
mod epoll;
#[cfg(feature = "irqlab")]
mod irqlab;
#[cfg(feature = "irqlab")]
mod kupcall;
mod sigio;
mod uring;

/// One way of delivering "a datagram arrived" to the handler.
///
/// `serve` runs in the forked server process (already pinned to the server
/// CPU and given its scheduling policy). It sets the mechanism up on `fd` (a
/// UDP socket connected to the client, blocking, SO_TIMESTAMPNS enabled),
/// calls `ready()` once it can take datagrams, then calls
/// [`Handler::handle`] for every datagram with the moment its handler started
/// until [`Handler::stop`] is set; then it returns.
pub trait Mechanism: Sync {
    /// Name used on the command line and in the JSON output.
    fn name(&self) -> &'static str;
    /// How it works, one line (goes into the JSON output).
    fn how(&self) -> &'static str;
    /// Whether the handler sees the kernel receive timestamp (recvmsg with
    /// SCM_TIMESTAMPNS); otherwise dispatch latency is measured from the
    /// client's send timestamp.
    fn kernel_timestamps(&self) -> bool;
    fn serve(&self, fd: libc::c_int, h: &mut Handler, ready: &mut dyn FnMut()) -> io::Result<()>;
}

/// Every mechanism, in plotting order. THE place to add one: implement
/// [`Mechanism`] in a module next to this file and append it here.
///
/// The irqlab runtime's own paths (`irqlab-upcall`, `irqlab-bottom-half`)
/// come from crates/irqlab-rt behind the default cargo feature `irqlab`,
/// so the benchmark still builds without the runtime.
pub static ALL: &[&dyn Mechanism] = &[
    &blocking::Blocking,
    &epoll::Epoll,
    &uring::IoUring,
    &sigio::SigIo,
    &aio::Aio,
    #[cfg(feature = "irqlab")]
    &irqlab::RtUpcall,
    #[cfg(feature = "irqlab")]
    &irqlab::RtUpcallUring,
    #[cfg(feature = "irqlab")]
    &irqlab::RtBottomHalf,
    #[cfg(feature = "irqlab")]
    &kupcall::KernelUpcallEcho,
];

pub fn by_name(name: &str) -> Option<&'static dyn Mechanism> {
    ALL.iter().copied().find(|m| m.name() == name)
}

/// Shared by the signal-driven mechanisms: install `handler` for `sigs`
/// (each blocked while it runs, so the handler never nests), block them in
/// this thread and return the mask to pass to sigsuspend (old mask minus
/// `sigs`).
fn install_signal_handler(
    sigs: &[libc::c_int],
    handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void),
) -> io::Result<libc::sigset_t> {
    use crate::sys::check;
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for &s in sigs {
            libc::sigaddset(&mut set, s);
        }
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler as usize;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        sa.sa_mask = set;
        for &s in sigs {
            check(libc::sigaction(s, &sa, std::ptr::null_mut()))?;
        }
        let mut old: libc::sigset_t = std::mem::zeroed();
        check(libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old))?;
        for &s in sigs {
            libc::sigdelset(&mut old, s);
        }
        Ok(old)
    }
}

/// Wait in sigsuspend until the handler (reached through `h`) sets `stop`.
fn suspend_until_stop(h: *mut Handler, wait_mask: &libc::sigset_t) {
    unsafe {
        while !std::ptr::read_volatile(&(*h).stop) {
            libc::sigsuspend(wait_mask);
        }
    }
}

/// Keep errno intact across a signal handler.
struct SavedErrno(libc::c_int);

impl SavedErrno {
    fn save() -> Self {
        SavedErrno(unsafe { *libc::__errno_location() })
    }
}

impl Drop for SavedErrno {
    fn drop(&mut self) {
        unsafe { *libc::__errno_location() = self.0 };
    }
}
