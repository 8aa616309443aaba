//! report.md: the verdict, the lab-shaped table, key generation methods,
//! time per operation, validation, notes and command lines. An INVALID row
//! never shows a B number: its B cells say INVALID.

use super::family::standing;
use super::method;
use super::order;
use super::report::{all_valid, dur, num, RunInfo};
use super::summary::{cpu_differences, differences, side_c_differences};
use crate::lab::measure::results::{Column, Kind, Pair, Row, Side, Status, Unit};
use crate::lab::stats::sampling::PRECISION_TARGET_PCT;
use std::fmt::Write as _;

/// A ratio's two table cells, "1.05×" and "1.02–1.08", or dashes.
fn ratio_and_interval(k: Option<crate::lab::stats::effect::Comparison>) -> (String, String) {
    match k {
        Some(k) => (
            format!("{}×", num(k.ratio)),
            format!("{}–{}", num(k.lo), num(k.hi)),
        ),
        None => ("-".into(), "-".into()),
    }
}

/// B/A with its 95 % interval, or why there is none.
fn ratio_cell(c: &Column) -> String {
    match c.comparison() {
        Some(k) => format!("{}× [{}–{}]", num(k.ratio), num(k.lo), num(k.hi)),
        None => "too few to tell".into(),
    }
}

fn status_cell(c: &Column) -> Option<String> {
    match &c.status {
        Status::Measured => None,
        Status::Skipped(_) => Some("skipped".into()),
        Status::Failed(_) => Some("FAILED".into()),
    }
}

