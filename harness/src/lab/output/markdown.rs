//! report.md: the verdict, the lab-shaped table, key generation methods,
//! time per operation, validation, notes and command lines. An INVALID row
//! never shows a B number: its B cells say INVALID. This file has the
//! summary, the lab-shaped table and the verdicts; `md_load` and
//! `md_record` the sections after them, `md_cells` what they share.

use super::family::standing;
use super::md_cells::{column_order, figure_cell, ratio_and_interval, ratio_cell, status_cell};
use super::md_load::{card_line, md_card_requests, md_cpu, md_order, order_line};
use super::md_record::{md_commands, md_keygen_methods, md_notes, md_per_operation, md_validation};
use super::report::{all_valid, num, RunInfo};
use super::summary::{cpu_differences, differences, side_c_differences};
use crate::lab::measure::results::{Column, Pair, Row, Side, Status};
use crate::lab::stats::sampling::PRECISION_TARGET_PCT;
use std::fmt::Write as _;

pub fn markdown(info: &RunInfo, rows: &[Row]) -> String {
    let mut md = String::new();
    let title = if info.aa {
        "# rustica lab, A/A: the workshop's RSA matrix with stock OpenSSL on both sides (A and B)\n"
    } else if info.c_name.is_some() {
        "# rustica lab: the workshop's RSA matrix, without (A) and with (B) rustica, beside C\n"
    } else {
        "# rustica lab: the workshop's RSA matrix, without (A) and with (B) rustica\n"
    };
    let _ = writeln!(md, "{title}");
    md_summary(&mut md, info, rows);
    md_results(&mut md, rows);
    md_verdicts(&mut md, rows, info);
    md_cpu(&mut md, rows);
    md_card_requests(&mut md, info, rows);
    md_order(&mut md, rows);
    md_side_c(&mut md, info, rows);
    md_keygen_methods(&mut md, rows);
    md_per_operation(&mut md, rows);
    md_validation(&mut md, rows);
    md_notes(&mut md, info, rows);
    md_commands(&mut md, rows);
    md
}

/// The verdict, and what ran where.
fn md_summary(md: &mut String, info: &RunInfo, rows: &[Row]) {
    let valid = all_valid(rows);
    let verdict = if info.interrupted {
        "**INCOMPLETE**: interrupted; the rows below are what was measured.".to_string()
    } else if valid && info.aa {
        "**VALID**: every row passed validation (A/A: B is stock OpenSSL, so rustica counted nothing and its \
         counters were not read)."
            .to_string()
    } else if valid {
        "**VALID**: every row passed validation; every B operation was counted by rustica."
            .to_string()
    } else {
        let bad: Vec<String> = rows
            .iter()
            .filter(|r| !r.valid())
            .map(|r| r.bits.to_string())
            .collect();
        format!(
            "**INVALID**: rows {} failed validation; their B figures are withheld (see Validation).",
            bad.join(", ")
        )
    };
    let _ = writeln!(md, "{verdict}\n");
    if info.c_name.is_some() {
        let failed: usize = rows
            .iter()
            .map(|r| r.c_checks.iter().filter(|c| !c.ok).count())
            .sum();
        let total: usize = rows.iter().map(|r| r.c_checks.len()).sum();
        let _ = writeln!(
            md,
            "Side C: {} of {total} checks against A and B passed{}.\n",
            total - failed,
            if failed > 0 { " (see Validation)" } else { "" }
        );
    }
    let env = &info.environment;
    let _ = writeln!(
        md,
        "- Run: {} ({} s), `{}`",
        info.started,
        num(info.duration_s),
        info.command_line
    );
    let _ = writeln!(
        md,
        "- Host: {}, {} cores, {}; {}",
        env["cpu"].as_str().unwrap_or("?"),
        env["cores"],
        env["arch"].as_str().unwrap_or("?"),
        env["openssl_version"].as_str().unwrap_or("?")
    );
    let _ = writeln!(
        md,
        "- A: stock `openssl`, default provider only (`openssl-A.cnf`); RSA path: {}.",
        env["a_rsa_path"].as_str().unwrap_or("not recorded")
    );
    if info.aa {
        let _ = writeln!(
            md,
            "- B: stock `openssl` again, default provider only (`--aa`: `openssl-B.cnf`, the same text as A's); nothing differs but the turn, so any difference listed below is a false call."
        );
    } else {
        let _ = writeln!(md, "{}", side_b_line(info));
    }
    let _ = writeln!(md, "- B for `openssl speed`: {}.", info.speed_load);
    if let Some(c) = &info.c_name {
        let _ = writeln!(
            md,
            "- C: {c}; run after A and B in every round. Its figures are compared with A's (C/A) and B's (B/C) under \"C beside A and B\"; validation checks its results against A's and B's."
        );
    }
    let diffs = differences(rows, info.explain_context());
    let family = rows
        .iter()
        .flat_map(|r| &r.columns)
        .find_map(|c| c.decision(Pair::BOverA))
        .map_or(0, |d| d.family_size);
    let rule = format!(
        "Holm's step-down over the run's {family} B/A cells, 5 % family-wise: the chance that any line here is a chance one"
    );
    if diffs.is_empty() {
        let _ = writeln!(
            md,
            "- Differences that count ({rule}): none; every cell reads \"no difference detected\", has too few samples to tell, or does not survive the family's control.\n"
        );
    } else {
        let _ = writeln!(
            md,
            "- Differences that count ({rule}), each with where B's work ran (rustica's counters):"
        );
        for d in diffs {
            let _ = writeln!(md, "  - {d}");
        }
        md.push('\n');
    }
    let _ = writeln!(md, "- {}\n", card_line(info, rows));
    let cpu = cpu_differences(rows);
    let cpu_family = rows
        .iter()
        .flat_map(|r| &r.columns)
        .find_map(|c| c.cpu_family)
        .map_or(0, |d| d.family_size);
    let _ = writeln!(
        md,
        "- Host CPU per operation that counts (Holm over the run's {cpu_family} CPU cells, 5 % family-wise; what offload frees): {}\n",
        if cpu.is_empty() { "none".to_string() } else { cpu.join("; ") }
    );
    if let Some(line) = order_line(rows) {
        let _ = writeln!(md, "- {line}\n");
    }
    if info.c_name.is_some() {
        for pair in [Pair::COverA, Pair::BOverC] {
            let listed = side_c_differences(rows, pair);
            let _ =
                writeln!(
                md,
                "- {} differences that count (Holm over the run's {} cells, 5 % family-wise): {}\n",
                pair.name(),
                pair.name(),
                if listed.is_empty() { "none".to_string() } else { listed.join("; ") }
            );
        }
    }
    let _ = writeln!(
        md,
        "![B/A of every cell with its 95 % interval, log scale; filled: counts after the family's control](forest.svg)\n"
    );
}

