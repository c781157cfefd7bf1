//! Busy time per metric window: how the time the machine charges to each
//! server becomes its `share_windows` (docs/simulator.md: per-server CPU share
//! over windows).
//!
//! Design principles:
//! * Sparse: only the windows a server ran in are kept.
//! * Written in time order, in one place: a server's current window is
//!   kept in its own state (`OpenWindow`, next to its busy time); when the
//!   server moves on, the window is appended to one log for all servers
//!   (`BusyLog`). Each server's list is built once, at the end.
//! * Exact: the shares are the divisions a dense store of every window
//!   would give, bit for bit, whatever order the charges come in.
//!
//! Why a log: with a list per server, a charge that closed a window read
//! and wrote a line of its own server's list, cold on a first run. On the
//! 8-CPU bench set (1,875 windows over 80 servers) that bookkeeping was
//! about 27 µs of a 142 µs loop (measured by leaving it out); with the
//! log the loop takes 127-130 µs and the end of the run 5 µs more, to
//! build the lists (issue 20, docs/performance-log.md).

use crate::metrics::Windows;

/// The length of window `k` of width `w` in a run of `dur` ns (the last
/// one may be shorter).
pub(crate) fn window_len(k: usize, w: u64, dur: u64) -> u64 {
    let start = k as u64 * w;
    (start + w).min(dur) - start
}

/// `x as f64` in one instruction where it can be: through `i64` when it
/// fits (the same value, rounded the same way; times are at most 10^15).
pub(crate) fn to_f64(x: u64) -> f64 {
    match i64::try_from(x) {
        Ok(i) => i as f64,
        Err(_) => x as f64,
    }
}

/// A server's last window with busy time, still taking charges: `(window,
/// ns)`, or none (`OpenWindow::default()`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct OpenWindow(usize, u64);

impl Default for OpenWindow {
    fn default() -> OpenWindow {
        // a window index is below the number of windows: never `usize::MAX`
        OpenWindow(usize::MAX, 0)
    }
}

/// The busy time of every server per metric window, as charged: each
/// server's windows before its open one, `(server, window, ns)`, in the
/// order the server left them.
#[derive(Clone, Debug, Default)]
pub(crate) struct BusyLog {
    /// Number of windows; charges to later windows are dropped.
    len: usize,
    closed: Vec<(usize, usize, u64)>,
    /// Some window was charged after a later one of the same server.
    unordered: bool,
}

impl BusyLog {
    /// `len` windows, with room for `cap` closed windows (more grow the
    /// log).
    pub(crate) fn with_capacity(len: usize, cap: usize) -> BusyLog {
        BusyLog {
            len,
            closed: Vec::with_capacity(cap),
            unordered: false,
        }
    }

    /// Add `x` (> 0) ns to window `k` of server `g`, whose open window is
    /// `open`.
    #[inline(always)]
    pub(crate) fn add(&mut self, g: usize, open: &mut OpenWindow, k: usize, x: u64) {
        if open.0 == k {
            open.1 += x;
        } else {
            self.add_new(g, open, k, x);
        }
    }

    /// `add`, to a window other than the open one: that one is closed and
    /// `k` opened. (An earlier window, which the simulator never charges,
    /// is merged into its place at the end.)
    #[inline(never)]
    fn add_new(&mut self, g: usize, open: &mut OpenWindow, k: usize, x: u64) {
        if k >= self.len {
            return;
        }
        if *open != OpenWindow::default() && k < open.0 {
            self.unordered = true;
        }
        self.close(g, open);
        *open = OpenWindow(k, x);
    }

    fn close(&mut self, g: usize, open: &mut OpenWindow) {
        if *open != OpenWindow::default() {
            self.closed.push((g, open.0, open.1));
            *open = OpenWindow::default();
        }
    }

    /// Add the interval `[a, b)` of server `g` to the windows of width `w`
    /// it covers. The windows after the first are appended at once (a
    /// long run of a server crosses many windows).
    pub(crate) fn add_interval(&mut self, g: usize, open: &mut OpenWindow, w: u64, a: u64, b: u64) {
        if a >= b || w == 0 {
            return;
        }
        let (first, last) = (a / w, (b - 1) / w);
        let Some(top) = self.len.checked_sub(1) else {
            return;
        };
        let (Ok(first), Ok(last)) = (usize::try_from(first), usize::try_from(last)) else {
            return;
        };
        if first > top {
            return;
        }
        let start = |k: usize| (k as u64).saturating_mul(w);
        self.add(g, open, first, start(first + 1).min(b) - a);
        let last = last.min(top);
        if last == first {
            return;
        }
        // windows `first + 1 ..= last`: the last of them is left open
        self.close(g, open);
        self.closed.extend((first + 1..last).map(|k| (g, k, w)));
        *open = OpenWindow(last, start(last + 1).min(b) - start(last));
    }

    /// Keep the first `n` windows.
    pub(crate) fn truncate(&mut self, n: usize) {
        self.len = self.len.min(n);
    }

