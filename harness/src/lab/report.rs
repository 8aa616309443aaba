//! What a report knows about a run (`RunInfo`), the number formats, and
//! report.json and report.csv (report.md: `markdown`). An INVALID row never
//! shows a B number: its B cells say INVALID (the JSON keeps the raw
//! samples, under a name that says they are not validated).

use super::effect::Comparison;
use super::method;
use super::results::{Column, Row, Side, Status};
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
    /// Side C in words, when the lab ran one.
    pub c_name: Option<String>,
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

/// The JSON of one row; an invalid row's B side carries no figures.
fn row_json(r: &Row) -> Value {
    let mut v = r.to_json();
    v["keygen_methods"] = method::of_row(r)
        .into_iter()
        .map(|(k, a, b)| json!({"column": k.key(), "A": a, "B": b}))
        .collect();
    if !r.c_checks.is_empty() {
        v["C_checks"] = r
            .c_checks
            .iter()
            .map(|c| json!({"name": c.name, "ok": c.ok, "detail": c.detail}))
            .collect();
    }
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
    let mut v = json!({
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
    });
    if let Some(c) = &info.c_name {
        v["side_C"] = json!(c);
    }
    v
}

pub fn csv(rows: &[Row]) -> String {
    let mut out = String::from(
        "bits,status,column,unit,count,column_status,a_figure,a_median,a_min,a_max,a_cpu_median,\
         b_figure,b_median,b_min,b_max,b_cpu_median,ratio_median,ratio_min,ratio_max,\
         ratio_estimate,ci95_low,ci95_high,half_width_pct,verdict,target_met,sampling",
    );
    // Side C's columns only when the lab ran one.
    let with_c = rows
        .iter()
        .any(|r| r.columns.iter().any(|c| !c.c.is_empty()));
    if with_c {
        out.push_str(
            ",c_figure,c_median,c_min,c_max,c_cpu_median,c_over_a_estimate,c_over_a_ci95_low,\
             c_over_a_ci95_high,c_over_a_verdict,b_over_c_estimate,b_over_c_ci95_low,b_over_c_ci95_high,\
             b_over_c_verdict",
        );
    }
    out.push('\n');
    let f = |v: Option<f64>| v.map(|x| format!("{x}")).unwrap_or_default();
    // One side's figure, median, min, max and CPU median.
    let side_fields = |c: &Column, side: Side| {
        let (s, cpu) = (c.per_op(side), c.cpu(side));
        format!(
            "{},{},{},{},{}",
            f(c.figure(side)),
            f(s.map(|s| s.median)),
            f(s.map(|s| s.min)),
            f(s.map(|s| s.max)),
            f(cpu.map(|s| s.median)),
        )
    };
    // An estimate with its interval.
    let interval = |k: Option<Comparison>| {
        format!(
            "{},{},{}",
            f(k.map(|k| k.ratio)),
            f(k.map(|k| k.lo)),
            f(k.map(|k| k.hi))
        )
    };
    for r in rows {
        let ok = r.valid();
        for c in &r.columns {
            let cs = match &c.status {
                Status::Measured => "measured",
                Status::Skipped(_) => "skipped",
                Status::Failed(_) => "failed",
            };
            let unit = c.kind.unit().symbol();
            let mut line = format!(
                "{},{},{},{unit},{},{cs},{}",
                r.bits,
                r.status_word(),
                c.kind.key(),
                c.count,
                side_fields(c, Side::A),
            );
            if ok {
                let rt = c.ratio();
                let _ = write!(
                    line,
                    ",{},{},{},{}",
                    side_fields(c, Side::B),
                    f(rt.map(|s| s.median)),
                    f(rt.map(|s| s.min)),
                    f(rt.map(|s| s.max)),
                );
                let k = c.comparison();
                let _ = write!(
                    line,
                    ",{},{},\"{}\",{},{}",
                    interval(k),
                    f(k.map(|k| k.half_width_pct())),
                    c.verdict_text().replace('"', "'"),
                    c.precise(),
                    c.sampling,
                );
            } else {
                line.push_str(&",INVALID".repeat(15));
            }
            if with_c {
                if ok {
                    let _ = write!(
                        line,
                        ",{},{},\"{}\",{},\"{}\"",
                        side_fields(c, Side::C),
                        interval(c.comparison_of(Side::C, Side::A)),
                        c.verdict_of(Side::C, Side::A).replace('"', "'"),
                        interval(c.comparison_of(Side::B, Side::C)),
                        c.verdict_of(Side::B, Side::C).replace('"', "'"),
                    );
                } else {
                    line.push_str(&",INVALID".repeat(13));
                }
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
    use crate::lab::markdown::markdown;
    use crate::lab::results::{Check, Column, Kind, Sample};

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
            c_name: None,
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