/// How B ran rustica, and on which backends its operations were counted.
fn side_b_line(info: &RunInfo) -> String {
    let backend = info
        .backend
        .clone()
        .unwrap_or_else(|| "auto (default)".into());
    let mut b = format!(
        "- B: rustica loaded by {} (`{}`), module `{}`, backend requested: {backend}",
        info.load,
        if info.load == "config" {
            "openssl-B.cnf"
        } else {
            "-provider-path/-provider/-propquery"
        },
        info.module
    );
    if let Some(l) = &info.libica {
        let _ = write!(b, ", libica `{l}`");
    }
    let observed = &info.environment["b_backends_observed"];
    if let Some(o) = observed.as_object() {
        if !o.is_empty() {
            let v: Vec<String> = o.iter().map(|(k, v)| format!("{k} {v}")).collect();
            let _ = write!(b, "; B operations by backend (counters): {}", v.join(", "));
        }
    }
    b
}

/// The lab-shaped table: one A, B and B/A line per key size.
fn md_results(md: &mut String, rows: &[Row]) {
    let cols = column_order(rows);
    let _ = writeln!(md, "## Results\n");
    let _ = writeln!(
        md,
        "How to read: time columns are the total wall seconds of that many separate `openssl` processes, \
         as in the lab's shell loops (key generation: the median of the runs); rate columns are medians. \
         The B/A row is the Hodges–Lehmann estimate of B/A with its 95 % interval in brackets (pairs of alternating \
         A and B runs, so drift hits both; key generation unpaired): for times, above 1× means B is slower; for rates \
         (handshakes/s, sign/s, verify/s), above 1× means B is faster. Only an interval that excludes 1× is a difference \
         (see \"B against A\").\n"
    );
    let mut head = String::from("| RSA bits | side |");
    let mut sep = String::from("|---:|---|");
    for (k, n) in &cols {
        let _ = write!(head, " {} |", k.heading(*n));
        sep.push_str("---:|");
    }
    head.push_str(" validation |");
    sep.push_str("---|");
    let _ = writeln!(md, "{head}\n{sep}");
    for r in rows {
        let ok = r.valid();
        let with_c = r.columns.iter().any(|c| !c.c.is_empty());
        let lines: &[(&str, Option<Side>)] = if with_c {
            &[
                ("A", Some(Side::A)),
                ("B", Some(Side::B)),
                ("C", Some(Side::C)),
                ("B/A", None),
            ]
        } else {
            &[("A", Some(Side::A)), ("B", Some(Side::B)), ("B/A", None)]
        };
        for &(label, side) in lines {
            let mut line = format!("| {} | {label} |", r.bits);
            for (k, _) in &cols {
                let cell = match r.column(*k) {
                    None => "-".into(),
                    Some(c) => match side {
                        Some(Side::A) => figure_cell(c, Side::A),
                        Some(_) if !ok => "INVALID".into(),
                        Some(s) => figure_cell(c, s),
                        None if !ok => "INVALID".into(),
                        None => status_cell(c).unwrap_or_else(|| ratio_cell(c)),
                    },
                };
                let _ = write!(line, " {cell} |");
            }
            let status = if label == "A" { r.status_word() } else { "" };
            let _ = write!(line, " {status} |");
            let _ = writeln!(md, "{line}");
        }
    }
    md.push('\n');
}

