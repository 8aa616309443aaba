//! What a lab run measured and checked: the data every report is made from.
//! A cell's comparisons and verdicts are `verdicts`; how sampling ends is
//! `sampling`; which cells count, in words, is `family` and `explain`; the
//! JSON of a row is `report`.

use crate::lab::plan::card_use::Service;
pub use crate::lab::plan::column_table::Kind;
use crate::lab::plan::column_table::Reduce;
pub use crate::lab::plan::openssl::Side;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Operations counted by rustica, by operation name and backend name
/// ("keygen" -> "software" -> 15).
pub type Counted = BTreeMap<String, BTreeMap<String, u64>>;

/// How a column's samples read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Seconds per operation (lower is better).
    Seconds,
    /// Operations per second (higher is better).
    PerSecond,
    /// A dimensionless ratio (higher is better).
    Ratio,
}

impl Kind {
    /// How the column's samples read (its entry's `reduce`).
    pub fn unit(self) -> Unit {
        match self.spec().reduce {
            Reduce::Rate => Unit::PerSecond,
            Reduce::Ratio => Unit::Ratio,
            Reduce::WallSum | Reduce::Median => Unit::Seconds,
        }
    }
}

/// One measurement.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// Seconds (time columns) or operations per second (rate columns).
    pub value: f64,
    /// CPU seconds of the process under test for this sample (for TLS, the
    /// server's CPU per handshake; for speed, not measured: 0).
    pub cpu: f64,
}

impl Unit {
    /// The unit in JSON and CSV.
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::Seconds => "s",
            Unit::PerSecond => "1/s",
            Unit::Ratio => "ratio",
        }
    }
}

/// State of one cell.
#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    Measured,
    Skipped(String),
    Failed(String),
}

/// One column of one row: the A and B (and C) samples in the order they
/// were taken (the sides alternating, so sample i of each side form a
/// pair, or a triple).
#[derive(Clone, Debug)]
pub struct Column {
    pub kind: Kind,
    /// Operations per side (loop columns) or samples planned.
    pub count: usize,
    pub a: Vec<Sample>,
    pub b: Vec<Sample>,
    /// Side C's samples (empty without a side C).
    pub c: Vec<Sample>,
    /// Why side C's runs of this column stopped, if one failed (A's and
    /// B's go on).
    pub c_failed: Option<String>,
    pub status: Status,
    pub note: Option<String>,
    /// The first A and B command lines, as a person would type them.
    pub commands: Vec<String>,
    /// What rustica's counters moved by during this column's B runs.
    pub b_counted: Counted,
    /// libica calls of this column's runs by side and function, from the
    /// emulated libica's call log (`--count-libica-calls`): "B" ->
    /// "rsa_crt" -> 100.
    pub libica_calls: Counted,
    /// How sampling ended, in words (`sampling::Ended::describe`).
    pub sampling: String,
    /// Where this cell stands in its run's families (B/A, and with a side
    /// C also C/A and B/C), once `family::decide` has seen every row.
    pub family: [Option<Decision>; 3],
    /// Where the cell's host CPU per operation (B/A) stands in the run's
    /// family of CPU cells, a family of its own.
    pub cpu_family: Option<Decision>,
    /// Per side (A, B, C): card requests the kernel counted during the
    /// side's runs of this cell, and the operations of those runs; None
    /// where zcrypt's counters were not read (no card).
    pub card_requests: [Option<(u64, u64)>; 3],
    /// The shared card's service to B's runs of this cell (a column whose
    /// entry asks for it, on a `rustica-card`); None without one.
    pub card_service: Option<Service>,
}

/// The comparisons a run makes: each is a family of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pair {
    BOverA,
    COverA,
    BOverC,
}

impl Pair {
    pub const ALL: [Pair; 3] = [Pair::BOverA, Pair::COverA, Pair::BOverC];

    /// (side, base): the ratio is side over base.
    pub fn sides(self) -> (Side, Side) {
        match self {
            Pair::BOverA => (Side::B, Side::A),
            Pair::COverA => (Side::C, Side::A),
            Pair::BOverC => (Side::B, Side::C),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Pair::BOverA => "B/A",
            Pair::COverA => "C/A",
            Pair::BOverC => "B/C",
        }
    }
}

/// One cell's standing in its family (docs/lab.md, "The family of cells").
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Decision {
    /// The cell's own two-sided p-value.
    pub p: f64,
    /// Holm's adjusted p-value over the family.
    pub p_holm: f64,
    /// Whether the difference counts: the adjusted p is within the
    /// family's alpha.
    pub survives: bool,
    /// How many cells the family has.
    pub family_size: usize,
}

/// median, min, max.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub n: usize,
}

