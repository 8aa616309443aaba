//! B/A comparisons that tell an effect from noise: a 95 % confidence
//! interval for the ratio of B to A, and a verdict in words.
//!
//! The method (docs/lab.md, "Intervals and verdicts"): everything is done
//! on log ratios, so that B/A and A/B give mirror intervals, and with
//! Hodges–Lehmann estimators and their rank-based intervals:
//! - paired samples (A and B alternate, so sample i of A and of B ran
//!   under the same conditions): the log ratios ln(b_i / a_i), their Walsh
//!   averages, and the interval from the Wilcoxon signed-rank distribution
//!   (exact up to 60 pairs, normal beyond);
//! - unpaired samples (key generation: every key's primes are random, so
//!   pairing two keys carries nothing): the differences ln b_j - ln a_i
//!   of every pair, and the interval from the Mann–Whitney distribution.
//!
//! Why not a bootstrap: it is random (two reports of the same samples
//! would differ), and with the few samples a quick lab takes its coverage
//! falls well short of 95 %. The rank intervals are exact for any
//! continuous distribution symmetric about its centre (paired) or any
//! shift (unpaired), and one outlier (a neighbour's burst on a shared
//! machine, a page-cache miss) moves them little.
//!
//! Each comparison also carries the p-value of the same rank test (the
//! interval excludes 1 exactly when p <= 5 %), so that a run's cells can
//! be tested as a family: [`holm`] (docs/lab.md, "The family of cells").

/// Whether a larger figure is better (operations per second) or worse
/// (seconds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    Lower,
    Higher,
}

/// A B/A comparison.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Comparison {
    /// The Hodges–Lehmann estimate of B/A.
    pub ratio: f64,
    /// The 95 % interval of B/A.
    pub lo: f64,
    pub hi: f64,
    /// Pairs (paired), or the smaller side's samples (unpaired).
    pub n: usize,
    pub paired: bool,
    /// Two-sided p-value of the rank test of B/A = 1 that the interval
    /// inverts (signed rank, or Mann–Whitney).
    pub p: f64,
}

use super::ranks::Null;
pub use super::ranks::{holm, FAMILY_ALPHA};

/// The smallest sample for which a 95 % rank interval exists: with 5
/// pairs or fewer, even all five log ratios on one side happen by chance
/// more often than 1 time in 40.
pub const MIN_PAIRS: usize = 6;

impl Comparison {
    /// From paired samples (`a[i]` and `b[i]` taken one after the other);
    /// None with fewer than [`MIN_PAIRS`] usable pairs.
    pub fn paired(a: &[f64], b: &[f64]) -> Option<Comparison> {
        let logs: Vec<f64> = a
            .iter()
            .zip(b)
            .filter(|(x, y)| **x > 0.0 && **y > 0.0 && x.is_finite() && y.is_finite())
            .map(|(x, y)| (y / x).ln())
            .collect();
        let n = logs.len();
        if n < MIN_PAIRS {
            return None;
        }
        let mut walsh = Vec::with_capacity(n * (n + 1) / 2);
        for i in 0..n {
            for j in i..n {
                walsh.push((logs[i] + logs[j]) / 2.0);
            }
        }
        walsh.sort_by(|x, y| x.total_cmp(y));
        let null = Null::signed_rank(n);
        let k = null.lower_rank()?;
        let m = walsh.len();
        Some(Comparison {
            ratio: median_sorted(&walsh).exp(),
            lo: walsh[k - 1].exp(),
            hi: walsh[m - k].exp(),
            n,
            paired: true,
            p: null.p_two_sided(&walsh),
        })
    }

    /// From independent samples; None when either side has fewer than 3
    /// or the sizes allow no 95 % interval.
    pub fn unpaired(a: &[f64], b: &[f64]) -> Option<Comparison> {
        let la: Vec<f64> = a
            .iter()
            .filter(|x| **x > 0.0 && x.is_finite())
            .map(|x| x.ln())
            .collect();
        let lb: Vec<f64> = b
            .iter()
            .filter(|x| **x > 0.0 && x.is_finite())
            .map(|x| x.ln())
            .collect();
        if la.len() < 3 || lb.len() < 3 {
            return None;
        }
        let mut d = Vec::with_capacity(la.len() * lb.len());
        for x in &la {
            for y in &lb {
                d.push(y - x);
            }
        }
        d.sort_by(|x, y| x.total_cmp(y));
        let null = Null::rank_sum(la.len(), lb.len());
        let k = null.lower_rank()?;
        let m = d.len();
        Some(Comparison {
            ratio: median_sorted(&d).exp(),
            lo: d[k - 1].exp(),
            hi: d[m - k].exp(),
            n: la.len().min(lb.len()),
            paired: false,
            p: null.p_two_sided(&d),
        })
    }

