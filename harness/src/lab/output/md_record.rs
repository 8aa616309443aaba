//! report.md's record of the run, after its verdicts: key generation
//! methods, time per operation, validation, the notes and the command
//! lines.

use super::md_cells::ratio_cell;
use super::method;
use super::report::{dur, num, RunInfo};
use crate::lab::measure::results::{Kind, Row, Side, Status, Unit};
use std::fmt::Write as _;

/// Which method made each side's keys, per key size.
pub(super) fn md_keygen_methods(md: &mut String, rows: &[Row]) {
    let lines: Vec<(u32, Kind, String, String)> = rows
        .iter()
        .flat_map(|r| {
            method::of_row(r)
                .into_iter()
                .map(move |(k, a, b)| (r.bits, k, a, b))
        })
        .collect();
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(md, "## Key generation methods\n");
    let _ = writeln!(md, "{}\n", method::EXPLANATION);
    let _ = writeln!(
        md,
        "| RSA bits | column | A (default provider) | B (rustica, from its counters) |"
    );
    let _ = writeln!(md, "|---:|---|---|---|");
    for (bits, k, a, b) in lines {
        let _ = writeln!(md, "| {bits} | {} | {a} | {b} |", k.op_name());
    }
    md.push('\n');
}

/// Wall and CPU time per operation, median [min–max].
pub(super) fn md_per_operation(md: &mut String, rows: &[Row]) {
    let _ = writeln!(md, "## Per operation: median [min–max]\n");
    let _ = writeln!(
        md,
        "Wall time per process (or per handshake, per in-process operation: rates inverted) and CPU time \
         (user + system) of the process under test; for TLS, the server's CPU per handshake.\n"
    );
    let _ = writeln!(
        md,
        "| RSA bits | operation | A wall | B wall | B/A [95 % interval] | A CPU | B CPU |"
    );
    let _ = writeln!(md, "|---:|---|---:|---:|---:|---:|---:|");
    for r in rows {
        let ok = r.valid();
        for c in &r.columns {
            if matches!(c.status, Status::Skipped(_)) || (c.a.is_empty() && c.b.is_empty()) {
                continue;
            }
            let wall = |side: Side| match (c.per_op(side), c.kind.unit()) {
                (Some(s), Unit::Seconds) => {
                    format!("{} [{}–{}]", dur(s.median), dur(s.min), dur(s.max))
                }
                (Some(s), Unit::PerSecond) => {
                    format!("{}/s [{}–{}]", num(s.median), num(s.min), num(s.max))
                }
                (Some(s), Unit::Ratio) => {
                    format!("{:.3} [{:.3}–{:.3}]", s.median, s.min, s.max)
                }
                (None, _) => "-".into(),
            };
            let cpu = |side: Side| match c.cpu(side) {
                Some(s) if s.max > 0.0 => dur(s.median),
                _ => "-".into(),
            };
            let (bw, br, bc) = if ok {
                (wall(Side::B), ratio_cell(c), cpu(Side::B))
            } else {
                ("INVALID".into(), "INVALID".into(), "INVALID".into())
            };
            let _ = writeln!(
                md,
                "| {} | {} | {} | {bw} | {br} | {} | {bc} |",
                r.bits,
                c.kind.op_name(),
                wall(Side::A),
                cpu(Side::A)
            );
        }
    }
    md.push('\n');
}

/// Every row's checks and failures.
pub(super) fn md_validation(md: &mut String, rows: &[Row]) {
    let _ = writeln!(md, "## Validation\n");
    let _ = writeln!(
        md,
        "B's counters are a statistics file private to this run (`RUSTICA_STATS_PATH`); each B step's delta \
         must equal the operations it ran, at its key size, with none failed.\n"
    );
    for r in rows {
        let _ = writeln!(md, "### {} bits: {}\n", r.bits, r.status_word());
        if !r.key_source.is_empty() {
            let _ = writeln!(md, "Key pair: {}.\n", r.key_source);
        }
        for c in &r.checks {
            let mark = if c.ok { "ok" } else { "**FAILED**" };
            let _ = writeln!(md, "- {mark}: {}: {}", c.name, c.detail.replace('\n', " "));
        }
        for c in &r.columns {
            if let Status::Failed(m) = &c.status {
                let _ = writeln!(
                    md,
                    "- **FAILED**: {}: {}",
                    c.kind.op_name(),
                    m.replace('\n', " ")
                );
            }
        }
        if r.incomplete {
            let _ = writeln!(md, "- interrupted before the row was finished");
        }
        if !r.c_checks.is_empty() {
            let _ = writeln!(
                md,
                "\nSide C (these do not change the row's validity, which is B's):\n"
            );
            for c in &r.c_checks {
                let mark = if c.ok { "ok" } else { "**FAILED**" };
                let _ = writeln!(md, "- {mark}: {}: {}", c.name, c.detail.replace('\n', " "));
            }
        }
        md.push('\n');
    }
}

/// The run's notes, the columns' notes (once each), and what was skipped.
pub(super) fn md_notes(md: &mut String, info: &RunInfo, rows: &[Row]) {
    let _ = writeln!(md, "## Notes\n");
    for n in &info.notes {
        let _ = writeln!(md, "- {n}");
    }
    let mut seen = Vec::new();
    for r in rows {
        for c in &r.columns {
            if let Some(n) = &c.note {
                if !seen.contains(n) {
                    let _ = writeln!(md, "- {} bits, {}: {n}", r.bits, c.kind.op_name());
                    seen.push(n.clone());
                }
            }
        }
    }
    let mut skipped: Vec<String> = Vec::new();
    for r in rows {
        for c in &r.columns {
            if let Status::Skipped(why) = &c.status {
                let s = format!("{} bits, {}: skipped ({why})", r.bits, c.kind.op_name());
                skipped.push(s);
            }
        }
    }
    for s in skipped {
        let _ = writeln!(md, "- {s}");
    }
    md.push('\n');
}

/// The command lines of the first row.
pub(super) fn md_commands(md: &mut String, rows: &[Row]) {
    if let Some(r) = rows.first() {
        let _ = writeln!(md, "## Commands ({} bits)\n", r.bits);
        md.push_str("```\n");
        for c in &r.columns {
            for cmd in &c.commands {
                let _ = writeln!(md, "{cmd}");
            }
        }
        md.push_str("```\n");
    }
}
