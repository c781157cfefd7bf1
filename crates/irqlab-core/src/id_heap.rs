//! A binary min-heap of packed `u128` keys, indexed by the id in each
//! key's low 32 bits, so an entry is removed by id in O(log n).
//!
//! What it is: the scheduler's ready, background and timer sets (for speed, docs/performance.md).
//! They used to be ordered sets (`BTreeSet`), whose insert and remove cost
//! several times a heap's; the scheduler needs only the minimum, insert,
//! and removal of a known server, which an indexed heap does with one
//! sift each.
//!
//! Design principles:
//! * A key is one `u128` whose order is the order the caller wants and
//!   whose low 32 bits are the id: one comparison per step, no
//!   indirection. Keys are distinct (the id is part of them), so the
//!   minimum -- the only thing the scheduler reads -- is unique, and the
//!   schedule does not depend on how the heap breaks ties.
//! * Positions live in a vector indexed by id (no allocation per operation
//!   once grown).
//! * The minimum may sit outside the heap, in `top` (for speed, docs/performance.md): a key
//!   inserted below every key present goes there without a sift, and
//!   taking it out again costs nothing -- the scheduler's commonest step,
//!   the most urgent server waking, running and blocking. A key that
//!   arrives below `top` pushes the old `top` into the heap (one sift, as
//!   before), so every operation stays O(log n) and `first` O(1).

use alloc::vec::Vec;

const ABSENT: u32 = u32::MAX;
/// `pos` of the id held in `top` (heap positions stay below: ids, hence
/// entries, number fewer than 2^32 - 1).
const TOP: u32 = u32::MAX - 1;

/// The id of a packed key (its low 32 bits).
#[inline]
pub(crate) fn id_of(k: u128) -> usize {
    k as u32 as usize
}

#[derive(Clone, Debug, Default)]
pub(crate) struct IdHeap {
    /// The smallest key, when it is kept outside `heap`: below every key
    /// of `heap`.
    top: Option<u128>,
    heap: Vec<u128>,
    /// Position in `heap` of each id, `TOP` when in `top`, `ABSENT` when
    /// not there.
    pos: Vec<u32>,
}