/// Every cell's interval and verdict, whether it counts in the run's
/// family, and how its sampling ended.
fn md_verdicts(md: &mut String, rows: &[Row], info: &RunInfo) {
    let _ = writeln!(md, "## B against A: intervals and verdicts\n");
    let _ = writeln!(
        md,
        "95 % intervals of B/A: Hodges–Lehmann estimates with Wilcoxon signed-rank intervals over the paired \
         log ratios (Mann–Whitney intervals over every A-B pair for key generation and new-key certificates, whose \
         samples are independent). The lab samples a cell until its interval is within ±{PRECISION_TARGET_PCT:.0} % or the cell's \
         time budget is spent, and stops early where the target is out of reach. \"No difference detected (±z %)\" means the interval contains 1× and reaches z % \
         from it: about the smallest difference this sample could have shown. Each interval is a 95 % interval of its \
         own cell; a cell counts as a difference only when it also survives Holm's control over all the run's cells \
         (\"counts\", with Holm's adjusted p): one chance interval in twenty is expected among cells that do not differ \
         (docs/lab.md, \"Intervals and verdicts\", \"The family of cells\").{}\n",
        if info.aa { " A/A: B is stock OpenSSL, so no cell should count." } else { "" }
    );
    let _ = writeln!(
        md,
        "| RSA bits | column | B/A | 95 % interval | verdict | counts | samples | sampling ended |"
    );
    let _ = writeln!(md, "|---:|---|---:|---|---|---|---:|---|");
    for r in rows {
        for c in &r.columns {
            if !matches!(c.status, Status::Measured) {
                continue;
            }
            if !r.valid() {
                let _ = writeln!(
                    md,
                    "| {} | {} | INVALID | INVALID | INVALID | | | |",
                    r.bits,
                    c.kind.op_name()
                );
                continue;
            }
            let (ratio, interval) = ratio_and_interval(c.comparison());
            let _ = writeln!(
                md,
                "| {} | {} | {ratio} | {interval} | {} | {} | {} | {} |",
                r.bits,
                c.kind.op_name(),
                c.verdict_text(),
                standing(c.decision(Pair::BOverA)),
                c.a.len().min(c.b.len()),
                c.sampling
            );
        }
    }
    md.push('\n');
}

/// Side C's cells: C/A and B/C with their intervals and verdicts, and the
/// libica calls of each side where they were counted.
fn md_side_c(md: &mut String, info: &RunInfo, rows: &[Row]) {
    let Some(name) = &info.c_name else {
        return;
    };
    let _ = writeln!(md, "## C beside A and B\n");
    let _ = writeln!(
        md,
        "C: {name}. The same intervals as B/A: C/A over A's and C's samples, B/C over B's and C's (the three sides \
         take turns in every round, so sample i of each saw the same machine). For B/C, \"B faster\" means faster \
         than C. C/A and B/C are families of their own, each under Holm's control (\"counts\"). libica calls: from the \
         emulated libica's call log of each side (`--count-libica-calls`), by function.\n"
    );
    let _ = writeln!(
        md,
        "| RSA bits | column | C | C/A [95 %] | C against A | counts | B/C [95 %] | B against C | counts | libica calls B | libica calls C |"
    );
    let _ = writeln!(md, "|---:|---|---:|---|---|---|---|---|---|---|---|");
    let interval = |k: Option<crate::lab::stats::effect::Comparison>| match k {
        Some(k) => format!("{}× [{}–{}]", num(k.ratio), num(k.lo), num(k.hi)),
        None => "-".into(),
    };
    let calls = |c: &Column, side: Side| match c.libica_calls.get(side.name()) {
        Some(m) if !m.is_empty() => m
            .iter()
            .map(|(f, n)| format!("{f} {n}"))
            .collect::<Vec<_>>()
            .join(", "),
        _ => "-".into(),
    };
    for r in rows {
        for c in &r.columns {
            if !matches!(c.status, Status::Measured) || c.c.is_empty() {
                continue;
            }
            if !r.valid() {
                let _ = writeln!(
                    md,
                    "| {} | {} | INVALID | INVALID | INVALID | | INVALID | INVALID | | | |",
                    r.bits,
                    c.kind.op_name()
                );
                continue;
            }
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                r.bits,
                c.kind.op_name(),
                figure_cell(c, Side::C),
                interval(c.comparison_of(Side::C, Side::A)),
                c.verdict_of(Side::C, Side::A),
                standing(c.decision(Pair::COverA)),
                interval(c.comparison_of(Side::B, Side::C)),
                c.verdict_of(Side::B, Side::C),
                standing(c.decision(Pair::BOverC)),
                calls(c, Side::B),
                calls(c, Side::C)
            );
        }
    }
    md.push('\n');
}
