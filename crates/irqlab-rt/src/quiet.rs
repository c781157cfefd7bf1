//! Handler panics that cost no more than the handler.
//!
//! What it is: the default panic hook prints a message and, with
//! `RUST_BACKTRACE=1`, captures and symbolizes a backtrace -- seconds of
//! CPU for one panic, taken from the handler's budget while its events
//! queue up. The runtime installs (once per process) a hook that, on a
//! thread running a handler inside [`call`], only keeps the message and
//! its location in a thread-local slot; every other panic goes to the hook
//! that was installed before. [`call`] returns the message as the error,
//! for the report.
//!
//! Design principles: nothing is printed or captured on the handler path;
//! panics outside handlers keep their usual report; a program that installs
//! its own hook after the runtime's replaces this one (its choice).

use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    static QUIET: Cell<bool> = const { Cell::new(false) };
    static LAST: RefCell<Option<String>> = const { RefCell::new(None) };
}

static INSTALL: Once = Once::new();

/// Install the quiet hook (process-wide, once), chaining to the previous.
pub(crate) fn install() {
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(|q| q.get()) {
                return previous(info);
            }
            let payload = info.payload();
            let msg = payload
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| payload.downcast_ref::<String>().map(|s| s.as_str()))
                .unwrap_or("(a non-string payload)");
            let at = info
                .location()
                .map(|l| format!(" at {}:{}", l.file(), l.line()))
                .unwrap_or_default();
            LAST.with(|l| *l.borrow_mut() = Some(format!("{msg}{at}")));
        }));
    });
}

/// Run a handler: its result, or the message of its panic (caught quietly).
pub(crate) fn call<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    let outer = QUIET.with(|q| q.replace(true));
    let r = catch_unwind(AssertUnwindSafe(f));
    QUIET.with(|q| q.set(outer));
    r.map_err(|_| {
        LAST.with(|l| l.borrow_mut().take())
            .unwrap_or_else(|| "a panic (no message recorded)".into())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quiet_panic_returns_its_message_and_location() {
        install();
        let e = call(|| -> u64 { panic!("handler bug {}", 7) }).expect_err("panicked");
        assert!(e.starts_with("handler bug 7 at "), "{e}");
        assert!(e.contains("quiet.rs"), "{e}");
        assert_eq!(call(|| 5u64), Ok(5));
        // Outside `call` the flag is off again.
        assert!(!QUIET.with(|q| q.get()));
    }
}
