//! `irqlab-kernel-upcall`: the echo handler runs in the kernel's network
//! bottom half itself (irqlab-rt `kupcall`, UPCALL §3.2 on a stock kernel):
//! an eBPF program at tc ingress on lo swaps the datagram's addresses and
//! ports and redirects it back out (bpf_redirect), from the NET_RX softirq,
//! without waking any thread. Dispatch latency is the program's own
//! bpf_ktime_get_ns at entry minus the datagram's kernel receive time stamp
//! (skb->tstamp, the SO_TIMESTAMPNS value the other mechanisms read), and
//! minus the client's send time stamp (`send_to_handler`); the server
//! process only attaches, waits for the STOP datagram (forwarded to the
//! socket by the program: `forward_byte`) and reads the samples map.
//! Without CAP_BPF/CAP_NET_ADMIN the point reports the kernel's reason.

use super::Mechanism;
use crate::server::{Handler, KIND_LATENCY, KIND_STOP, KIND_STREAM, MAX_DGRAM};
use crate::sys;
use irqlab_rt::kupcall::{Hook, KernelHandler, KernelUpcall, KernelUpcallSpec};
use std::io;
use std::os::fd::BorrowedFd;

pub struct KernelUpcallEcho;

impl Mechanism for KernelUpcallEcho {
    fn name(&self) -> &'static str {
        "irqlab-kernel-upcall"
    }
    fn how(&self) -> &'static str {
        "irqlab-rt kupcall: eBPF echo at tc ingress on lo (TCX link) in the NET_RX softirq, reply by bpf_redirect; handler start = bpf_ktime_get_ns at program entry; on loopback the softirq runs on the sending (client) CPU"
    }
    fn kernel_timestamps(&self) -> bool {
        true
    }
    fn serve(&self, fd: libc::c_int, h: &mut Handler, ready: &mut dyn FnMut()) -> io::Result<()> {
        // SAFETY: `fd` is open for the whole call; the upcall owns a dup.
        let dup = unsafe { BorrowedFd::borrow_raw(fd) }.try_clone_to_owned()?;
        let spec = KernelUpcallSpec {
            hook: Hook::Tc,
            handler: KernelHandler::Echo,
            send_time_offset: Some(16),
            forward_byte: Some((0, KIND_STOP as u8)),
            ..Default::default()
        };
        let err = |e: irqlab_rt::RtError| io::Error::other(e.to_string());
        let ku = KernelUpcall::attach(dup, &spec).map_err(err)?;
        let real_minus_mono = sys::real_minus_mono();
        ready();
        // Wait for STOP: the only datagrams the program leaves to the socket.
        let mut buf = [0u8; MAX_DGRAM];
        loop {
            let n = unsafe { libc::recv(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), 0) };
            if n < 0 {
                let e = sys::last_err();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if n as usize >= 8 && buf[0] == KIND_STOP as u8 {
                break;
            }
        }
        for s in ku.samples().map_err(err)? {
            match s.head {
                KIND_STREAM => {
                    h.stream_datagrams += 1;
                    h.stream_wakeups += 1;
                }
                KIND_LATENCY => {
                    if h.send_lat.len() < h.send_lat.capacity() && s.t_send != 0 {
                        h.send_lat.push(s.start as i64 - s.t_send as i64);
                    }
                    if h.kernel_lat.len() < h.kernel_lat.capacity() && s.rx_tstamp != 0 {
                        h.kernel_lat
                            .push(s.start as i64 + real_minus_mono - s.rx_tstamp as i64);
                    }
                }
                _ => {}
            }
        }
        let st = ku.close().map_err(err)?;
        h.send_errors += st.errors;
        if std::env::var_os("IRQLAB_BENCH_DEBUG").is_some() {
            eprintln!("# kernel upcall: {st:?}");
        }
        h.stop = true;
        Ok(())
    }
}
