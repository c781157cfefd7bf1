//! QUEST-VCPU Eq. 1-3: temporal isolation of Main VCPUs (sporadic servers)
//! and I/O VCPUs (PIBS) on one PCPU by the Liu-Layland bound, each I/O VCPU
//! counted at its worst-case utilization `(2 - U) U` (Eq. 3).

/// The test's terms and verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct Eq1 {
    /// `sum C_i / T_i + sum (2 - U_j) U_j`.
    pub demand: f64,
    /// `n (2^(1/n) - 1)` with `n` the number of Main VCPUs.
    pub bound: f64,
    /// `bound - demand` (negative: the test fails).
    pub slack: f64,
    pub passes: bool,
}

/// QUEST-VCPU Eq. 1 for Main VCPUs `(C, T)` and I/O VCPU utilizations `U`.
pub fn eq1(main: &[(u64, u64)], io: &[f64]) -> Eq1 {
    let n = main.len().max(1) as f64;
    let demand: f64 = main.iter().map(|&(c, t)| c as f64 / t as f64).sum::<f64>()
        + io.iter().map(|u| (2.0 - u) * u).sum::<f64>();
    let bound = n * (2f64.powf(1.0 / n) - 1.0);
    Eq1 {
        demand,
        bound,
        slack: bound - demand,
        passes: demand <= bound,
    }
}

/// QUEST-VCPU Eq. 3: worst-case utilization of a PIBS I/O VCPU over a
/// window `C_max / U`.
pub fn pibs_worst_utilization(u: f64) -> f64 {
    (2.0 - u) * u
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two Main VCPUs 1/4 and 1/5, one I/O VCPU of 10 %: demand 0.25 + 0.2 +
    /// 1.9 * 0.1 = 0.64; bound 2 (sqrt 2 - 1) = 0.8284.
    #[test]
    fn eq1_by_hand() {
        let r = eq1(&[(1, 4), (1, 5)], &[0.1]);
        assert!((r.demand - 0.64).abs() < 1e-12);
        assert!((r.bound - 0.828_427_124_746_190_1).abs() < 1e-12);
        assert!(r.passes && (r.slack - 0.188_427_124_746_190_1).abs() < 1e-12);
        assert!(!eq1(&[(1, 2), (1, 3)], &[0.1]).passes);
        assert_eq!(pibs_worst_utilization(0.5), 0.75); // Figure 2: 3 units in 4
    }
}
