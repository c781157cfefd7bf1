//! An index of waiting servers ordered by priority, answering "the earliest
//! replenishment among servers more urgent than `k`" in O(log n).
//!
//! What it is: a treap keyed by packed priority keys (one `u128` in the
//! order of `PriorityKey`, the server id in its low 32 bits, as the
//! scheduler's `IdHeap` keys), each node augmented with the
//! minimum event time of its subtree. The scheduler keeps every runnable
//! server that waits for budget here, so the `next_update` of QUEST-VCPU
//! Alg. 1 lines 13-17 (earliest `next-event` of a higher-priority runnable
//! VCPU) costs a root-to-leaf walk instead of Quest's list scan.
//!
//! Design principles: arena storage indexed by server id (no allocation per
//! operation once grown); deterministic heap priorities (a hash of the id),
//! so runs are reproducible bit for bit. Up to `SMALL` entries (a CPU's
//! few servers waiting for budget, the common case) the index is a list
//! scanned in full: a replenishment then costs a store, not three splits
//! and merges of the treap (for speed: those were 7-10 % of the sporadic
//! scenarios' instructions). Past `SMALL` the entries move to the treap
//! and stay there, so the O(log n) bound holds for large sets.

use alloc::vec::Vec;

use crate::id_heap::id_of;
use crate::time::Nanos;

const NIL: u32 = u32::MAX;

/// Most entries the list form holds (one more, and they move to the
/// treap).
const SMALL: usize = 16;

#[derive(Clone, Debug)]
struct Node {
    key: u128,
    time: Nanos,
    heap: u64,
    left: u32,
    right: u32,
    min: Nanos,
    present: bool,
}

#[derive(Clone, Debug)]
pub struct PrioIndex {
    /// The treap (once `large`): nodes by server id.
    nodes: Vec<Node>,
    root: u32,
    len: usize,
    /// The list form (while not `large`): the entries (key, time) in no
    /// order, and each server id's place in it (`NIL`: absent).
    list: Vec<(u128, Nanos)>,
    at: Vec<u32>,
    large: bool,
}

impl Default for PrioIndex {
    fn default() -> PrioIndex {
        PrioIndex::new()
    }
}

