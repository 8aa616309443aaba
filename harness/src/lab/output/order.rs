//! The order within a pair. A and B take turns, A first in even rounds
//! and B first in odd ones (`matrix`), so that whatever running second
//! does to a sample (a warmer page cache, a CPU whose clock has ramped up,
//! a neighbour's burst that began during the first run) falls on both
//! sides alike. The same alternation measures it: a paired cell's B/A
//! ratios from rounds where B ran first, over those where A ran first
//! (docs/lab.md, "The order within a pair").

use crate::lab::measure::results::{summarize, Column, Row, Status};
use crate::lab::stats::effect::Comparison;

/// The paired log ratios ln(b_i / a_i) of a cell, each with whether its
/// round ran B first (odd rounds).
fn log_ratios(c: &Column) -> Vec<(f64, bool)> {
    if c.unpaired() || !matches!(c.status, Status::Measured) {
        return Vec::new();
    }
    c.a.iter()
        .zip(&c.b)
        .enumerate()
        .filter(|(_, (a, b))| a.value > 0.0 && b.value > 0.0)
        .map(|(i, (a, b))| ((b.value / a.value).ln(), i % 2 == 1))
        .filter(|(l, _)| l.is_finite())
        .collect()
}

/// One cell's order effect: (B/A where B ran first) over (B/A where A ran
/// first), with its Mann–Whitney interval; None with fewer than 3 rounds
/// of either order.
pub fn of_column(c: &Column) -> Option<Comparison> {
    let logs = log_ratios(c);
    let (b_first, a_first): (Vec<_>, Vec<_>) = logs.iter().partition(|(_, b)| *b);
    let ratios = |v: Vec<&(f64, bool)>| v.iter().map(|(l, _)| l.exp()).collect::<Vec<f64>>();
    Comparison::unpaired(&ratios(a_first), &ratios(b_first))
}

/// The run's order effect over every paired cell of its valid rows: each
/// cell's log ratios centred on the cell's median (so that cells with
/// different B/A pool), then B-first over A-first as in [`of_column`].
pub struct RunOrder {
    pub effect: Option<Comparison>,
    /// Pairs with A first and with B first that took part.
    pub a_first: usize,
    pub b_first: usize,
    /// Paired cells that took part.
    pub cells: usize,
}

pub fn of_run(rows: &[Row]) -> RunOrder {
    let mut a_first = Vec::new();
    let mut b_first = Vec::new();
    let mut cells = 0;
    for c in rows
        .iter()
        .filter(|r| r.valid())
        .flat_map(|r| r.columns.iter())
    {
        let logs = log_ratios(c);
        if logs.len() < 2 {
            continue;
        }
        let all: Vec<f64> = logs.iter().map(|(l, _)| *l).collect();
        let Some(centre) = summarize(&all).map(|s| s.median) else {
            continue;
        };
        cells += 1;
        for (l, b) in logs {
            let centred = (l - centre).exp();
            if b {
                b_first.push(centred);
            } else {
                a_first.push(centred);
            }
        }
    }
    RunOrder {
        effect: Comparison::unpaired(&a_first, &b_first),
        a_first: a_first.len(),
        b_first: b_first.len(),
        cells,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::measure::results::{Check, Kind, Sample};

    fn sample(value: f64) -> Sample {
        Sample { value, cpu: 0.0 }
    }

    /// A cell where the second run of each pair is 4 % slower, whichever
    /// side it is: B/A reads 1.04 in A-first rounds and 1/1.04 in B-first
    /// ones.
    fn second_is_slower(kind: Kind, rounds: usize) -> Column {
        let mut c = Column::new(kind, rounds);
        for i in 0..rounds {
            let noise = 1.0 + 0.001 * (i % 5) as f64;
            let (a, b) = if i % 2 == 0 {
                (1.0, 1.04 * noise)
            } else {
                (1.04, noise)
            };
            c.a.push(sample(a));
            c.b.push(sample(b));
        }
        c
    }

    #[test]
    fn an_order_effect_is_measured_and_a_balanced_cell_shows_none() {
        let c = second_is_slower(Kind::Signatures, 12);
        let k = of_column(&c).unwrap();
        // B first over A first: (1/1.04) / 1.04.
        assert!((k.ratio - 1.0 / 1.04 / 1.04).abs() < 0.01, "{k:?}");
        assert!(k.differs(), "{k:?}");
        let mut flat = Column::new(Kind::Signatures, 12);
        for i in 0..12 {
            flat.a.push(sample(1.0));
            flat.b.push(sample(1.02 + 0.001 * ((i * 7) % 5) as f64));
        }
        let k = of_column(&flat).unwrap();
        assert!(!k.differs(), "{k:?}");
        // Key generation is unpaired: no order effect to take.
        assert!(of_column(&second_is_slower(Kind::Keygen, 12)).is_none());
    }

    #[test]
    fn the_run_pools_cells_of_different_ratios() {
        let mut row = Row::new(2048);
        row.checks.push(Check::new("x", true, ""));
        row.columns.push(second_is_slower(Kind::Signatures, 10));
        let mut other = second_is_slower(Kind::Verifications, 10);
        for s in &mut other.b {
            s.value *= 3.0;
        }
        row.columns.push(other);
        let o = of_run(&[row]);
        assert_eq!((o.cells, o.a_first, o.b_first), (2, 10, 10));
        let k = o.effect.unwrap();
        assert!(k.differs() && k.ratio < 0.95, "{k:?}");
    }
}