pub fn summarize(values: &[f64]) -> Option<Summary> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    Some(Summary {
        median,
        min: v[0],
        max: v[n - 1],
        n,
    })
}

impl Column {
    pub fn new(kind: Kind, count: usize) -> Column {
        Column {
            kind,
            count,
            a: Vec::new(),
            b: Vec::new(),
            c: Vec::new(),
            c_failed: None,
            status: Status::Measured,
            note: None,
            commands: Vec::new(),
            b_counted: Counted::new(),
            libica_calls: Counted::new(),
            sampling: "planned runs".into(),
            family: [None; 3],
            cpu_family: None,
            card_requests: [None; 3],
            card_service: None,
        }
    }

    /// B's operations `op` counted by rustica, by backend.
    pub fn b_counted_op(&self, op: &str) -> BTreeMap<String, u64> {
        self.b_counted.get(op).cloned().unwrap_or_default()
    }

    pub fn skipped(kind: Kind, count: usize, why: impl Into<String>) -> Column {
        Column {
            status: Status::Skipped(why.into()),
            ..Column::new(kind, count)
        }
    }

    pub fn side(&self, side: Side) -> &[Sample] {
        match side {
            Side::A => &self.a,
            Side::B => &self.b,
            Side::C => &self.c,
        }
    }

    pub fn side_mut(&mut self, side: Side) -> &mut Vec<Sample> {
        match side {
            Side::A => &mut self.a,
            Side::B => &mut self.b,
            Side::C => &mut self.c,
        }
    }

    /// Median, min and max of one side's samples (per operation).
    pub fn per_op(&self, side: Side) -> Option<Summary> {
        summarize(&self.side(side).iter().map(|s| s.value).collect::<Vec<_>>())
    }

    /// CPU seconds per operation, median/min/max.
    pub fn cpu(&self, side: Side) -> Option<Summary> {
        summarize(&self.side(side).iter().map(|s| s.cpu).collect::<Vec<_>>())
    }

    /// The lab-shaped figure: total seconds of the loop (loop columns),
    /// otherwise the median.
    pub fn figure(&self, side: Side) -> Option<f64> {
        let s = self.side(side);
        if s.is_empty() {
            return None;
        }
        if self.kind.is_loop() {
            // The lab's total for `count` processes: with more samples
            // than that (sampling until precise), their mean times count.
            let mean = s.iter().map(|x| x.value).sum::<f64>() / s.len() as f64;
            Some(mean * self.count as f64)
        } else {
            self.per_op(side).map(|x| x.median)
        }
    }

    /// A side's place in the per-side arrays (`card_requests`).
    pub fn side_index(side: Side) -> usize {
        match side {
            Side::A => 0,
            Side::B => 1,
            Side::C => 2,
        }
    }

    /// Adds one run's card requests and operations to `side`'s tally.
    pub fn add_card_requests(&mut self, side: Side, requests: u64, ops: u64) {
        let t = self.card_requests[Self::side_index(side)].get_or_insert((0, 0));
        t.0 += requests;
        t.1 += ops;
    }

    /// Card requests per operation of `side`'s runs (the kernel's count),
    /// None where not counted.
    pub fn requests_per_op(&self, side: Side) -> Option<f64> {
        let (requests, ops) = self.card_requests[Self::side_index(side)]?;
        (ops > 0).then(|| requests as f64 / ops as f64)
    }

    /// Seconds per operation (rates inverted), for the chart.
    pub fn seconds_per_op(&self, side: Side) -> Option<f64> {
        let m = self.per_op(side)?.median;
        match self.kind.unit() {
            Unit::Seconds => Some(m),
            Unit::PerSecond if m > 0.0 => Some(1.0 / m),
            Unit::PerSecond | Unit::Ratio => None,
        }
    }

    pub fn failed(&self) -> bool {
        matches!(self.status, Status::Failed(_))
    }
}

pub fn summary_json(s: Summary) -> Value {
    json!({"median": s.median, "min": s.min, "max": s.max, "n": s.n})
}

/// One validation check of a row.
#[derive(Clone, Debug)]
pub struct Check {
    pub name: String,
    pub ok: bool,
    pub detail: String,
}

impl Check {
    pub fn new(name: impl Into<String>, ok: bool, detail: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            ok,
            detail: detail.into(),
        }
    }
}

/// One key size: its columns and its validation.
#[derive(Clone, Debug)]
pub struct Row {
    pub bits: u32,
    pub columns: Vec<Column>,
    pub checks: Vec<Check>,
    /// Where the key pair came from.
    pub key_source: String,
    /// Set when Ctrl-C stopped the row part-way.
    pub incomplete: bool,
    /// B operations by backend, from the counters.
    pub backends: BTreeMap<String, u64>,
    /// Side C's checks against A and B. They say whether C can be trusted;
    /// they do not touch the row's validity, which is about B.
    pub c_checks: Vec<Check>,
}

