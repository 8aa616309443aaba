//! When the lab stops sampling a cell (docs/lab.md, "Sampling"): the
//! precision target, the rule that spends a step's time budget where it
//! buys precision, and the words that say why sampling ended.

use super::effect::{Comparison, FAMILY_ALPHA, MIN_PAIRS};

/// The half-width the lab aims at for every B/A interval (percent).
pub const PRECISION_TARGET_PCT: f64 = 5.0;

/// Why a cell's sampling ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// A fixed count: unpaired cells, or `--cell-budget 0`.
    Planned,
    /// Every interval of the step within the target, and every interval
    /// that excludes 1 clear enough to count in the run's family.
    Precise,
    RoundLimit,
    Budget,
    /// At the spread seen so far, the target would take more rounds than
    /// the limit allows or more time than the budget: more rounds would
    /// not buy it (`speed -multi` on a machine whose every core it loads).
    OutOfReach,
}

impl Ended {
    /// The words of the reports; for a cell stopped early, how many rounds
    /// its interval would need at this spread.
    pub fn describe(self, c: Option<&Comparison>) -> String {
        match self {
            Ended::Planned => "planned runs".into(),
            Ended::Precise => "precision target met".into(),
            Ended::RoundLimit => "round limit".into(),
            Ended::Budget => "time budget spent".into(),
            Ended::OutOfReach => match c {
                Some(c) if c.half_width_pct() > PRECISION_TARGET_PCT => format!(
                    "stopped early: ±{PRECISION_TARGET_PCT:.0} % out of reach on this host \
                     (±{:.0} % after {} rounds; about {} rounds at this spread)",
                    c.half_width_pct(),
                    c.n,
                    c.samples_for(PRECISION_TARGET_PCT)
                ),
                _ => "stopped early: the step's other cells could not reach the target".into(),
            },
        }
    }
}

/// When a step stops sampling: a paired step takes at least MIN_PAIRS
/// rounds (no 95 % interval exists below), then more until each of its
/// cells is settled, its time budget is spent, four times its planned
/// rounds have run, or the cells left unsettled could not reach the
/// target within what remains. Without a budget, or for unpaired cells,
/// the planned rounds exactly.
pub struct SamplingRule {
    adaptive: bool,
    min_rounds: usize,
    max_rounds: usize,
    budget_s: f64,
    /// Pairs a paired cell needs before its p-value can count at all in
    /// a family of the run's planned size (docs/lab.md, "The family of
    /// cells"): the least p of n pairs is 2 / 2^n, so 6 pairs (3.1 %) can
    /// never pass Holm's first step in a family of 2 or more.
    countable_pairs: usize,
}

/// The fewest pairs whose least possible two-sided signed-rank p-value,
/// 2 / 2^n, is within Holm's first threshold in a family of `size` cells.
pub fn countable_pairs(size: usize) -> usize {
    let threshold = FAMILY_ALPHA / size.max(1) as f64;
    (MIN_PAIRS..64)
        .find(|&n| 2.0 / 2f64.powi(n as i32) <= threshold)
        .unwrap_or(64)
}

impl SamplingRule {
    pub fn new(planned: usize, budget_s: f64, paired: bool, family_size: usize) -> SamplingRule {
        let adaptive = paired && budget_s > 0.0;
        SamplingRule {
            adaptive,
            min_rounds: if adaptive {
                planned.max(MIN_PAIRS)
            } else {
                planned
            },
            max_rounds: if adaptive {
                (planned * 4).max(MIN_PAIRS * 4)
            } else {
                planned
            },
            budget_s,
            countable_pairs: countable_pairs(family_size),
        }
    }

    /// Whether a cell needs no more samples: its interval is within the
    /// target, and if it excludes 1, it has the pairs a p-value needs to be
    /// able to count in the family. The second condition extends a cell
    /// that looks different to a fixed count, never "until significant":
    /// a cell judged at one fixed size keeps its test's error rate, where
    /// stopping the moment p crosses a threshold would inflate it.
    pub fn settled(&self, c: &Comparison) -> bool {
        c.half_width_pct() <= PRECISION_TARGET_PCT
            && (!c.differs() || !c.paired || c.n >= self.countable_pairs)
    }

    /// Whether more rounds cannot settle the cell: the rounds its interval
    /// would need for the target (the width shrinks as 1/√n) exceed the
    /// round limit, or the time those rounds would take at the pace so far
    /// exceeds the budget.
    fn out_of_reach(&self, c: &Comparison, rounds: usize, elapsed_s: f64) -> bool {
        let needed = c.samples_for(PRECISION_TARGET_PCT);
        let pace = elapsed_s / rounds.max(1) as f64;
        needed > self.max_rounds || pace * needed as f64 > self.budget_s
    }

    /// A paired cell that differs but has fewer pairs than can count: its
    /// extension to `countable_pairs` is a few rounds, and without it the
    /// difference could never be listed, however large (a 300 µs slowdown
    /// at ±10 % after 6 rounds: p = 3.1 % at best).
    fn short_of_countable(&self, c: &Comparison) -> bool {
        c.paired && c.differs() && c.n < self.countable_pairs
    }

