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
//! so runs are reproducible bit for bit.

use alloc::vec::Vec;

use crate::id_heap::id_of;
use crate::time::Nanos;

const NIL: u32 = u32::MAX;

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
    nodes: Vec<Node>,
    root: u32,
    len: usize,
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
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn contains(&self, id: usize) -> bool {
        self.nodes.get(id).is_some_and(|n| n.present)
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
        let id = id_of(key);
        self.remove(id);
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
        if self.root == NIL {
            return None;
        }
        self.min_time_below_walk(k)
    }

    #[inline(never)]
    fn min_time_below_walk(&self, k: u128) -> Option<Nanos> {
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

    proptest! {
        /// The index answers like a linear scan, under random inserts,
        /// re-inserts and removals.
        #[test]
        fn matches_linear_scan(ops in proptest::collection::vec((0usize..40, 0u64..50, 0u64..1000, any::<bool>()), 1..300),
                               probe in 0u64..60) {
            let mut idx = PrioIndex::new();
            let mut model: alloc::collections::BTreeMap<usize, (u64, u64)> = Default::default();
            for (id, key, time, ins) in ops {
                if ins {
                    idx.insert(k(key, id), Nanos(time));
                    model.insert(id, (key, time));
                } else {
                    idx.remove(id);
                    model.remove(&id);
                }
                prop_assert_eq!(idx.len(), model.len());
                let pk = k(probe, 20);
                let want = model.iter().filter(|(&id, &(key, _))| k(key, id) < pk).map(|(_, &(_, t))| Nanos(t)).min();
                prop_assert_eq!(idx.min_time_below(pk), want);
                prop_assert_eq!(idx.min_time(), model.values().map(|&(_, t)| Nanos(t)).min());
            }
        }
    }
}