    /// Each server's windows, for the servers whose open windows are
    /// `open` (server `g`'s at `open[g]`): its charges summed per window,
    /// in window order, none past the last window. The log is freed as
    /// the lists are made.
    pub(crate) fn into_servers(self, open: &[OpenWindow]) -> Vec<BusyWindows> {
        let len = self.len;
        let mut count: Vec<usize> = open.iter().map(|o| usize::from(o.0 < len)).collect();
        for &(g, k, _) in &self.closed {
            if let Some(c) = count.get_mut(g).filter(|_| k < len) {
                *c += 1;
            }
        }
        let mut lists: Vec<Vec<(usize, u64)>> = count.into_iter().map(Vec::with_capacity).collect();
        for &(g, k, x) in &self.closed {
            if let Some(l) = lists.get_mut(g).filter(|_| k < len) {
                l.push((k, x));
            }
        }
        drop(self.closed);
        lists
            .into_iter()
            .zip(open)
            .map(|(mut nz, o)| {
                if o.0 < len {
                    nz.push((o.0, o.1));
                }
                if self.unordered {
                    // a window charged after a later one (not by the
                    // simulator): merged into its place
                    nz.sort_by_key(|&(k, _)| k);
                    nz.dedup_by(|later, kept| {
                        let same = later.0 == kept.0;
                        if same {
                            kept.1 += later.1;
                        }
                        same
                    });
                }
                BusyWindows { len, nz }
            })
            .collect()
    }
}

/// One server's busy time per metric window, for the windows it ran in
/// only: `(window, ns)` in window order, none zero.
///
/// Why sparse: a server of a model with many servers runs in few windows
/// (200 servers over 200 windows: a median of 5 each), and a dense store
/// of `u64` per window is written on every page (malloc's chunk headers,
/// and some nonzero window on each page): about 80 page faults on the
/// 200-task set, half of its setup time.
#[derive(Debug)]
pub(crate) struct BusyWindows {
    len: usize,
    nz: Vec<(usize, u64)>,
}

impl BusyWindows {
    /// The busy time of every window, zeros included (tests).
    #[cfg(test)]
    pub(crate) fn to_dense(&self) -> Vec<u64> {
        let mut v = vec![0; self.len];
        for &(k, x) in &self.nz {
            v[k] = x;
        }
        v
    }

