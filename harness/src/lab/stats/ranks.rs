//! The rank statistics under the lab's intervals (`effect`): the null
//! distributions of the Wilcoxon signed-rank and Mann–Whitney statistics,
//! the ranks that bound a 95 % interval, two-sided p-values from the same
//! statistics, and Holm's step-down over a family of them (docs/lab.md,
//! "Intervals and verdicts", "The family of cells").

/// The family-wise error rate the lab's summary keeps: the chance that
/// any cell of a run is listed as a difference when none is real.
pub const FAMILY_ALPHA: f64 = 0.05;

/// z for a two-sided 95 % interval.
const Z95: f64 = 1.959_963_984_540_054;

/// The null distribution of a rank statistic: the signed-rank statistic
/// of n pairs (the count of positive Walsh averages), or the Mann–Whitney
/// U of two samples (the count of positive differences). Exact while it is
/// cheap, its normal approximation beyond.
pub enum Null {
    /// P(statistic = 0), P(= 1), ...
    Exact(Vec<f64>),
    Normal {
        mean: f64,
        variance: f64,
    },
}

impl Null {
    /// Exact up to 60 pairs.
    pub fn signed_rank(n: usize) -> Null {
        let m = n * (n + 1) / 2;
        if n > 60 {
            return Null::Normal {
                mean: m as f64 / 2.0,
                variance: (n * (n + 1) * (2 * n + 1)) as f64 / 24.0,
            };
        }
        // p[t]: the share of subsets of {1..n} whose sum is t.
        let mut p = vec![0.0f64; m + 1];
        p[0] = 1.0;
        for r in 1..=n {
            for t in (r..=m).rev() {
                p[t] = (p[t] + p[t - r]) / 2.0;
            }
            for v in p.iter_mut().take(r) {
                *v /= 2.0;
            }
        }
        Null::Exact(p)
    }

    /// Samples of sizes na and nb: exact while na·nb <= 2500.
    pub fn rank_sum(na: usize, nb: usize) -> Null {
        let m = na * nb;
        if m > 2500 {
            return Null::Normal {
                mean: m as f64 / 2.0,
                variance: (na * nb * (na + nb + 1)) as f64 / 12.0,
            };
        }
        // N(s, l, u): arrangements of s values of one side and l of the
        // other whose statistic is u; N(s, l, u) = N(s - 1, l, u - l) +
        // N(s, l - 1, u), kept one s at a time.
        let (small, large) = if na <= nb { (na, nb) } else { (nb, na) };
        let mut prev = vec![vec![0.0f64; m + 1]; large + 1];
        for row in prev.iter_mut() {
            row[0] = 1.0;
        }
        for s in 1..=small {
            let mut cur = vec![vec![0.0f64; m + 1]; large + 1];
            cur[0][0] = 1.0;
            for l in 1..=large {
                for u in 0..=s * l {
                    let with = if u >= l { prev[l][u - l] } else { 0.0 };
                    cur[l][u] = with + cur[l - 1][u];
                }
            }
            prev = cur;
        }
        let total: f64 = prev[large].iter().sum();
        Null::Exact(prev[large].iter().map(|c| c / total).collect())
    }

    /// P(statistic <= t).
    fn cdf(&self, t: usize) -> f64 {
        match self {
            Null::Exact(p) => p.iter().take(t + 1).sum::<f64>().min(1.0),
            // With a continuity correction.
            Null::Normal { mean, variance } => {
                normal_cdf((t as f64 + 0.5 - mean) / variance.sqrt())
            }
        }
    }

