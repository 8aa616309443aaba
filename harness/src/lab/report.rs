//! report.md, report.json and report.csv. An INVALID row never shows a B
//! number: its B cells say INVALID (the JSON keeps the raw samples, under a
//! name that says they are not validated).

use super::method;
use super::results::{Column, Kind, Row, Status, Summary, Unit};
use serde_json::{json, Value};
use std::fmt::Write as _;

/// Everything about a run that is not a row.
#[derive(Clone, Debug)]
pub struct RunInfo {
    pub started: String,
    pub duration_s: f64,
    pub command_line: String,
    pub load: String,
    /// How B loaded rustica for the `openssl speed` column, in words.
    pub speed_load: String,
    pub module: String,
    pub backend: Option<String>,
    pub libica: Option<String>,
    pub environment: Value,
    pub options: Value,
    pub interrupted: bool,
    /// rustica's counters for the run (B's private file), as JSON text.
    pub b_counters: Option<String>,
    pub notes: Vec<String>,
}

pub fn all_valid(rows: &[Row]) -> bool {
    !rows.is_empty() && rows.iter().all(Row::valid)
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

fn ratio_cell(s: Option<Summary>) -> String {
    match s {
        Some(s) => format!("{}×", num(s.median)),
        None => "-".into(),
    }
}

fn ratio_range(s: Option<Summary>) -> String {
    match s {
        Some(s) => format!("{}× [{}–{}]", num(s.median), num(s.min), num(s.max)),
        None => "-".into(),
    }
}

fn status_cell(c: &Column) -> Option<String> {
    match &c.status {
        Status::Measured => None,
        Status::Skipped(_) => Some("skipped".into()),
        Status::Failed(_) => Some("FAILED".into()),
    }
}

fn figure_cell(c: &Column, b: bool) -> String {
    if let Status::Skipped(_) = c.status {
        return "skipped".into();
    }
    let f = match c.figure(b) {
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
    let _ = writeln!(
        md,
        "# rustica lab: the workshop's RSA matrix, without (A) and with (B) rustica\n"
    );
    md_summary(&mut md, info, rows);
    md_results(&mut md, rows);
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
    let _ = writeln!(md, "{}", side_b_line(info));
    let _ = writeln!(md, "- B for `openssl speed`: {}.\n", info.speed_load);
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
         The B/A row is the median of ratios taken pair by pair (A and B runs alternate, so drift hits both): \
         for times, above 1× means B is slower; for rates (handshakes/s, sign/s, verify/s), above 1× means B is faster.\n"
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
        for (label, side) in [("A", Some(false)), ("B", Some(true)), ("B/A", None)] {
            let mut line = format!("| {} | {label} |", r.bits);
            for (k, _) in &cols {
                let cell = match r.column(*k) {
                    None => "-".into(),
                    Some(c) => match side {
                        Some(false) => figure_cell(c, false),
                        Some(true) if !ok => "INVALID".into(),
                        Some(true) => figure_cell(c, true),
                        None if !ok => "INVALID".into(),
                        None => status_cell(c).unwrap_or_else(|| ratio_cell(c.ratio())),
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
        "| RSA bits | operation | A wall | B wall | B/A [min–max] | A CPU | B CPU |"
    );
    let _ = writeln!(md, "|---:|---|---:|---:|---:|---:|---:|");
    for r in rows {
        let ok = r.valid();
        for c in &r.columns {
            if matches!(c.status, Status::Skipped(_)) || (c.a.is_empty() && c.b.is_empty()) {
                continue;
            }
            let wall = |b: bool| match (c.per_op(b), c.kind.unit()) {
                (Some(s), Unit::Seconds) => {
                    format!("{} [{}–{}]", dur(s.median), dur(s.min), dur(s.max))
                }
                (Some(s), Unit::PerSecond) => {
                    format!("{}/s [{}–{}]", num(s.median), num(s.min), num(s.max))
                }
                (None, _) => "-".into(),
            };
            let cpu = |b: bool| match c.cpu(b) {
                Some(s) if s.max > 0.0 => dur(s.median),
                _ => "-".into(),
            };
            let (bw, br, bc) = if ok {
                (wall(true), ratio_range(c.ratio()), cpu(true))
            } else {
                ("INVALID".into(), "INVALID".into(), "INVALID".into())
            };
            let _ = writeln!(
                md,
                "| {} | {} | {} | {bw} | {br} | {} | {bc} |",
                r.bits,
                c.kind.op_name(),
                wall(false),
                cpu(false)
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

/// The JSON of one row; an invalid row's B side carries no figures.
fn row_json(r: &Row) -> Value {
    let mut v = r.to_json();
    v["keygen_methods"] = method::of_row(r)
        .into_iter()
        .map(|(k, a, b)| json!({"column": k.key(), "A": a, "B": b}))
        .collect();
    if !r.valid() {
        if let Some(cols) = v["columns"].as_array_mut() {
            for c in cols {
                let samples = c["B"]["samples"].take();
                c["B"] = json!({"invalid": true, "unvalidated_samples": samples});
                c["ratio_B_over_A"] = Value::Null;
            }
        }
    }
    v
}

pub fn json_report(info: &RunInfo, rows: &[Row]) -> Value {
    let counters = info
        .b_counters
        .as_deref()
        .and_then(|s| serde_json::from_str::<Value>(s).ok())
        .unwrap_or(Value::Null);
    json!({
        "tool": "rustica lab",
        "version": env!("CARGO_PKG_VERSION"),
        "started": info.started,
        "duration_seconds": info.duration_s,
        "command_line": info.command_line,
        "valid": all_valid(rows) && !info.interrupted,
        "interrupted": info.interrupted,
        "load": info.load,
        "load_speed": info.speed_load,
        "module": info.module,
        "backend_requested": info.backend,
        "libica_requested": info.libica,
        "options": info.options,
        "environment": info.environment,
        "keygen_method_rule": method::EXPLANATION,
        "rows": rows.iter().map(row_json).collect::<Vec<_>>(),
        "b_counters": counters,
        "notes": info.notes,
    })
}

pub fn csv(rows: &[Row]) -> String {
    let mut out = String::from(
        "bits,status,column,unit,count,column_status,a_figure,a_median,a_min,a_max,a_cpu_median,\
         b_figure,b_median,b_min,b_max,b_cpu_median,ratio_median,ratio_min,ratio_max\n",
    );
    let f = |v: Option<f64>| v.map(|x| format!("{x}")).unwrap_or_default();
    for r in rows {
        let ok = r.valid();
        for c in &r.columns {
            let cs = match &c.status {
                Status::Measured => "measured",
                Status::Skipped(_) => "skipped",
                Status::Failed(_) => "failed",
            };
            let unit = match c.kind.unit() {
                Unit::Seconds => "s",
                Unit::PerSecond => "1/s",
            };
            let (a, acpu) = (c.per_op(false), c.cpu(false));
            let mut line = format!(
                "{},{},{},{unit},{},{cs},{},{},{},{},{}",
                r.bits,
                r.status_word(),
                c.kind.key(),
                c.count,
                f(c.figure(false)),
                f(a.map(|s| s.median)),
                f(a.map(|s| s.min)),
                f(a.map(|s| s.max)),
                f(acpu.map(|s| s.median)),
            );
            if ok {
                let (b, bcpu, rt) = (c.per_op(true), c.cpu(true), c.ratio());
                let _ = write!(
                    line,
                    ",{},{},{},{},{},{},{},{}",
                    f(c.figure(true)),
                    f(b.map(|s| s.median)),
                    f(b.map(|s| s.min)),
                    f(b.map(|s| s.max)),
                    f(bcpu.map(|s| s.median)),
                    f(rt.map(|s| s.median)),
                    f(rt.map(|s| s.min)),
                    f(rt.map(|s| s.max)),
                );
            } else {
                line.push_str(&",INVALID".repeat(8));
            }
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use crate::lab::results::{Check, Sample};

    pub fn sample_rows() -> Vec<Row> {
        let mk = |bits: u32, ok: bool| {
            let mut r = Row::new(bits);
            let f = bits as f64 / 1024.0;
            for (k, a, b) in [
                (Kind::Keygen, 0.016 * f * f, 0.017 * f * f),
                (Kind::Signatures, 0.008 * f, 0.0082 * f),
                (Kind::Verifications, 0.007, 0.0071),
                (Kind::Tls13, 900.0 / f, 880.0 / f),
            ] {
                let mut c = Column::new(k, 3);
                c.a = vec![
                    Sample {
                        value: a,
                        cpu: a / 2.0
                    };
                    3
                ];
                c.b = vec![
                    Sample {
                        value: b,
                        cpu: b / 2.0
                    };
                    3
                ];
                r.columns.push(c);
            }
            r.columns
                .push(Column::skipped(Kind::SpeedSign, 0, "--skip speed"));
            r.checks
                .push(Check::new("counted", ok, "sign: expected 3, counted 3"));
            r.key_source = "generated by B".into();
            r
        };
        vec![mk(1024, true), mk(2048, false)]
    }

    pub fn sample_info() -> RunInfo {
        RunInfo {
            started: "2026-01-01 00:00:00".into(),
            duration_s: 12.5,
            command_line: "rustica lab --sizes 1024,2048".into(),
            load: "config".into(),
            speed_load: "config (openssl-B.cnf), as every other column".into(),
            module: "/x/rustica.so".into(),
            backend: None,
            libica: None,
            environment: json!({"cpu": "Test CPU", "cores": 2, "arch": "x86_64", "openssl_version": "OpenSSL 3.0.19"}),
            options: json!({}),
            interrupted: false,
            b_counters: Some("{\"ops\": {}}".into()),
            notes: vec!["a note".into()],
        }
    }

    /// The four outputs of the sample rows, byte for byte as recorded in
    /// harness/tests/fixtures/lab-report/ (RUSTICA_RECORD_REPORT=1 records
    /// them): moving code around must not change a report.
    #[test]
    fn outputs_match_the_recorded_reports() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lab-report");
        let (rows, info) = (sample_rows(), sample_info());
        let outputs = [
            ("report.md", markdown(&info, &rows)),
            (
                "report.json",
                serde_json::to_string_pretty(&json_report(&info, &rows)).unwrap() + "\n",
            ),
            ("report.csv", csv(&rows)),
            (
                "chart.svg",
                crate::lab::svg::chart(&rows, "RSA cost by key size: time per operation (median)"),
            ),
        ];
        let record = std::env::var_os("RUSTICA_RECORD_REPORT").is_some();
        for (name, text) in outputs {
            let path = dir.join(name);
            if record {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&path, &text).unwrap();
            }
            let recorded = std::fs::read_to_string(&path).unwrap();
            assert!(recorded == text, "{name} differs from {}", path.display());
        }
    }

    #[test]
    fn numbers() {
        assert_eq!(num(0.77), "0.770");
        assert_eq!(num(0.0123456), "0.0123");
        assert_eq!(num(14.471), "14.5");
        assert_eq!(num(579.5), "580");
        assert_eq!(num(10021.4), "10021");
        assert_eq!(dur(0.0083), "8.30 ms");
        assert_eq!(dur(2.0), "2.00 s");
    }

    #[test]
    fn invalid_rows_show_no_b_numbers() {
        let rows = sample_rows();
        let md = markdown(&sample_info(), &rows);
        assert!(md.contains("**INVALID**: rows 2048"), "{md}");
        let line_b_1024 = md.lines().find(|l| l.starts_with("| 1024 | B |")).unwrap();
        assert!(!line_b_1024.contains("INVALID"), "{line_b_1024}");
        let line_b_2048 = md.lines().find(|l| l.starts_with("| 2048 | B |")).unwrap();
        assert!(line_b_2048.contains("INVALID"));
        let cells: Vec<&str> = line_b_2048.split('|').map(str::trim).collect();
        // bits, side, then every column cell is INVALID or skipped
        for c in &cells[3..cells.len() - 2] {
            assert!(*c == "INVALID" || *c == "skipped", "{line_b_2048}");
        }
        let j = json_report(&sample_info(), &rows);
        assert_eq!(j["valid"], false);
        assert_eq!(j["rows"][0]["status"], "valid");
        assert_eq!(j["rows"][1]["status"], "INVALID");
        assert_eq!(j["rows"][1]["columns"][0]["B"]["invalid"], true);
        assert!(j["rows"][1]["columns"][0]["ratio_B_over_A"].is_null());
        assert!(j["rows"][0]["columns"][0]["ratio_B_over_A"]["median"].is_number());
        let c = csv(&rows);
        assert!(c
            .lines()
            .any(|l| l.starts_with("2048,INVALID,keygen") && l.ends_with("INVALID")));
        assert!(c.lines().any(|l| l.starts_with("1024,valid,signatures")));
    }
}