impl Row {
    pub fn new(bits: u32) -> Row {
        Row {
            bits,
            columns: Vec::new(),
            checks: Vec::new(),
            key_source: String::new(),
            incomplete: false,
            backends: Default::default(),
            c_checks: Vec::new(),
        }
    }

    /// A row is valid when every check passed, no operation failed, and it
    /// ran to the end.
    pub fn valid(&self) -> bool {
        !self.incomplete
            && self.checks.iter().all(|c| c.ok)
            && !self.columns.iter().any(|c| c.failed())
            && !self.checks.is_empty()
    }

    pub fn column(&self, kind: Kind) -> Option<&Column> {
        self.columns.iter().find(|c| c.kind == kind)
    }

    pub fn status_word(&self) -> &'static str {
        if self.incomplete {
            "INCOMPLETE"
        } else if self.valid() {
            "valid"
        } else {
            "INVALID"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::stats::sampling::PRECISION_TARGET_PCT;

    fn samples(values: &[f64]) -> Vec<Sample> {
        values
            .iter()
            .map(|&value| Sample { value, cpu: 0.0 })
            .collect()
    }

    #[test]
    fn key_generation_verdicts_read_like_any_other_and_say_how_many_keys_it_takes() {
        // 15 keys per side, B's times half of A's but spread over 4×: the
        // interval excludes 1 and is far wider than ±5 %.
        let spread: Vec<f64> = (0..15).map(|i| 0.5 * 1.1f64.powi(i)).collect();
        let mut c = Column::new(Kind::Keygen, 15);
        c.a = samples(&spread);
        c.b = samples(&spread.iter().map(|v| v / 2.0).collect::<Vec<_>>());
        let k = c.comparison().unwrap();
        assert!(
            k.differs() && k.half_width_pct() > PRECISION_TARGET_PCT,
            "{k:?}"
        );
        let v = c.verdict_text();
        assert!(v.starts_with("B 2.00× as fast [1.37–2.93×]"), "{v}");
        assert!(v.contains("keys per side for ±5 %"), "{v}");
        // Whether it counts is the family's word, not the column's.
        assert!(!c.counts_as_difference());
        c.family[Pair::BOverA as usize] = Some(Decision {
            p: k.p,
            p_holm: k.p,
            survives: true,
            family_size: 1,
        });
        assert!(c.counts_as_difference());
        // A paired cell says nothing about keys.
        let mut p = Column::new(Kind::Signatures, 15);
        p.a = samples(&spread);
        p.b = samples(&spread.iter().map(|v| v * 1.2).collect::<Vec<_>>());
        let v = p.verdict_text();
        assert!(
            v.starts_with("B slower: 1.20× A's time") && !v.contains("keys"),
            "{v}"
        );
    }

    fn s(v: f64) -> Sample {
        Sample {
            value: v,
            cpu: v / 2.0,
        }
    }

    #[test]
    fn summaries() {
        assert_eq!(summarize(&[]), None);
        let x = summarize(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((x.median, x.min, x.max, x.n), (2.0, 1.0, 3.0, 3));
        assert_eq!(summarize(&[4.0, 1.0, 2.0, 3.0]).unwrap().median, 2.5);
    }

    #[test]
    fn loop_figure_is_a_total_and_ratio_is_pairwise() {
        let mut c = Column::new(Kind::Signatures, 3);
        c.a = vec![s(1.0), s(2.0), s(4.0)];
        c.b = vec![s(2.0), s(2.0), s(2.0)];
        assert_eq!(c.figure(Side::A), Some(7.0));
        assert_eq!(c.figure(Side::B), Some(6.0));
        let r = c.ratio().unwrap();
        // pairs: 2/1, 2/2, 2/4
        assert_eq!((r.median, r.min, r.max), (1.0, 0.5, 2.0));
        assert_eq!(c.cpu(Side::A).unwrap().median, 1.0);
    }

    #[test]
    fn rates_invert_for_the_chart() {
        let mut c = Column::new(Kind::Tls13, 1);
        c.a = vec![s(500.0)];
        assert_eq!(c.figure(Side::A), Some(500.0));
        assert_eq!(c.seconds_per_op(Side::A), Some(0.002));
        assert_eq!(c.seconds_per_op(Side::B), None);
    }

    #[test]
    fn validity() {
        let mut r = Row::new(1024);
        assert!(!r.valid(), "a row without checks proves nothing");
        r.checks.push(Check::new("x", true, ""));
        assert!(r.valid());
        r.checks.push(Check::new("y", false, ""));
        assert!(!r.valid());
        assert_eq!(r.status_word(), "INVALID");
    }
}