    /// Only an interval that excludes 1 counts as a difference.
    pub fn differs(&self) -> bool {
        self.lo > 1.0 || self.hi < 1.0
    }

    /// Half the interval's width, in percent of the estimate (on the log
    /// scale, so symmetric): the precision the sample reached, and about
    /// the smallest difference it could have detected.
    pub fn half_width_pct(&self) -> f64 {
        ((self.hi.ln() - self.lo.ln()) / 2.0).exp_m1() * 100.0
    }

    /// The verdict for a column where `better` says which way is better.
    pub fn verdict(&self, better: Better) -> Verdict {
        if !self.differs() {
            let within = ((1.0 - self.lo).max(self.hi - 1.0) * 100.0).max(0.0);
            return Verdict::NoDifference { within_pct: within };
        }
        // How much faster or slower B is, as a percentage of A, at both
        // ends of the interval.
        let (near, far) = match better {
            // Seconds: ratio < 1 is faster by 1 - ratio.
            Better::Lower if self.hi < 1.0 => ((1.0 - self.hi) * 100.0, (1.0 - self.lo) * 100.0),
            Better::Lower => ((self.lo - 1.0) * 100.0, (self.hi - 1.0) * 100.0),
            Better::Higher if self.lo > 1.0 => ((self.lo - 1.0) * 100.0, (self.hi - 1.0) * 100.0),
            Better::Higher => ((1.0 - self.hi) * 100.0, (1.0 - self.lo) * 100.0),
        };
        let faster = match better {
            Better::Lower => self.hi < 1.0,
            Better::Higher => self.lo > 1.0,
        };
        // Times read as factors: B taking 45 % of A's time is "2.2× as
        // fast", which "faster by 55 %" hides.
        if better == Better::Lower {
            return if faster {
                Verdict::AsFast {
                    x: 1.0 / self.ratio,
                    lo: 1.0 / self.hi,
                    hi: 1.0 / self.lo,
                }
            } else {
                Verdict::TimeSlower {
                    x: self.ratio,
                    lo: self.lo,
                    hi: self.hi,
                }
            };
        }
        if faster {
            Verdict::Faster {
                from_pct: near,
                to_pct: far,
            }
        } else {
            Verdict::Slower {
                from_pct: near,
                to_pct: far,
            }
        }
    }

    /// About how many samples (pairs, or keys per side) would bring the
    /// half-width to `target_pct`: the width shrinks as 1/sqrt(n).
    pub fn samples_for(&self, target_pct: f64) -> usize {
        let now = self.half_width_pct();
        if now <= target_pct || target_pct <= 0.0 {
            return self.n;
        }
        let scale = (now / target_pct).powi(2);
        ((self.n as f64) * scale).ceil().min(1e9) as usize
    }
}

/// A ratio as the reports write one: three significant digits.
pub fn times(v: f64) -> String {
    if !v.is_finite() {
        "-".into()
    } else if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// Three significant digits, no exponent.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let a = v.abs();
    if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else if a == 0.0 {
        "0".into()
    } else {
        let digits = (2 - a.log10().floor() as i32).clamp(3, 9) as usize;
        format!("{v:.digits$}")
    }
}

/// A duration in a readable unit.
pub fn dur(secs: f64) -> String {
    if secs >= 1.0 {
        format!("{} s", num(secs))
    } else if secs >= 1e-3 {
        format!("{} ms", num(secs * 1e3))
    } else {
        format!("{} µs", num(secs * 1e6))
    }
}

/// A verdict in words.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Verdict {
    Faster {
        from_pct: f64,
        to_pct: f64,
    },
    Slower {
        from_pct: f64,
        to_pct: f64,
    },
    /// A time column where B is faster: A's time over B's, with its
    /// interval ("B 2.2× as fast [1.6–2.9×]").
    AsFast {
        x: f64,
        lo: f64,
        hi: f64,
    },
    /// A time column where B is slower: B's time over A's ("B slower:
    /// 1.05× A's time [1.04–1.06×]").
    TimeSlower {
        x: f64,
        lo: f64,
        hi: f64,
    },
    /// The interval contains 1; it reaches this far from 1 (percent).
    NoDifference {
        within_pct: f64,
    },
}

impl Verdict {
    /// "B faster by 3.1–5.2 %", "B slower by ...", "no difference
    /// detected (±2.3 %)".
    pub fn text(&self) -> String {
        match *self {
            Verdict::Faster { from_pct, to_pct } => {
                format!("B faster by {}–{} %", pct(from_pct), pct(to_pct))
            }
            Verdict::Slower { from_pct, to_pct } => {
                format!("B slower by {}–{} %", pct(from_pct), pct(to_pct))
            }
            Verdict::AsFast { x, lo, hi } => {
                format!("B {}× as fast [{}–{}×]", times(x), times(lo), times(hi))
            }
            Verdict::TimeSlower { x, lo, hi } => {
                format!(
                    "B slower: {}× A's time [{}–{}×]",
                    times(x),
                    times(lo),
                    times(hi)
                )
            }
            Verdict::NoDifference { within_pct } => {
                format!("no difference detected (±{} %)", pct(within_pct))
            }
        }
    }

