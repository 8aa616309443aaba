//! A cell's comparisons and verdicts: B/A (or C/A, B/C) with its 95 %
//! interval from the column's samples, the host CPU's, the verdicts in
//! words, and the cell's standing in its family. The data they read is
//! `results`; the statistics, `stats::effect`.

use super::results::{summarize, Column, Decision, Pair, Side, Summary, Unit};
use crate::lab::plan::column_table::Pairing;
use crate::lab::stats::effect::{Better, Comparison};
use crate::lab::stats::sampling::PRECISION_TARGET_PCT;

impl Column {
    /// B/A ratio computed pair by pair (sample i of B over sample i of A).
    pub fn ratio(&self) -> Option<Summary> {
        let r: Vec<f64> = self
            .a
            .iter()
            .zip(&self.b)
            .filter(|(a, _)| a.value > 0.0)
            .map(|(a, b)| b.value / a.value)
            .collect();
        summarize(&r)
    }

    /// Whether this column's samples are independent draws rather than
    /// pairs: every sample makes new random primes (key generation, a
    /// certificate with a new key), so sample i of A and of B share
    /// nothing but the moment they ran (the column table's `pairing`).
    pub fn unpaired(&self) -> bool {
        self.kind.spec().pairing == Pairing::Unpaired
    }

    /// Which way is better for this column's samples.
    pub fn better(&self) -> Better {
        match self.kind.unit() {
            Unit::Seconds => Better::Lower,
            Unit::PerSecond | Unit::Ratio => Better::Higher,
        }
    }

    /// B/A with its 95 % interval (docs/lab.md, "Intervals and
    /// verdicts"); None with too few samples for one.
    pub fn comparison(&self) -> Option<Comparison> {
        self.comparison_of(Side::B, Side::A)
    }

    /// `side` over `base` (C/A, B/C) with its 95 % interval, as
    /// [`Column::comparison`] makes B/A.
    pub fn comparison_of(&self, side: Side, base: Side) -> Option<Comparison> {
        let base: Vec<f64> = self.side(base).iter().map(|s| s.value).collect();
        let side: Vec<f64> = self.side(side).iter().map(|s| s.value).collect();
        if self.unpaired() {
            Comparison::unpaired(&base, &side)
        } else {
            Comparison::paired(&base, &side)
        }
    }

    /// Whether the cell has a host CPU per operation to compare: its
    /// column's entry says so (not a ratio, nor speed -multi's CPU column,
    /// whose figure is that CPU, compared as its value already) and every
    /// sample of both sides measured one.
    pub fn has_cpu(&self) -> bool {
        self.kind.spec().cpu
            && !self.a.is_empty()
            && !self.b.is_empty()
            && self.a.iter().chain(&self.b).all(|s| s.cpu > 0.0)
    }

    /// B/A of the host CPU per operation (user + system of the process
    /// under test; for TLS the server's), with its 95 % interval: what
    /// offload frees. None where CPU was not measured on every sample.
    pub fn cpu_comparison(&self) -> Option<Comparison> {
        if !self.has_cpu() {
            return None;
        }
        let a: Vec<f64> = self.a.iter().map(|s| s.cpu).collect();
        let b: Vec<f64> = self.b.iter().map(|s| s.cpu).collect();
        if self.unpaired() {
            Comparison::unpaired(&a, &b)
        } else {
            Comparison::paired(&a, &b)
        }
    }

    /// The CPU comparison's verdict in words: "B uses less host CPU:
    /// 0.42× A's [0.40–0.44×]".
    pub fn cpu_verdict(&self) -> String {
        if !self.has_cpu() {
            return "CPU not measured on every sample".into();
        }
        let Some(k) = self.cpu_comparison() else {
            let what = if self.unpaired() { "keys" } else { "samples" };
            return format!("not enough {what} to tell");
        };
        let x = |v: f64| crate::lab::stats::effect::times(v);
        if !k.differs() {
            let within = ((1.0 - k.lo).max(k.hi - 1.0) * 100.0).max(0.0);
            format!("no difference detected (±{within:.1} %)")
        } else {
            let more = if k.hi < 1.0 { "less" } else { "more" };
            format!(
                "B uses {more} host CPU: {}× A's [{}–{}×]",
                x(k.ratio),
                x(k.lo),
                x(k.hi)
            )
        }
    }

    /// Whether this cell counts as a difference: it survived its run's
    /// family control (Holm over every B/A cell of the run), whatever its
    /// column. False until `family::decide` has run.
    pub fn counts_as_difference(&self) -> bool {
        self.decision(Pair::BOverA).is_some_and(|d| d.survives)
    }

    /// This cell's standing in one family.
    pub fn decision(&self, pair: Pair) -> Option<Decision> {
        self.family[pair as usize]
    }

    /// The verdict of the cell's own interval, in words.
    pub fn verdict_text(&self) -> String {
        self.verdict_of(Side::B, Side::A)
    }

    /// Whether the interval reached the precision target.
    pub fn precise(&self) -> bool {
        self.comparison()
            .is_some_and(|c| c.half_width_pct() <= PRECISION_TARGET_PCT)
    }

    /// [`Column::verdict_text`] for `side` over `base`, naming `side`:
    /// "C faster by ...". Key generation's verdicts (unpaired, heavy-tailed)
    /// also say how many keys per side a ±5 % interval would take.
    pub fn verdict_of(&self, side: Side, base: Side) -> String {
        let what = if self.unpaired() { "keys" } else { "samples" };
        let Some(c) = self.comparison_of(side, base) else {
            return format!("not enough {what} to tell");
        };
        // The verdicts name side B; another side takes its place.
        let verdict =
            c.verdict(self.better())
                .text()
                .replacen("B ", &format!("{} ", side.name()), 1);
        if self.unpaired() && c.half_width_pct() > PRECISION_TARGET_PCT {
            format!(
                "{verdict}; about {} keys per side for ±{PRECISION_TARGET_PCT:.0} %",
                c.samples_for(PRECISION_TARGET_PCT)
            )
        } else {
            verdict
        }
    }
}
