//! Skips that are seen: a test that needs what the kernel refuses here
//! (SCHED_FIFO, io_uring, kernel upcalls, /dev/kvm) returns early with the
//! kernel's reason, through [`skipped!`](crate::skipped).
//!
//! Design principle: a skip is never a silent pass. libtest hides the
//! output of passing tests, so besides printing the reason, each skip is
//! appended as `test name: reason` to the file named by `IRQLAB_SKIP_LOG`
//! when it is set; `make test` sets it and lists the file after the Rust
//! tests.

use std::io::Write;
use std::path::Path;

/// The variable naming the file that collects the skips.
pub const SKIP_LOG_VAR: &str = "IRQLAB_SKIP_LOG";

/// Report the calling test as skipped for `reason` (see the module doc).
pub fn record_skip(reason: &str) {
    eprintln!("SKIPPED: {reason}");
    if let Some(path) = std::env::var_os(SKIP_LOG_VAR) {
        let test = std::thread::current().name().unwrap_or("a test").to_owned();
        if let Err(e) = append_skip(Path::new(&path), &test, reason) {
            eprintln!("{SKIP_LOG_VAR}={}: {e}", path.to_string_lossy());
        }
    }
}

/// Append `test: reason` (one line) to the file at `path`.
fn append_skip(path: &Path, test: &str, reason: &str) -> std::io::Result<()> {
    let line = format!("{test}: {}\n", reason.replace('\n', " "));
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?
        .write_all(line.as_bytes())
}

/// `skipped!("format", args...)`: the calling test is skipped for this
/// reason ([`record_skip`]); the test then returns.
#[macro_export]
macro_rules! skipped {
    ($($arg:tt)*) => {
        $crate::testing::record_skip(&format!($($arg)*))
    };
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_skip_is_one_line_with_the_test_name() {
        let path = std::env::temp_dir().join(format!("irqlab-skips-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        super::append_skip(&path, "t1", "no SCHED_FIFO").expect("append");
        super::append_skip(&path, "t2", "two\nlines").expect("append");
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let _ = std::fs::remove_file(&path);
        assert_eq!(text, "t1: no SCHED_FIFO\nt2: two lines\n");
    }
}
