//! report.md's cells and the helpers its sections share: a B/A ratio and
//! its interval, a side's figure, a cell's status, the columns in table
//! order, the sides that ran.

use super::report::{num, RunInfo};
use crate::lab::measure::results::{Column, Kind, Row, Side, Status};

/// A ratio's two table cells, "1.05×" and "1.02–1.08", or dashes.
pub(super) fn ratio_and_interval(
    k: Option<crate::lab::stats::effect::Comparison>,
) -> (String, String) {
    match k {
        Some(k) => (
            format!("{}×", num(k.ratio)),
            format!("{}–{}", num(k.lo), num(k.hi)),
        ),
        None => ("-".into(), "-".into()),
    }
}

/// B/A with its 95 % interval, or why there is none.
pub(super) fn ratio_cell(c: &Column) -> String {
    match c.comparison() {
        Some(k) => format!("{}× [{}–{}]", num(k.ratio), num(k.lo), num(k.hi)),
        None => "too few to tell".into(),
    }
}

pub(super) fn status_cell(c: &Column) -> Option<String> {
    match &c.status {
        Status::Measured => None,
        Status::Skipped(_) => Some("skipped".into()),
        Status::Failed(_) => Some("FAILED".into()),
    }
}

pub(super) fn figure_cell(c: &Column, side: Side) -> String {
    if let Status::Skipped(_) = c.status {
        return "skipped".into();
    }
    let f = match c.figure(side) {
        Some(f) => num(f),
        None => "-".into(),
    };
    if c.failed() {
        format!("FAILED ({f})")
    } else {
        f
    }
}

/// The columns in table order, with their counts (from the first row that
/// has them).
pub(super) fn column_order(rows: &[Row]) -> Vec<(Kind, usize)> {
    Kind::ALL
        .iter()
        .filter_map(|&k| {
            let counts: Vec<usize> = rows
                .iter()
                .filter_map(|r| r.column(k))
                .filter(|c| !matches!(c.status, Status::Skipped(_)))
                .map(|c| c.count)
                .collect();
            let any = rows.iter().any(|r| r.column(k).is_some());
            any.then(|| (k, counts.iter().copied().max().unwrap_or(0)))
        })
        .collect()
}

/// The sides that ran, in report order.
pub(super) fn sides_of(info: &RunInfo) -> &'static [Side] {
    if info.c_name.is_some() {
        &[Side::A, Side::B, Side::C]
    } else {
        &[Side::A, Side::B]
    }
}

/// Requests per operation: two decimals, as a count reads.
pub(super) fn num2(x: f64) -> String {
    format!("{x:.2}")
}
