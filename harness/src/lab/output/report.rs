//! What a report knows about a run (`RunInfo`), the number formats, and
//! report.json and report.csv (report.md: `markdown`). An INVALID row never
//! shows a B number: its B cells say INVALID (the JSON keeps the raw
//! samples, under a name that says they are not validated).

use super::explain::{self, Context};
use super::method;
use crate::lab::measure::results::{summary_json, Column, Pair, Row, Side, Status};
use crate::lab::stats::effect::Comparison;
pub use crate::lab::stats::effect::{dur, num};
use crate::lab::stats::sampling::PRECISION_TARGET_PCT;
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
    /// `--aa`: both sides stock OpenSSL.
    pub aa: bool,
    pub notes: Vec<String>,
}

impl RunInfo {
    /// What the explanations of B's differences need to know.
    pub fn explain_context(&self) -> Context {
        Context {
            aa: self.aa,
            a_in_software: self.environment["a_rsa_path"]
                .as_str()
                .is_none_or(|p| p.starts_with("software")),
        }
    }
}

pub fn all_valid(rows: &[Row]) -> bool {
    !rows.is_empty() && rows.iter().all(Row::valid)
}

/// One column's JSON: every sample, each side's figures, and each
/// comparison with its family's decision and, for B/A, the explanation.
fn column_json(row: &Row, c: &Column, cx: Context) -> Value {
    let side = |side: Side| {
        let s = c.side(side);
        json!({
            "samples": s.iter().map(|x| x.value).collect::<Vec<_>>(),
            "cpu_seconds": s.iter().map(|x| x.cpu).collect::<Vec<_>>(),
            "figure": c.figure(side),
            "per_op": c.per_op(side).map(summary_json),
            "cpu": c.cpu(side).map(summary_json),
        })
    };
    let (status, reason) = match &c.status {
        Status::Measured => ("measured", None),
        Status::Skipped(r) => ("skipped", Some(r.clone())),
        Status::Failed(r) => ("failed", Some(r.clone())),
    };
    let mut comparison = comparison_json(c, Pair::BOverA);
    comparison["method"] = json!(if c.unpaired() {
        "Hodges-Lehmann shift of log times, Mann-Whitney 95 % interval (unpaired)"
    } else {
        "Hodges-Lehmann median of paired log ratios, Wilcoxon signed-rank 95 % interval"
    });
    comparison["precision_target_pct"] = json!(PRECISION_TARGET_PCT);
    comparison["target_met"] = json!(c.precise());
    comparison["sampling"] = json!(c.sampling);
    comparison["explanation"] = match explain::of_measured(row, c, cx) {
        Some(e) => json!({
            "operation": e.operation,
            "b_ran_on": e.b_ran_on,
            "where": e.place,
            "per_process": e.per_process,
            "text": e.text,
        }),
        None => Value::Null,
    };
    let mut v = json!({
        "column": c.kind.key(),
        "title": c.kind.heading(c.count),
        "unit": c.kind.unit().symbol(),
        "figure_is": if c.kind.is_loop() { "total of the per-process wall times" } else { "median" },
        "count": c.count,
        "status": status,
        "reason": reason,
        "note": c.note,
        "commands": c.commands,
        "A": side(Side::A),
        "B": side(Side::B),
        "ratio_B_over_A": c.ratio().map(summary_json),
        "comparison": comparison,
        "B_counted_by_rustica": c.b_counted,
    });
    // Side C's keys only when the lab ran one, so that the reports of an
    // A/B lab keep their shape.
    if !c.c.is_empty() {
        v["C"] = side(Side::C);
        v["comparison_C_over_A"] = comparison_json(c, Pair::COverA);
        v["comparison_B_over_C"] = comparison_json(c, Pair::BOverC);
    }
    if c.card_requests.iter().any(Option::is_some) {
        let per = |s: Side| {
            c.card_requests[Column::side_index(s)].map(|(requests, ops)| {
                json!({"requests": requests, "operations": ops, "per_operation": c.requests_per_op(s)})
            })
        };
        v["card_requests"] = json!({"A": per(Side::A), "B": per(Side::B), "C": per(Side::C)});
    }
    if c.has_cpu() {
        let k = c.cpu_comparison();
        let d = c.cpu_family;
        v["comparison_host_cpu"] = json!({
            "what": "host CPU (user + system) per operation of the process under test, B over A",
            "ratio": k.map(|k| k.ratio),
            "ci95": k.map(|k| vec![k.lo, k.hi]),
            "n": k.map(|k| k.n),
            "p_value": k.map(|k| k.p),
            "p_holm": d.map(|d| d.p_holm),
            "family_size": d.map(|d| d.family_size),
            "differs": d.map(|d| d.survives),
            "verdict": c.cpu_verdict(),
        });
    }
    if let Some(why) = &c.c_failed {
        v["C_failed"] = json!(why);
    }
    if !c.libica_calls.is_empty() {
        v["libica_calls"] = json!(c.libica_calls);
    }
    v
}

