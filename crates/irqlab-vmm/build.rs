//! Builds the guest kernel (`guest/`) from source with the machine's own
//! gcc into `OUT_DIR/guest.elf` (the same flags as `guest/Makefile`); the
//! crate embeds it. Nothing prebuilt is committed.
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let guest = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../guest");
    for f in ["start.S", "kernel.c", "abi.h", "linker.ld"] {
        println!("cargo:rerun-if-changed={}", guest.join(f).display());
    }
    let out =
        PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("guest.elf");
    let cc = std::env::var("IRQLAB_GUEST_CC").unwrap_or_else(|_| "gcc".into());
    let status = Command::new(&cc)
        .current_dir(&guest)
        .args([
            "-O2",
            "-ffreestanding",
            "-fno-pic",
            "-fno-pie",
            "-mno-red-zone",
            "-mgeneral-regs-only",
            "-mcmodel=small",
            "-fno-stack-protector",
            "-fno-asynchronous-unwind-tables",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-nostdlib",
            "-static",
            "-no-pie",
            "-Wl,--build-id=none",
            "-Wl,--no-warn-rwx-segments",
            "-T",
            "linker.ld",
            "-o",
        ])
        .arg(&out)
        .args(["start.S", "kernel.c"])
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("building the guest kernel with {cc} failed ({s}); see the messages above"),
        Err(e) => panic!("cannot run {cc} to build the guest kernel: {e} (install gcc)"),
    }
}
