//! Builds the kernel-upcall BPF object (`bpf/kupcall.bpf.c`) with clang for
//! the BPF target into OUT_DIR, where `kupcall.rs` embeds it. Without clang
//! (or the libbpf headers) the crate still builds: the object is empty and
//! `register_kernel_upcall` reports, at run time, that kernel upcalls were
//! not built (run `make setup`, which installs clang and libbpf-dev).

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let src = "bpf/kupcall.bpf.c";
    println!("cargo:rerun-if-changed={src}");
    println!("cargo:rerun-if-env-changed=IRQLAB_BPF_CLANG");
    let out =
        PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("kupcall.bpf.o");
    let clang = std::env::var("IRQLAB_BPF_CLANG").unwrap_or_else(|_| "clang".into());
    // asm/types.h lives under the multiarch include directory on Debian.
    let multiarch = Command::new("gcc")
        .arg("-print-multiarch")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| format!("{}-linux-gnu", std::env::consts::ARCH));
    let status = Command::new(&clang)
        .args([
            "-O2", "-g", "-target", "bpf", "-mcpu=v3", "-Wall", "-Werror",
        ])
        .arg(format!("-I/usr/include/{multiarch}"))
        .args(["-c", src, "-o"])
        .arg(&out)
        .status();
    let note = match status {
        Ok(s) if s.success() => String::new(),
        Ok(s) => format!("{clang} failed on {src} ({s})"),
        Err(e) => format!("{clang} not found ({e})"),
    };
    if !note.is_empty() {
        println!("cargo:warning=kernel upcalls not built: {note}; run `make setup`");
        std::fs::write(&out, b"").expect("write the empty BPF object");
    }
    println!("cargo:rustc-env=IRQLAB_KUPCALL_NOTE={note}");
}