/// One comparison: estimate, interval, p-values, whether it counts in its
/// family (`differs`), and the cell's own verdict naming the sides.
fn comparison_json(c: &Column, pair: Pair) -> Value {
    let (side, base) = pair.sides();
    let k = c.comparison_of(side, base);
    let d = c.decision(pair);
    json!({
        "ratio": k.map(|k| k.ratio),
        "ci95": k.map(|k| vec![k.lo, k.hi]),
        "half_width_pct": k.map(|k| k.half_width_pct()),
        "n": k.map(|k| k.n),
        "interval_excludes_1": k.map(|k| k.differs()),
        "p_value": k.map(|k| k.p),
        "p_holm": d.map(|d| d.p_holm),
        "family_size": d.map(|d| d.family_size),
        "survives_family_control": d.map(|d| d.survives),
        "differs": d.map(|d| d.survives),
        "verdict_key": k.map(|k| k.verdict(c.better()).key()),
        "verdict": c.verdict_of(side, base),
    })
}

/// The JSON of one row; an invalid row's B side carries no figures.
fn row_json(r: &Row, cx: Context) -> Value {
    let mut v = json!({
        "bits": r.bits,
        "status": r.status_word(),
        "valid": r.valid(),
        "key_source": r.key_source,
        "b_operations_by_backend": r.backends,
        "checks": r.checks.iter().map(|c| json!({"check": c.name, "ok": c.ok, "detail": c.detail})).collect::<Vec<_>>(),
        "columns": r.columns.iter().map(|c| column_json(r, c, cx)).collect::<Vec<_>>(),
    });
    v["keygen_methods"] = method::of_row(r)
        .into_iter()
        .map(|(k, a, b)| json!({"column": k.key(), "A": a, "B": b}))
        .collect();
    let card: Vec<Value> = card_service_json(r, cx);
    if !card.is_empty() {
        v["card_service"] = if r.valid() {
            json!(card)
        } else {
            json!({"invalid": true})
        };
    }
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
                // Every figure made from B's samples goes with them.
                if c.get("card_requests").is_some() {
                    c["card_requests"]["B"] = json!({"invalid": true});
                }
                for key in ["comparison", "comparison_B_over_C", "comparison_host_cpu"] {
                    if c.get(key).is_some() {
                        c[key] = json!({"invalid": true});
                    }
                }
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
        "aa": info.aa,
        "family_control": {
            "method": "Holm step-down over the two-sided p-values of every cell's rank test, one family per comparison (B/A; C/A and B/C with a side C)",
            "family_wise_alpha": crate::lab::stats::effect::FAMILY_ALPHA,
        },
        "rows": rows.iter().map(|r| row_json(r, info.explain_context())).collect::<Vec<_>>(),
        "order_effect": order_json(rows),
        "b_counters": counters,
        "notes": info.notes,
    });
    if let Some(c) = &info.c_name {
        v["side_C"] = json!(c);
    }
    v
}