fn figure_cell(c: &Column, side: Side) -> String {
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
fn column_order(rows: &[Row]) -> Vec<(Kind, usize)> {
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

/// The sides that ran, in report order.
fn sides_of(info: &RunInfo) -> &'static [Side] {
    if info.c_name.is_some() {
        &[Side::A, Side::B, Side::C]
    } else {
        &[Side::A, Side::B]
    }
}

/// Where each side's RSA ran by the kernel's count: card requests per
/// signature and per verification (the per-process columns) of every
/// valid row, or "no card".
fn card_line(info: &RunInfo, rows: &[Row]) -> String {
    let counters = &info.environment["zcrypt_counters"];
    let Some(dir) = counters["dir"].as_str() else {
        return "Card requests: no card (no zcrypt request counters on this host), so no side's RSA \
                reached a crypto card"
            .into();
    };
    let mut per_side = Vec::new();
    for &side in sides_of(info) {
        let mut cells = Vec::new();
        for r in rows.iter().filter(|r| r.valid()) {
            for kind in [Kind::Signatures, Kind::Verifications] {
                if let Some(x) = r.column(kind).and_then(|c| c.requests_per_op(side)) {
                    let what = if kind == Kind::Signatures {
                        "signature"
                    } else {
                        "verification"
                    };
                    cells.push(format!("{} per {what} at {} bits", num2(x), r.bits));
                }
            }
        }
        if !cells.is_empty() {
            per_side.push(format!("{}: {}", side.name(), cells.join(", ")));
        }
    }
    format!(
        "Card requests per operation, by the kernel's counters ({dir}/devices/ap; a side at 0 ran on the host): {}",
        if per_side.is_empty() { "none measured".to_string() } else { per_side.join("; ") }
    )
}

/// Requests per operation: two decimals, as a count reads.
fn num2(x: f64) -> String {
    format!("{x:.2}")
}

/// Every cell's card requests per operation, per side.
fn md_card_requests(md: &mut String, info: &RunInfo, rows: &[Row]) {
    if info.environment["zcrypt_counters"]["dir"]
        .as_str()
        .is_none()
    {
        return;
    }
    let sides = sides_of(info);
    let _ = writeln!(
        md,
        "## Card requests per operation (the kernel's counters)\n"
    );
    let _ = writeln!(
        md,
        "zcrypt's `request_count` of every card, read before and after each side's run of each cell, over the \
         run's operations (per process: its one operation; TLS: per handshake, the server's signature and the \
         client's (A's) verification; `openssl speed`: per operation of the phase; DNS signers and speed -multi: \
         per signature). 0: the side's RSA ran on the host.\n"
    );
    let head: Vec<&str> = sides.iter().map(|s| s.name()).collect();
    let _ = writeln!(md, "| RSA bits | column | {} |", head.join(" | "));
    let _ = writeln!(md, "|---:|---|{}", "---:|".repeat(sides.len()));
    for r in rows {
        for c in r
            .columns
            .iter()
            .filter(|c| matches!(c.status, Status::Measured))
        {
            let cells: Vec<String> = sides
                .iter()
                .map(|&s| {
                    if s == Side::B && !r.valid() {
                        "INVALID".into()
                    } else {
                        c.requests_per_op(s).map_or("-".into(), num2)
                    }
                })
                .collect();
            let _ = writeln!(
                md,
                "| {} | {} | {} |",
                r.bits,
                c.kind.op_name(),
                cells.join(" | ")
            );
        }
    }
    md.push('\n');
}

/// The run's order effect in one line, if it could be measured.
fn order_line(rows: &[Row]) -> Option<String> {
    let o = order::of_run(rows);
    let k = o.effect?;
    Some(format!(
        "Order within a pair (A first in odd-numbered rounds, B first in even ones): B/A with B first over B/A with A first {}× [{}–{}] over {} paired cells ({} A-first and {} B-first pairs){}",
        num(k.ratio),
        num(k.lo),
        num(k.hi),
        o.cells,
        o.a_first,
        o.b_first,
        if k.differs() {
            "; the order moves a pair's ratio, and alternation balances it"
        } else {
            "; no order effect detected"
        }
    ))
}

/// Host CPU per operation for A and B, its B/A with an interval, and the
/// cell's standing in the CPU family.
fn md_cpu(md: &mut String, rows: &[Row]) {
    let _ = writeln!(
        md,
        "## Host CPU per operation
"
    );
    let _ = writeln!(
        md,
        "User + system CPU of the process under test per operation (per-process columns: the whole `openssl` process; \
         TLS: the server per handshake; `openssl speed`: the signing or verifying phase, from the process's CPU as each \
         phase began and ended; DNS signers: per signature). Where the card answers, this is what the host still pays: \
         what offload frees is A's CPU less B's. B/A with its 95 % interval; the cells form a family of their own (Holm, 5 %).\n"
    );
    let _ = writeln!(
        md,
        "| RSA bits | column | A CPU/op | B CPU/op | B/A | 95 % interval | verdict | counts |"
    );
    let _ = writeln!(md, "|---:|---|---:|---:|---:|---|---|---|");
    for r in rows {
        for c in r
            .columns
            .iter()
            .filter(|c| matches!(c.status, Status::Measured) && c.has_cpu())
        {
            let a = c.cpu(Side::A).map_or("-".into(), |s| dur(s.median));
            if !r.valid() {
                let _ = writeln!(
                    md,
                    "| {} | {} | {a} | INVALID | INVALID | INVALID | INVALID | |",
                    r.bits,
                    c.kind.op_name()
                );
                continue;
            }
            let b = c.cpu(Side::B).map_or("-".into(), |s| dur(s.median));
            let (ratio, interval) = ratio_and_interval(c.cpu_comparison());
            let _ = writeln!(
                md,
                "| {} | {} | {a} | {b} | {ratio} | {interval} | {} | {} |",
                r.bits,
                c.kind.op_name(),
                c.cpu_verdict(),
                standing(c.cpu_family)
            );
        }
    }
    md.push('\n');
}

/// Each paired cell's order effect (docs/lab.md, "The order within a
/// pair").
fn md_order(md: &mut String, rows: &[Row]) {
    let _ = writeln!(
        md,
        "## The order within a pair
"
    );
    let _ = writeln!(
        md,
        "A runs first in odd-numbered rounds and B in even ones. Per paired cell: B/A from the rounds where B ran first \
         over B/A from those where A ran first (Hodges–Lehmann, Mann–Whitney 95 % interval). About one cell in twenty \
         excludes 1× by chance.\n"
    );
    let _ = writeln!(
        md,
        "| RSA bits | column | B first / A first | 95 % interval |"
    );
    let _ = writeln!(md, "|---:|---|---:|---|");
    for r in rows.iter().filter(|r| r.valid()) {
        for c in &r.columns {
            if let Some(k) = order::of_column(c) {
                let _ = writeln!(
                    md,
                    "| {} | {} | {}× | {}–{} |",
                    r.bits,
                    c.kind.op_name(),
                    num(k.ratio),
                    num(k.lo),
                    num(k.hi)
                );
            }
        }
    }
    if let Some(line) = order_line(rows) {
        let _ = writeln!(md, "\n{line}.");
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

/// Which method made each side's keys, per key size.
fn md_keygen_methods(md: &mut String, rows: &[Row]) {
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
fn md_per_operation(md: &mut String, rows: &[Row]) {
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
fn md_validation(md: &mut String, rows: &[Row]) {
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
fn md_notes(md: &mut String, info: &RunInfo, rows: &[Row]) {
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
fn md_commands(md: &mut String, rows: &[Row]) {
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