    /// The rank k (1-based) of the sorted Walsh averages (or differences)
    /// that bounds the 95 % interval from below (the upper bound is the
    /// k-th from the top): the largest k with P(statistic <= k - 1) <=
    /// 2.5 %. None when no such k exists (signed rank: n < 6).
    pub fn lower_rank(&self) -> Option<usize> {
        let k = match self {
            Null::Exact(p) => {
                let mut cum = 0.0;
                let mut k = 0;
                for (t, p) in p.iter().enumerate() {
                    cum += p;
                    if cum > 0.025 + 1e-12 {
                        break;
                    }
                    k = t + 1;
                }
                k
            }
            Null::Normal { mean, variance } => {
                (mean - Z95 * variance.sqrt() - 0.5).floor().max(0.0) as usize
            }
        };
        (k >= 1).then_some(k)
    }

    /// The two-sided p-value of "no shift" from the sorted Walsh averages
    /// (or differences): twice the chance of a statistic as far out as the
    /// smaller of the counts above and below zero, zeros counted half to
    /// each. The same statistic bounds the interval, so the interval
    /// excludes 1 exactly when this is at most 5 %.
    pub fn p_two_sided(&self, sorted: &[f64]) -> f64 {
        let below = sorted.iter().filter(|v| **v < 0.0).count();
        let above = sorted.iter().filter(|v| **v > 0.0).count();
        let zeros = sorted.len() - below - above;
        let t = below.min(above) + zeros / 2;
        (2.0 * self.cdf(t)).min(1.0)
    }
}

/// The standard normal distribution function, from erfc (Numerical
/// Recipes' Chebyshev fit: relative error below 1.2e-7 everywhere, far
/// below what a p-value is read to).
fn normal_cdf(z: f64) -> f64 {
    let x = -z / std::f64::consts::SQRT_2;
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.5 * a);
    let poly = -a * a - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let erfc = t * poly.exp();
    0.5 * if x >= 0.0 { erfc } else { 2.0 - erfc }
}

/// Holm's step-down adjustment of a family's p-values, in their order: a
/// cell counts (at [`FAMILY_ALPHA`]) when its adjusted p is at most that.
/// The smallest p is compared with alpha / m, the next with alpha / (m - 1),
/// and so on until one fails; every later one fails too. It keeps the
/// family-wise error at alpha whatever the dependence between the cells
/// (docs/lab.md, "The family of cells").
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| p[i].total_cmp(&p[j]));
    let mut adjusted = vec![1.0; m];
    let mut running = 0.0f64;
    for (step, &i) in order.iter().enumerate() {
        running = running.max(((m - step) as f64 * p[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_rank_critical_values_match_the_tables() {
        // Published two-sided 5 % critical values of the Wilcoxon signed
        // rank test (T <= c rejects): n=6: 0, n=10: 8, n=20: 52, n=30: 137.
        for (n, c) in [(6, 0), (10, 8), (20, 52), (30, 137)] {
            assert_eq!(Null::signed_rank(n).lower_rank(), Some(c + 1), "n = {n}");
        }
        assert_eq!(Null::signed_rank(5).lower_rank(), None);
    }

    #[test]
    fn rank_sum_critical_values_match_the_tables() {
        // Two-sided 5 % critical values of the Mann–Whitney U test
        // (U <= c rejects): 5 and 5: 2, 10 and 10: 23, 8 and 12: 22.
        for (a, b, c) in [(5, 5, 2), (10, 10, 23), (8, 12, 22)] {
            assert_eq!(
                Null::rank_sum(a, b).lower_rank(),
                Some(c + 1),
                "{a} and {b}"
            );
        }
    }

    #[test]
    fn holm_steps_down() {
        // Sorted: 0.005 x 4, 0.01 x 3, 0.03 x 2, 0.04 x 1; each adjusted p at
        // least the one before it.
        let adjusted = holm(&[0.01, 0.04, 0.03, 0.005]);
        let want = [0.03, 0.06, 0.06, 0.02];
        for (a, w) in adjusted.iter().zip(want) {
            assert!((a - w).abs() < 1e-12, "{adjusted:?}");
        }
        assert!(holm(&[]).is_empty());
        assert_eq!(holm(&[0.9, 0.8]), vec![1.0, 1.0]);
    }
}