    /// Each window's share: its busy time over its length, in the vector
    /// that held the times (`(usize, u64)` and `(usize, f64)` have one
    /// size and alignment, so the collect reuses the allocation: no
    /// second vector, no fresh pages). Only the windows it ran in are
    /// divided; the others are 0.0.
    pub(crate) fn into_fractions(self, w: u64, dur: u64) -> Windows {
        let full = (dur / w) as usize;
        let wf = to_f64(w);
        let nz = self
            .nz
            .into_iter()
            .map(|(k, x)| {
                let len = if k < full {
                    wf
                } else {
                    to_f64(window_len(k, w, dur))
                };
                (k, to_f64(x) / len)
            })
            .collect();
        Windows::from_sorted(self.len, nz)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The dense forms the sparse ones replaced (the reference of the
    /// tests below).
    mod dense {
        use super::super::{to_f64, window_len};

        /// Each window's value over its length (CPU shares), in the vector that
        /// held the values: each share's bits replace its value, then the vector
        /// is reinterpreted (`u64` and `f64` have one size and alignment, so the
        /// collect reuses the allocation: no second vector, no fresh pages).
        pub(super) fn window_fractions(mut v: Vec<u64>, w: u64, dur: u64) -> Vec<f64> {
            let full = ((dur / w) as usize).min(v.len());
            let wf = to_f64(w);
            for b in &mut v[..full] {
                // a window without work has a share of 0.0, whose bits are the
                // value's (0): no division, as for most windows of a server whose
                // period is longer than the window
                if *b != 0 {
                    *b = (to_f64(*b) / wf).to_bits();
                }
            }
            for (k, b) in v.iter_mut().enumerate().skip(full) {
                *b = (to_f64(*b) / to_f64(window_len(k, w, dur))).to_bits();
            }
            v.into_iter().map(f64::from_bits).collect()
        }

        /// Add the interval `[a, b)` to per-window totals of width `w`.
        pub(super) fn add_windows(win: &mut [u64], w: u64, a: u64, b: u64) {
            let mut t = a;
            while t < b {
                let k = (t / w) as usize;
                let end = ((k as u64 + 1) * w).min(b);
                if let Some(x) = win.get_mut(k) {
                    *x += end - t;
                }
                t = end;
            }
        }
    }

    /// Shares of full windows and of a last, shorter one, exactly as the
    /// direct division gives them, in the allocation of the busy times.
    #[test]
    fn fractions_divide_in_place() {
        let (w, dur) = (1_000u64, 3_500u64);
        let mut log = BusyLog::with_capacity(4, 0);
        let mut open = [OpenWindow::default()];
        log.add_interval(0, &mut open[0], w, 0, 1_000);
        log.add(0, &mut open[0], 1, 250);
        log.add_interval(0, &mut open[0], w, 3_000, 3_499);
        let [b] = <[BusyWindows; 1]>::try_from(log.into_servers(&open)).expect("one server");
        let want: Vec<f64> = vec![1.0, 0.25, 0.0, 499.0 / 500.0];
        let ptr = b.nz.as_ptr() as usize;
        let got = b.into_fractions(w, dur);
        assert_eq!(got.to_vec(), want);
        assert_eq!(got.nonzero().len(), 3, "a zero was stored");
        assert_eq!(
            got.nonzero().as_ptr() as usize,
            ptr,
            "the vector was copied"
        );
        // values too large for `i64` take the exact unsigned path
        let big = BusyWindows {
            len: 1,
            nz: vec![(0, u64::MAX)],
        };
        assert_eq!(big.into_fractions(u64::MAX, u64::MAX).to_vec(), vec![1.0]);
    }

    /// An interval past the last window is dropped, and one that crosses
    /// it keeps its part inside; truncating drops the later windows, the
    /// open ones included; each server gets its own charges only.
    #[test]
    fn windows_past_the_end_are_dropped() {
        let dense = |log: &BusyLog, open: &[OpenWindow]| -> Vec<Vec<u64>> {
            let lists = log.clone().into_servers(open);
            lists.iter().map(BusyWindows::to_dense).collect()
        };
        let mut log = BusyLog::with_capacity(3, 1);
        let mut open = [OpenWindow::default(); 2];
        log.add_interval(0, &mut open[0], 10, 25, 45);
        log.add(0, &mut open[0], 7, 1);
        log.add(1, &mut open[1], 1, 4);
        assert_eq!(dense(&log, &open), vec![vec![0, 0, 5], vec![0, 4, 0]]);
        log.add_interval(0, &mut open[0], 10, 3, 12);
        assert_eq!(dense(&log, &open), vec![vec![7, 2, 5], vec![0, 4, 0]]);
        log.truncate(2);
        assert_eq!(dense(&log, &open), vec![vec![7, 2], vec![0, 4]]);
        log.truncate(5);
        assert_eq!(dense(&log, &open)[0], vec![7, 2]);
    }

    proptest::proptest! {
        /// Each server's sparse windows hold what its dense ones held, for
        /// charges of up to three servers interleaved, in time order (as
        /// the simulator makes them) and out of it (merged at the end),
        /// single-window adds and intervals across windows, with and
        /// without a truncation and a shorter last window; their shares
        /// are the dense shares, bit for bit, and no zero is stored.
        #[test]
        fn sparse_windows_match_the_dense_ones(
            w in 1u64..50,
            nwin in 0usize..40,
            short in 0u64..50,
            steps in proptest::collection::vec((0usize..3, 0u64..2_000, 0u64..120, proptest::bool::ANY), 0..60),
            in_order in proptest::bool::ANY,
            cut in proptest::option::of(0usize..45),
            cap in 0usize..4,
        ) {
            let dur = (nwin as u64 * w).saturating_sub(short % w.max(1)).max(1);
            let nwin = dur.div_ceil(w) as usize;
            let mut dense = vec![vec![0u64; nwin]; 3];
            let mut log = BusyLog::with_capacity(nwin, cap);
            let mut open = [OpenWindow::default(); 3];
            let mut t = 0;
            for (g, at, len, single) in steps {
                let a = if in_order { t + at % 37 } else { at };
                let b = a + len + 1;
                t = b;
                let k = (a / w) as usize;
                if single && b <= (a / w + 1) * w {
                    if let Some(x) = dense[g].get_mut(k) {
                        *x += b - a;
                    }
                    log.add(g, &mut open[g], k, b - a);
                } else {
                    dense::add_windows(&mut dense[g], w, a, b);
                    log.add_interval(g, &mut open[g], w, a, b);
                }
            }
            let mut dur = dur;
            if let Some(n) = cut {
                for d in &mut dense {
                    d.truncate(n);
                }
                log.truncate(n);
                dur = dur.min((n as u64 * w).max(1));
            }
            let lists = log.into_servers(&open);
            proptest::prop_assert_eq!(lists.len(), 3);
            for (sparse, dense) in lists.into_iter().zip(dense) {
                proptest::prop_assert_eq!(sparse.to_dense(), dense.clone());
                proptest::prop_assert!(sparse.nz.iter().all(|&(_, x)| x > 0));
                proptest::prop_assert!(sparse.nz.windows(2).all(|p| p[0].0 < p[1].0));
                let want = dense::window_fractions(dense, w, dur);
                let got = sparse.into_fractions(w, dur);
                proptest::prop_assert_eq!(got.len(), want.len());
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                proptest::prop_assert_eq!(bits(&got.to_vec()), bits(&want));
                proptest::prop_assert_eq!(bits(&got.iter().collect::<Vec<_>>()), bits(&want));
                proptest::prop_assert_eq!(got, Windows::from_dense(&want));
            }
        }
    }
}