    /// A stable word for JSON and CSV.
    pub fn key(&self) -> &'static str {
        match self {
            Verdict::Faster { .. } | Verdict::AsFast { .. } => "B faster",
            Verdict::Slower { .. } | Verdict::TimeSlower { .. } => "B slower",
            Verdict::NoDifference { .. } => "no difference detected",
        }
    }
}

fn pct(v: f64) -> String {
    if (v * 10.0).round() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

fn median_sorted(v: &[f64]) -> f64 {
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (tests only): xorshift, and
    /// Box–Muller for normal deviates.
    struct Rng(u64);
    impl Rng {
        fn uniform(&mut self) -> f64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }
        fn normal(&mut self) -> f64 {
            let (u, v) = (self.uniform(), self.uniform());
            (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
        }
        /// A heavy-tailed time: log-normal with an occasional 3x outlier,
        /// as a shared machine's.
        fn noisy_time(&mut self, centre: f64, sd: f64) -> f64 {
            let t = centre * (sd * self.normal()).exp();
            if self.uniform() < 0.05 {
                t * 3.0
            } else {
                t
            }
        }
    }

    #[test]
    fn verdicts_read_the_right_way_round() {
        let c = |lo: f64, hi: f64| Comparison {
            ratio: (lo * hi).sqrt(),
            lo,
            hi,
            n: 10,
            paired: true,
            p: 0.01,
        };
        assert_eq!(c(0.90, 0.95).verdict(Better::Lower).key(), "B faster");
        assert_eq!(c(0.90, 0.95).verdict(Better::Higher).key(), "B slower");
        assert_eq!(c(1.02, 1.04).verdict(Better::Higher).key(), "B faster");
        assert_eq!(
            c(0.98, 1.03).verdict(Better::Lower).key(),
            "no difference detected"
        );
        // Times read as factors (A's time over B's), rates as percentages.
        assert_eq!(
            c(0.90, 0.95).verdict(Better::Lower).text(),
            "B 1.08× as fast [1.05–1.11×]"
        );
        assert_eq!(
            c(0.40, 0.50).verdict(Better::Lower).text(),
            "B 2.24× as fast [2.00–2.50×]"
        );
        assert_eq!(
            c(1.04, 1.06).verdict(Better::Lower).text(),
            "B slower: 1.05× A's time [1.04–1.06×]"
        );
        assert_eq!(
            c(1.02, 1.04).verdict(Better::Higher).text(),
            "B faster by 2.0–4.0 %"
        );
        assert_eq!(
            c(0.98, 1.03).verdict(Better::Lower).text(),
            "no difference detected (±3.0 %)"
        );
    }

    /// A/A: B drawn exactly as A. Over 2,000 comparisons, each of 12 pairs
    /// of noisy times, at most about 5 % may be called a difference (the
    /// exact interval's coverage is at least 95 %: here 4.3 %-ish is
    /// expected, and the bound allows for the sample's own chance).
    #[test]
    fn a_against_a_calls_at_most_the_expected_share_a_difference() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for (paired, runs) in [(true, 2000), (false, 1000)] {
            let mut called = 0;
            for _ in 0..runs {
                let a: Vec<f64> = (0..12).map(|_| rng.noisy_time(1.0, 0.08)).collect();
                let b: Vec<f64> = (0..12).map(|_| rng.noisy_time(1.0, 0.08)).collect();
                let c = if paired {
                    Comparison::paired(&a, &b)
                } else {
                    Comparison::unpaired(&a, &b)
                }
                .unwrap();
                called += usize::from(c.differs());
            }
            let share = called as f64 / runs as f64;
            // 5 % plus three binomial standard deviations.
            let bound = 0.05 + 3.0 * (0.05 * 0.95 / runs as f64).sqrt();
            assert!(
                share <= bound,
                "paired {paired}: {share} called a difference"
            );
        }
    }

    /// A known slowdown: B 6 % slower. With 30 pairs of 2 % noise it is
    /// called "B slower", and the intervals contain the true ratio about
    /// 95 % of the time.
    #[test]
    fn a_known_slowdown_is_found_and_covered() {
        let mut rng = Rng(42);
        let truth = 1.06;
        let (mut slower, mut covered) = (0, 0);
        let runs = 500;
        for _ in 0..runs {
            let mut a = Vec::new();
            let mut b = Vec::new();
            for _ in 0..30 {
                // A common drift (the machine's load) that pairing cancels.
                let drift = (0.1 * rng.normal()).exp();
                a.push(drift * rng.noisy_time(1.0, 0.02));
                b.push(drift * truth * rng.noisy_time(1.0, 0.02));
            }
            let c = Comparison::paired(&a, &b).unwrap();
            slower += usize::from(c.verdict(Better::Lower).key() == "B slower");
            covered += usize::from(c.lo <= truth && truth <= c.hi);
        }
        assert!(
            slower >= runs * 95 / 100,
            "called slower {slower} of {runs}"
        );
        assert!(covered >= runs * 92 / 100, "covered {covered} of {runs}");
    }

    /// The test and the interval are one: the interval excludes 1 exactly
    /// when p <= 5 %, exact and normal, paired and unpaired.
    #[test]
    fn p_values_agree_with_the_intervals() {
        let mut rng = Rng(7);
        for (paired, n) in [(true, 12), (true, 80), (false, 10), (false, 60)] {
            for _ in 0..200 {
                let shift = 1.0 + 0.04 * rng.normal();
                let a: Vec<f64> = (0..n).map(|_| rng.noisy_time(1.0, 0.05)).collect();
                let b: Vec<f64> = (0..n).map(|_| shift * rng.noisy_time(1.0, 0.05)).collect();
                let c = if paired {
                    Comparison::paired(&a, &b)
                } else {
                    Comparison::unpaired(&a, &b)
                }
                .unwrap();
                assert!((0.0..=1.0).contains(&c.p), "{c:?}");
                assert_eq!(
                    c.differs(),
                    c.p <= 0.05 + 1e-9,
                    "paired {paired}, n {n}: {c:?}"
                );
            }
        }
        // Ten pairs all one way: the exact p is 2 / 2^10.
        let a = [1.0; 10];
        let b: Vec<f64> = (1..=10).map(|i| 1.0 + 0.01 * i as f64).collect();
        let c = Comparison::paired(&a, &b).unwrap();
        assert!((c.p - 2.0 / 1024.0).abs() < 1e-12, "{c:?}");
    }

    /// A/A over whole runs: 300 simulated quick labs of 40 paired cells
    /// (12 pairs each) and 8 key-generation cells (15 keys a side, heavy
    /// tails), nothing different. Cell by cell, most runs would list at
    /// least one chance difference; after Holm's control, at most 5 % of
    /// runs may list any (plus three standard deviations).
    #[test]
    fn a_against_a_over_a_whole_run_lists_nothing_after_family_control() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let runs = 300;
        let (mut raw, mut family) = (0, 0);
        for _ in 0..runs {
            let mut p = Vec::new();
            let mut excluded = false;
            for cell in 0..48 {
                let (paired, n, sd) = if cell < 40 {
                    (true, 12, 0.05)
                } else {
                    (false, 15, 0.6)
                };
                let a: Vec<f64> = (0..n).map(|_| rng.noisy_time(1.0, sd)).collect();
                let b: Vec<f64> = (0..n).map(|_| rng.noisy_time(1.0, sd)).collect();
                let c = if paired {
                    Comparison::paired(&a, &b)
                } else {
                    Comparison::unpaired(&a, &b)
                }
                .unwrap();
                excluded |= c.differs();
                p.push(c.p);
            }
            raw += usize::from(excluded);
            family += usize::from(holm(&p).iter().any(|&q| q <= FAMILY_ALPHA));
        }
        assert!(
            raw >= runs * 7 / 10,
            "raw intervals listed something in {raw} of {runs}"
        );
        let bound = 0.05 + 3.0 * (0.05 * 0.95 / runs as f64).sqrt();
        assert!(
            family as f64 / runs as f64 <= bound,
            "Holm listed something in {family} of {runs}"
        );
    }

    #[test]
    fn too_few_samples_give_no_interval() {
        assert!(Comparison::paired(&[1.0; 5], &[1.0; 5]).is_none());
        assert!(Comparison::unpaired(&[1.0, 2.0], &[1.0, 2.0, 3.0]).is_none());
        let c = Comparison::paired(&[1.0; 8], &[1.0; 8]).unwrap();
        assert_eq!((c.ratio, c.lo, c.hi), (1.0, 1.0, 1.0));
        assert!(!c.differs());
    }

    #[test]
    fn samples_needed_scale_with_the_square_of_the_precision() {
        let c = Comparison {
            ratio: 1.0,
            lo: 0.8,
            hi: 1.25,
            n: 10,
            paired: false,
            p: 0.5,
        };
        // ±25 % now: ±5 % needs about 25 times as many.
        let need = c.samples_for(5.0);
        assert!((240..=260).contains(&need), "{need}");
    }
}