impl PrioIndex {
    pub fn new() -> PrioIndex {
        PrioIndex {
            nodes: Vec::new(),
            root: NIL,
            len: 0,
            list: Vec::new(),
            at: Vec::new(),
            large: false,
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn contains(&self, id: usize) -> bool {
        if self.large {
            self.nodes.get(id).is_some_and(|n| n.present)
        } else {
            self.at.get(id).is_some_and(|&p| p != NIL)
        }
    }

    fn min_of(&self, t: u32) -> Nanos {
        if t == NIL {
            Nanos::MAX
        } else {
            self.nodes[t as usize].min
        }
    }

    fn pull(&mut self, t: u32) {
        let (l, r, time) = {
            let n = &self.nodes[t as usize];
            (n.left, n.right, n.time)
        };
        let m = time.min(self.min_of(l)).min(self.min_of(r));
        self.nodes[t as usize].min = m;
    }

    /// Split `t` into (keys < k, keys >= k).
    fn split(&mut self, t: u32, k: u128) -> (u32, u32) {
        if t == NIL {
            return (NIL, NIL);
        }
        if self.nodes[t as usize].key < k {
            let r = self.nodes[t as usize].right;
            let (a, b) = self.split(r, k);
            self.nodes[t as usize].right = a;
            self.pull(t);
            (t, b)
        } else {
            let l = self.nodes[t as usize].left;
            let (a, b) = self.split(l, k);
            self.nodes[t as usize].left = b;
            self.pull(t);
            (a, t)
        }
    }

    /// Merge two treaps where every key of `a` is below every key of `b`.
    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.nodes[a as usize].heap > self.nodes[b as usize].heap {
            let r = self.nodes[a as usize].right;
            let m = self.merge(r, b);
            self.nodes[a as usize].right = m;
            self.pull(a);
            a
        } else {
            let l = self.nodes[b as usize].left;
            let m = self.merge(a, l);
            self.nodes[b as usize].left = m;
            self.pull(b);
            b
        }
    }

    /// Insert server `id_of(key)` with event time `time` (replaces an
    /// existing entry for the same id).
    pub fn insert(&mut self, key: u128, time: Nanos) {
        if self.large {
            return self.insert_node(key, time);
        }
        let id = id_of(key);
        if self.at.len() <= id {
            self.at.resize(id + 1, NIL);
        }
        match self.at[id] {
            NIL if self.list.len() < SMALL => {
                self.at[id] = self.list.len() as u32;
                self.list.push((key, time));
                self.len += 1;
            }
            NIL => {
                self.grow();
                self.insert_node(key, time);
            }
            p => self.list[p as usize] = (key, time),
        }
    }

    /// The list's entries into the treap (once, when it is full).
    #[cold]
    fn grow(&mut self) {
        self.large = true;
        self.len = 0;
        self.at = Vec::new();
        for (key, time) in core::mem::take(&mut self.list) {
            self.insert_node(key, time);
        }
    }

    /// `insert` into the treap.
    fn insert_node(&mut self, key: u128, time: Nanos) {
        let id = id_of(key);
        self.remove_node(id);
        if self.nodes.len() <= id {
            self.nodes.resize(
                id + 1,
                Node {
                    key,
                    time: Nanos::MAX,
                    heap: 0,
                    left: NIL,
                    right: NIL,
                    min: Nanos::MAX,
                    present: false,
                },
            );
        }
        self.nodes[id] = Node {
            key,
            time,
            heap: crate::rng::mix((id as u64).wrapping_add(0x9E37_79B9_7F4A_7C15)),
            left: NIL,
            right: NIL,
            min: time,
            present: true,
        };
        let root = self.root;
        let (l, r) = self.split(root, key);
        let m = self.merge(l, id as u32);
        self.root = self.merge(m, r);
        self.len += 1;
    }

    /// Remove server `id` if present.
    pub fn remove(&mut self, id: usize) {
        if self.large {
            return self.remove_node(id);
        }
        let Some(&p) = self.at.get(id).filter(|&&p| p != NIL) else {
            return;
        };
        self.list.swap_remove(p as usize);
        if let Some(&(moved, _)) = self.list.get(p as usize) {
            self.at[id_of(moved)] = p;
        }
        self.at[id] = NIL;
        self.len -= 1;
    }

    /// `remove` from the treap.
    fn remove_node(&mut self, id: usize) {
        if !self.contains(id) {
            return;
        }
        let key = self.nodes[id].key;
        let root = self.root;
        let (l, r) = self.split(root, key);
        // `r` starts with `key` itself: split it off at the next key (keys
        // are distinct, their ids below 2^32 - 1).
        let (mid, r2) = self.split(r, key + 1);
        debug_assert_eq!(mid, id as u32);
        self.nodes[id].present = false;
        self.root = self.merge(l, r2);
        self.len -= 1;
    }

    /// Earliest event time among entries with key strictly below `k`.
    /// (The empty index, the scheduler's common case, is answered inline.)
    #[inline(always)]
    pub fn min_time_below(&self, k: u128) -> Option<Nanos> {
        if self.len == 0 {
            return None;
        }
        self.min_time_below_walk(k)
    }

    #[inline(never)]
    fn min_time_below_walk(&self, k: u128) -> Option<Nanos> {
        if !self.large {
            return self
                .list
                .iter()
                .filter(|&&(key, _)| key < k)
                .map(|&(_, t)| t)
                .min();
        }
        let mut best = Nanos::MAX;
        let mut t = self.root;
        while t != NIL {
            let n = &self.nodes[t as usize];
            if n.key < k {
                best = best.min(n.time).min(self.min_of(n.left));
                t = n.right;
            } else {
                t = n.left;
            }
        }
        (best != Nanos::MAX).then_some(best)
    }

    /// Earliest event time of all entries.
    #[cfg(test)]
    pub fn min_time(&self) -> Option<Nanos> {
        if !self.large {
            return self.list.iter().map(|&(_, t)| t).min();
        }
        let m = self.min_of(self.root);
        (m != Nanos::MAX).then_some(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn k(key: u64, id: usize) -> u128 {
        (u128::from(key) << 64) | id as u128
    }

    /// Random inserts, re-inserts and removals of ids below `ids`, the
    /// index's answers compared with a scan of a map after each step;
    /// returns whether the index ended in its treap form.
    fn against_scan(
        ops: Vec<(usize, u64, u64, bool)>,
        ids: usize,
        probe: u64,
    ) -> Result<bool, TestCaseError> {
        let mut idx = PrioIndex::new();
        let mut model: alloc::collections::BTreeMap<usize, (u64, u64)> = Default::default();
        for (id, key, time, ins) in ops {
            let id = id % ids;
            if ins {
                idx.insert(k(key, id), Nanos(time));
                model.insert(id, (key, time));
            } else {
                idx.remove(id);
                model.remove(&id);
            }
            prop_assert_eq!(idx.len(), model.len());
            for i in 0..ids {
                prop_assert_eq!(idx.contains(i), model.contains_key(&i));
            }
            // a probe between keys, and each entry's own key (strictly
            // below: the entry itself is not counted)
            let probes = core::iter::once(k(probe, 20))
                .chain(model.iter().map(|(&id, &(key, _))| k(key, id)));
            for pk in probes {
                let want = model
                    .iter()
                    .filter(|(&id, &(key, _))| k(key, id) < pk)
                    .map(|(_, &(_, t))| Nanos(t))
                    .min();
                prop_assert_eq!(idx.min_time_below(pk), want);
            }
            prop_assert_eq!(idx.min_time(), model.values().map(|&(_, t)| Nanos(t)).min());
        }
        Ok(idx.large)
    }

    proptest! {
        /// The index answers like a linear scan, under random inserts,
        /// re-inserts and removals of up to 40 servers (the list form, its
        /// move to the treap, and the treap).
        #[test]
        fn matches_linear_scan(ops in proptest::collection::vec((0usize..40, 0u64..50, 0u64..1000, any::<bool>()), 1..300),
                               probe in 0u64..60) {
            against_scan(ops, 40, probe)?;
        }

        /// The same with at most `SMALL` servers: the list form only,
        /// over long runs.
        #[test]
        fn list_form_matches_linear_scan(ops in proptest::collection::vec((0usize..SMALL, 0u64..50, 0u64..1000, any::<bool>()), 1..300),
                                         probe in 0u64..60) {
            prop_assert!(!against_scan(ops, SMALL, probe)?);
        }
    }

    /// Past `SMALL` entries the index is a treap, and stays one.
    #[test]
    fn grows_into_the_treap_once() {
        let mut idx = PrioIndex::new();
        for id in 0..=SMALL {
            idx.insert(k(id as u64, id), Nanos(id as u64));
        }
        assert!(idx.large);
        for id in 0..=SMALL {
            idx.remove(id);
        }
        assert!(idx.large && idx.len() == 0);
        assert_eq!(idx.min_time_below(u128::MAX), None);
    }
}