    /// Why sampling ends after `rounds` rounds and `elapsed_s` seconds, or
    /// None to go on. `cells` (the comparisons of the step's cells that
    /// have not failed; None: too few samples) is asked for only once the
    /// minimum is run.
    pub fn ended(
        &self,
        rounds: usize,
        elapsed_s: f64,
        cells: impl FnOnce() -> Vec<Option<Comparison>>,
    ) -> Option<Ended> {
        if rounds < self.min_rounds {
            return None;
        }
        if !self.adaptive {
            return Some(Ended::Planned);
        }
        let cells = cells();
        let unsettled: Vec<&Comparison> = cells
            .iter()
            .flatten()
            .filter(|c| !self.settled(c))
            .collect();
        let missing = cells.iter().any(Option::is_none);
        if unsettled.is_empty() && !missing {
            Some(Ended::Precise)
        } else if rounds >= self.max_rounds {
            Some(Ended::RoundLimit)
        } else if elapsed_s >= self.budget_s {
            Some(Ended::Budget)
        } else if !missing
            && unsettled
                .iter()
                .all(|c| self.out_of_reach(c, rounds, elapsed_s) && !self.short_of_countable(c))
        {
            Some(Ended::OutOfReach)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(lo: f64, hi: f64, n: usize, p: f64) -> Comparison {
        Comparison {
            ratio: (lo * hi).sqrt(),
            lo,
            hi,
            n,
            paired: true,
            p,
        }
    }

    #[test]
    fn the_sampling_rule() {
        // Paired with a budget: at least 6 rounds, then until settled, the
        // round limit (4 x planned, at least 24) or the budget.
        let r = SamplingRule::new(3, 20.0, true, 10);
        let precise = || vec![Some(cell(0.98, 1.03, 6, 0.4))];
        let wide = || vec![Some(cell(0.93, 1.08, 6, 0.4))];
        assert_eq!(r.ended(5, 100.0, precise), None);
        assert_eq!(r.ended(6, 0.0, precise), Some(Ended::Precise));
        assert_eq!(r.ended(6, 0.0, wide), None);
        assert_eq!(r.ended(6, 20.0, wide), Some(Ended::Budget));
        assert_eq!(r.ended(24, 0.0, wide), Some(Ended::RoundLimit));
        // A cell without an interval yet is never settled.
        assert_eq!(r.ended(6, 0.0, || vec![None]), None);
        // Unpaired, or no budget: the planned rounds exactly.
        for r in [
            SamplingRule::new(3, 20.0, false, 10),
            SamplingRule::new(3, 0.0, true, 10),
        ] {
            assert_eq!(r.ended(2, 0.0, precise), None);
            assert_eq!(r.ended(3, 0.0, wide), Some(Ended::Planned));
        }
    }

    #[test]
    fn a_difference_samples_on_to_the_pairs_that_can_count() {
        // 2 / 2^n within 5 % / m: 8 pairs for a family of 6, 11 for 40.
        assert_eq!(countable_pairs(1), 6);
        assert_eq!(countable_pairs(6), 8);
        assert_eq!(countable_pairs(40), 11);
        let r = SamplingRule::new(3, 20.0, true, 10);
        // Within ±5 % and excluding 1 after 6 pairs, which can never count
        // in a family of 10 (Holm's first step asks for 0.5 %).
        let early = cell(1.01, 1.06, 6, 0.03);
        assert!(!r.settled(&early));
        assert_eq!(r.ended(6, 1.0, || vec![Some(early)]), None);
        // At 9 pairs it is judged, whatever its p.
        assert!(r.settled(&cell(1.01, 1.06, 9, 0.02)));
        // A cell that does not differ is settled once precise.
        assert!(r.settled(&cell(0.98, 1.03, 6, 0.4)));
    }

    #[test]
    fn a_cell_that_cannot_reach_the_target_stops_early_and_says_why() {
        let r = SamplingRule::new(3, 20.0, true, 10);
        // ±40 % after 6 rounds: ±5 % would take about 6 x 64 rounds.
        let spread = cell(0.7, 1.4, 6, 0.6);
        assert_eq!(
            r.ended(6, 6.0, || vec![Some(spread)]),
            Some(Ended::OutOfReach)
        );
        let why = Ended::OutOfReach.describe(Some(&spread));
        assert!(why.starts_with("stopped early: ±5 % out of reach"), "{why}");
        assert!(why.contains("after 6 rounds"), "{why}");
        // ±8 % after 6 rounds at 1 s a round: about 16 rounds, 16 s, within
        // the limit and the budget: sampling goes on.
        let near = cell(0.93, 1.08, 6, 0.6);
        assert_eq!(r.ended(6, 6.0, || vec![Some(near)]), None);
        // The same at 3 s a round would spend 48 s: out of reach.
        assert_eq!(
            r.ended(6, 18.0, || vec![Some(near)]),
            Some(Ended::OutOfReach)
        );
        // A difference out of reach of ±5 % still gets the pairs that can
        // count (9 in a family of 10), then stops.
        let slower = cell(0.59, 0.72, 6, 0.03);
        assert_eq!(r.ended(6, 18.0, || vec![Some(slower)]), None);
        let slower = cell(0.59, 0.72, 9, 0.004);
        assert_eq!(
            r.ended(9, 18.0, || vec![Some(slower)]),
            Some(Ended::OutOfReach)
        );
    }
}
