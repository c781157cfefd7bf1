//! A private loopback for a benchmark process: its own network and mount
//! namespaces (so its `lo` is not the machine's), a private sysfs to reach
//! that `lo`'s queue settings, `lo` up, and receive packet steering (RPS)
//! of `lo` to one CPU -- so the NET_RX softirq of loopback traffic runs on
//! that CPU, as a NIC's interrupt would, instead of on the sending CPU.
//! Nothing changes outside the process and nothing outlives it. Root only;
//! call it before any thread is started.

fn check(what: &str, rc: libc::c_int) -> Result<(), String> {
    if rc != 0 {
        return Err(format!("{what}: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Own network + mount namespace, private sysfs, lo up, RPS of lo to `cpu`.
pub fn private_loopback(cpu: usize) -> Result<(), String> {
    unsafe {
        check(
            "unshare(CLONE_NEWNET|CLONE_NEWNS)",
            libc::unshare(libc::CLONE_NEWNET | libc::CLONE_NEWNS),
        )?;
        check(
            "make / private",
            libc::mount(
                c"none".as_ptr(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ),
        )?;
        libc::umount2(c"/sys".as_ptr(), libc::MNT_DETACH);
        check(
            "mount sysfs",
            libc::mount(
                c"sysfs".as_ptr(),
                c"/sys".as_ptr(),
                c"sysfs".as_ptr(),
                0,
                std::ptr::null(),
            ),
        )?;
        let s = libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0);
        let mut ifr: libc::ifreq = std::mem::zeroed();
        for (i, b) in b"lo\0".iter().enumerate() {
            ifr.ifr_name[i] = *b as libc::c_char;
        }
        check(
            "SIOCGIFFLAGS lo",
            libc::ioctl(s, libc::SIOCGIFFLAGS, &mut ifr),
        )?;
        ifr.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        check(
            "SIOCSIFFLAGS lo up",
            libc::ioctl(s, libc::SIOCSIFFLAGS, &ifr),
        )?;
        libc::close(s);
    }
    std::fs::write(
        "/sys/class/net/lo/queues/rx-0/rps_cpus",
        format!("{:x}", 1u64 << cpu),
    )
    .map_err(|e| format!("rps_cpus: {e}"))
}