/// The card's service time per operation of each cell that read it
/// (`explain::card_time`), the report's line included.
fn card_service_json(r: &Row, cx: Context) -> Vec<Value> {
    r.columns
        .iter()
        .filter_map(|c| {
            let t = explain::card_time(c, cx)?;
            Some(json!({
                "column": c.kind.key(),
                "busy_seconds": t.service.busy_ns as f64 * 1e-9,
                "requests": t.service.requests,
                "operations": t.service.ops,
                "service_seconds_per_operation": t.per_op,
                "service_seconds_per_request": t.per_request,
                "queues": t.service.queues,
                "service_seconds_per_operation_over_queues": t.spread,
                "A_seconds_per_operation": t.a_per_op,
                "A_on_host": t.a_on_host,
                "ratio_to_A": t.ratio_to_a(),
                "B_seconds_per_operation": t.b_per_op,
                "share_of_B": t.share_of_b(),
                "text": t.line(r.bits, c.kind.op_name()),
            }))
        })
        .collect()
}

/// The run's order effect (docs/lab.md, "The order within a pair").
fn order_json(rows: &[Row]) -> Value {
    let o = super::order::of_run(rows);
    json!({
        "what": "B/A with B first over B/A with A first, each paired cell centred on its median, pooled",
        "ratio": o.effect.map(|k| k.ratio),
        "ci95": o.effect.map(|k| vec![k.lo, k.hi]),
        "cells": o.cells,
        "a_first_pairs": o.a_first,
        "b_first_pairs": o.b_first,
    })
}

pub fn csv(rows: &[Row], cx: Context) -> String {
    let mut out = String::from(
        "bits,status,column,unit,count,column_status,a_figure,a_median,a_min,a_max,a_cpu_median,\
         b_figure,b_median,b_min,b_max,b_cpu_median,ratio_median,ratio_min,ratio_max,\
         ratio_estimate,ci95_low,ci95_high,half_width_pct,verdict,target_met,sampling,\
         p_value,p_holm,survives_family_control,explanation",
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
                let d = c.decision(Pair::BOverA);
                let _ = write!(
                    line,
                    ",{},{},\"{}\",{},\"{}\",{},{},{},\"{}\"",
                    interval(k),
                    f(k.map(|k| k.half_width_pct())),
                    c.verdict_text().replace('"', "'"),
                    c.precise(),
                    c.sampling,
                    f(k.map(|k| k.p)),
                    f(d.map(|d| d.p_holm)),
                    d.map(|d| d.survives.to_string()).unwrap_or_default(),
                    explain::of_measured(r, c, cx)
                        .map(|e| e.text.replace('"', "'"))
                        .unwrap_or_default(),
                );
            } else {
                line.push_str(&",INVALID".repeat(19));
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
    use crate::lab::measure::results::{Check, Column, Kind, Sample};
    use crate::lab::output::markdown::markdown;

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
            aa: false,
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
        let (mut rows, info) = (sample_rows(), sample_info());
        crate::lab::output::family::decide(&mut rows);
        let outputs = [
            ("report.md", markdown(&info, &rows)),
            (
                "report.json",
                serde_json::to_string_pretty(&json_report(&info, &rows)).unwrap() + "\n",
            ),
            ("report.csv", csv(&rows, info.explain_context())),
            (
                "chart.svg",
                crate::lab::output::svg::chart(
                    &rows,
                    "RSA cost by key size: time per operation (median)",
                ),
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
        // No figure made from B's samples either: not the interval, not
        // the verdict, not the explanation.
        let invalid = &j["rows"][1]["columns"][0];
        assert_eq!(invalid["comparison"], json!({"invalid": true}), "{invalid}");
        for key in ["ratio", "ci95", "verdict", "explanation"] {
            assert!(invalid["comparison"].get(key).is_none(), "{key}");
        }
        assert!(j["rows"][0]["columns"][0]["ratio_B_over_A"]["median"].is_number());
        let c = csv(&rows, sample_info().explain_context());
        assert!(c
            .lines()
            .any(|l| l.starts_with("2048,INVALID,keygen") && l.ends_with("INVALID")));
        assert!(c.lines().any(|l| l.starts_with("1024,valid,signatures")));
    }
}
