//! vINT's pseudo-VCPU budget rule (VINT §V-A, Eq. 1 and Eq. 2) and the
//! replenishment rules of VINT §III, the one definition of each that the
//! resolved system, the analysis, the simulator and the VMM all use.
//!
//! Design principle: integer nanoseconds, no rounding but the instance
//! count's ceiling; the callers say which interrupts are managed.

/// How a VCPU's (or a pseudo-VCPU's) budget comes back (VINT §III).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Replenish {
    /// Full refill at every period boundary (deferrable server): release
    /// jitter `T - C` in the analysis.
    Deferrable,
    /// What was used comes back one period after its use (sporadic
    /// server): no release jitter.
    Sporadic,
}

/// Budget of the pseudo-VCPU of one managed virtual interrupt: per
/// pseudo-VCPU period `t_p`, `ceil(t_p / t_i)` instances of its own ISR +
/// DSR demand `c_i` (VINT Eq. 1), each plus `unmanaged_isrs`, the ISRs of
/// the unmanaged virtual interrupts of the same VCPU that may run inside it
/// (VINT Eq. 2; 0 when every virtual interrupt of the VCPU is managed).
/// The paper's Eq. 2 writes `floor(t_p / t_i)`, which gives a zero budget
/// for `t_p < t_i`; the instance count keeps Eq. 1's ceiling. `t_i = 0` is
/// read as 1 ns (the callers reject it before). Saturates, never wraps.
pub fn pseudo_budget(c_i: u64, t_i: u64, t_p: u64, unmanaged_isrs: u64) -> u64 {
    t_p.div_ceil(t_i.max(1))
        .saturating_mul(c_i.saturating_add(unmanaged_isrs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eq1_and_eq2_by_hand() {
        // Eq. 1: T_p = 10 ms, T_i = 3 ms -> 4 instances of 50 us
        assert_eq!(pseudo_budget(50_000, 3_000_000, 10_000_000, 0), 200_000);
        // Eq. 2: each instance also carries 7 us of unmanaged ISRs
        assert_eq!(pseudo_budget(50_000, 3_000_000, 10_000_000, 7_000), 228_000);
        // T_p < T_i: one instance, not zero (the paper's floor would say 0)
        assert_eq!(pseudo_budget(50_000, 3_000_000, 1_000_000, 0), 50_000);
        assert_eq!(pseudo_budget(u64::MAX, 1, 2, 1), u64::MAX);
    }
}