impl IdHeap {
    /// The smallest key.
    #[inline]
    pub(crate) fn first(&self) -> Option<u128> {
        match self.top {
            Some(k) => Some(k),
            None => self.heap.first().copied(),
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.heap.len() + usize::from(self.top.is_some())
    }

    /// Room for ids below `n` (and as many entries) without growing.
    pub(crate) fn reserve(&mut self, n: usize) {
        self.pos.reserve(n.saturating_sub(self.pos.len()));
        self.heap.reserve(n.saturating_sub(self.heap.len()));
    }

    /// Where the entries and positions are stored (tests: whether they
    /// moved, i.e. grew).
    #[cfg(test)]
    pub(crate) fn buffers(&self) -> (*const u128, *const u32) {
        (self.heap.as_ptr(), self.pos.as_ptr())
    }

    /// Insert `k` (an entry of the same id is replaced).
    ///
    /// The scheduler's commonest insert -- an absent id whose key goes
    /// below every key present, into an empty `top` -- is inlined into
    /// the caller; every other case is `insert_slow` (for speed, docs/performance.md).
    #[inline(always)]
    pub(crate) fn insert(&mut self, k: u128) {
        let id = id_of(k);
        if self.top.is_none()
            && self.pos.get(id) == Some(&ABSENT)
            && self.heap.first().is_none_or(|&f| k < f)
        {
            self.pos[id] = TOP;
            self.top = Some(k);
            return;
        }
        self.insert_slow(k);
    }

    #[inline(never)]
    fn insert_slow(&mut self, k: u128) {
        let id = id_of(k);
        if self.pos.len() <= id {
            self.pos.resize(id + 1, ABSENT);
        }
        if self.pos[id] != ABSENT {
            self.remove(id);
        }
        // below every key present: into `top`, the old `top` into the heap
        let below = match self.top {
            Some(t) => k < t,
            None => self.heap.first().is_none_or(|&f| k < f),
        };
        if below {
            self.pos[id] = TOP;
            if let Some(t) = self.top.replace(k) {
                self.push(t);
            }
        } else {
            self.push(k);
        }
    }

    #[inline]
    fn push(&mut self, k: u128) {
        self.heap.push(k);
        self.sift_up(self.heap.len() - 1, k);
    }

    /// Remove the entry of `id`, if any. Taking out `top` (the
    /// scheduler's commonest removal) is inlined into the caller.
    #[inline(always)]
    pub(crate) fn remove(&mut self, id: usize) {
        let Some(p) = self.pos.get_mut(id) else {
            return;
        };
        if *p == TOP {
            // the heap's minimum is the minimum again
            *p = ABSENT;
            self.top = None;
            return;
        }
        self.remove_slow(id);
    }

    #[inline(never)]
    fn remove_slow(&mut self, id: usize) {
        let Some(&p) = self.pos.get(id) else { return };
        if p == ABSENT {
            return;
        }
        self.pos[id] = ABSENT;
        if p == TOP {
            self.top = None;
            return;
        }
        let Some(last) = self.heap.pop() else { return };
        let p = p as usize;
        if p < self.heap.len() {
            // the last entry fills the hole: it belongs above when it is
            // smaller than the hole's parent, else below (where it mostly
            // goes back near the bottom: the hole goes down first, one
            // comparison per level, and the entry moves up from there)
            if p > 0 && last < self.heap[(p - 1) / 2] {
                self.sift_up(p, last);
            } else {
                let hole = self.hole_to_bottom(p);
                self.sift_up(hole, last);
            }
        }
    }

    /// Place `k` at hole `i` or above.
    #[inline]
    fn sift_up(&mut self, mut i: usize, k: u128) {
        while i > 0 {
            let parent = (i - 1) / 2;
            let pk = self.heap[parent];
            if pk <= k {
                break;
            }
            self.heap[i] = pk;
            self.pos[id_of(pk)] = i as u32;
            i = parent;
        }
        self.heap[i] = k;
        self.pos[id_of(k)] = i as u32;
    }

    /// Move hole `i` down to a leaf, filling it with its smaller child at
    /// each level; returns the leaf.
    #[inline]
    fn hole_to_bottom(&mut self, mut i: usize) -> usize {
        let n = self.heap.len();
        loop {
            let l = 2 * i + 1;
            if l >= n {
                return i;
            }
            let mut c = l;
            if l + 1 < n && self.heap[l + 1] < self.heap[l] {
                c = l + 1;
            }
            let ck = self.heap[c];
            self.heap[i] = ck;
            self.pos[id_of(ck)] = i as u32;
            i = c;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The heap's minimum and size match an ordered set's under random
        /// inserts (some replacing an id's entry) and removals.
        #[test]
        fn matches_an_ordered_set(ops in proptest::collection::vec((0u32..50, 0u64..40, any::<bool>()), 1..400)) {
            let mut h = IdHeap::default();
            let mut model: alloc::collections::BTreeMap<u32, u128> = Default::default();
            for (id, key, ins) in ops {
                if ins {
                    let k = (u128::from(key) << 64) | u128::from(id);
                    h.insert(k);
                    model.insert(id, k);
                } else {
                    h.remove(id as usize);
                    model.remove(&id);
                }
                prop_assert_eq!(h.len(), model.len());
                prop_assert_eq!(h.first(), model.values().min().copied());
            }
            // draining gives the keys in order
            let mut want: Vec<u128> = model.values().copied().collect();
            want.sort_unstable();
            let mut got = Vec::new();
            while let Some(k) = h.first() {
                got.push(k);
                h.remove(id_of(k));
            }
            prop_assert_eq!(got, want);
        }
    }
}
