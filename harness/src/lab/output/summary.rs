//! The summary's list: the cells that count after the family's control,
//! each with its verdict and why B differs, for report.md and for the
//! lines `rustica lab` prints when it ends.

use super::explain::{self, Context};
use crate::lab::measure::results::{Pair, Row};

/// The cells that count (they survive the family's control; valid rows
/// only), each with its verdict and why B differs, from the counters.
pub fn differences(rows: &[Row], cx: Context) -> Vec<String> {
    let mut out = Vec::new();
    for r in rows.iter().filter(|r| r.valid()) {
        for c in r.columns.iter().filter(|c| c.counts_as_difference()) {
            let why = explain::explain_in(r, c, cx);
            out.push(format!(
                "{} bits, {}: {}: {}",
                r.bits,
                c.kind.op_name(),
                c.verdict_text(),
                why.text
            ));
        }
    }
    out
}

/// The C/A or B/C cells that survive their family's control.
pub fn side_c_differences(rows: &[Row], pair: Pair) -> Vec<String> {
    let (side, base) = pair.sides();
    rows.iter()
        .filter(|r| r.valid())
        .flat_map(|r| r.columns.iter().map(move |c| (r.bits, c)))
        .filter(|(_, c)| c.decision(pair).is_some_and(|d| d.survives))
        .map(|(bits, c)| {
            format!(
                "{bits} bits, {}: {}",
                c.kind.op_name(),
                c.verdict_of(side, base)
            )
        })
        .collect()
}

/// The host CPU per operation cells that survive their own family's
/// control: where offload freed the host's CPU, or where B spends more.
pub fn cpu_differences(rows: &[Row]) -> Vec<String> {
    rows.iter()
        .filter(|r| r.valid())
        .flat_map(|r| r.columns.iter().map(move |c| (r.bits, c)))
        .filter(|(_, c)| c.cpu_family.is_some_and(|d| d.survives))
        .map(|(bits, c)| {
            format!(
                "{bits} bits, {}: host CPU per operation: {}",
                c.kind.op_name(),
                c.cpu_verdict()
            )
        })
        .collect()
}
