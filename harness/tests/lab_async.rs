//! `rustica lab --backend libica --async-jobs N`: `openssl speed
//! -async_jobs N` on A and B after the matrix, B validated from rustica's
//! counters (every signature counted, the timed loop's through paused
//! jobs), reported in async-jobs.md and async-jobs.json.
//!
//! The real run needs the built module and the emulated libica beside it
//! ($RUSTICA_MODULE, else target/release/rustica.so; scripts/build.sh).

use serde_json::Value;
use std::fs;
use std::path::Path;
use std::process::Output;

mod common;
use common::lab::{fake_module, Lab};
use common::{real_module, temp_dir, text};

/// The smallest matrix (1024 bits, one of each process, no TLS, speed or
/// new-key columns) plus the async measurement with 8 jobs. Its sampling
/// keeps the default budget: the async rows need 6 rounds for an interval.
fn quick_async_lab(module: &Path, out: &Path) -> Output {
    Lab::small()
        .unset("--cell-budget")
        .unset("--tls-seconds")
        .skip("tls,speed,newkey")
        .set("--async-jobs", "8")
        .on_emulated_libica()
        .module(module)
        .out(out)
        // Each emulated call waits 1 ms for one of 16 units: jobs pause.
        .env("LIBICA_EMU_LATENCY_US", "1000")
        .env("LIBICA_EMU_UNITS", "16")
        .output()
}

fn async_report(out: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(out.join("async-jobs.json")).unwrap()).unwrap()
}

#[test]
fn real_async_jobs_are_counted_as_async() {
    let dir = temp_dir("async-jobs");
    let out = dir.join("out");
    let o = quick_async_lab(&real_module(), &out);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("speed -async_jobs 8: valid"),
        "{}",
        text(&o)
    );
    let j = async_report(&out);
    assert_eq!(j["valid"], true, "{j}");
    assert_eq!(j["async_jobs"], 8);
    let row = &j["rows"][0];
    assert_eq!(row["bits"], 1024);
    let loop_signs = row["b_loop_signs"].as_u64().unwrap();
    let counted = row["b_counted_signs"].as_u64().unwrap();
    let asynced = row["b_counted_async"].as_u64().unwrap();
    assert!(loop_signs > 8, "{row}");
    assert!(counted >= loop_signs, "{row}");
    assert!(asynced >= loop_signs && asynced <= counted, "{row}");
    assert!(row["a_median"].as_f64().unwrap() > 0.0, "{row}");
    assert!(row["b_median"].as_f64().unwrap() > 0.0, "{row}");
    // The lab's sampling rule: at least 6 rounds though --reps says 1, so
    // B/A has a 95 % interval and a verdict.
    assert!(
        row["ci95"].as_array().is_some_and(|a| a.len() == 2),
        "{row}"
    );
    assert!(
        row["verdict"].as_str().is_some_and(|v| !v.is_empty()),
        "{row}"
    );
    assert!(row["a_sign_per_s"].as_array().unwrap().len() >= 6, "{row}");
    let commands = row["commands"].as_array().unwrap();
    assert!(
        commands.iter().all(|c| c
            .as_str()
            .unwrap()
            .contains("speed -elapsed -seconds 1 -async_jobs 8 -mr rsa1024")),
        "{row}"
    );
    let md = fs::read_to_string(out.join("async-jobs.md")).unwrap();
    assert!(
        md.lines()
            .any(|l| l.starts_with("| 1024 |") && l.ends_with("| yes |")),
        "{md}"
    );
    fs::remove_dir_all(&dir).ok();
}

/// OpenSSL's legacy provider loaded as `rustica`: speed runs on the
/// default provider, rustica counts nothing, the async rows are INVALID.
#[test]
fn async_jobs_are_invalid_when_b_does_not_run_on_rustica() {
    let dir = temp_dir("async-invalid");
    let fake = fake_module(&dir);
    let out = dir.join("out");
    let o = quick_async_lab(&fake, &out);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let j = async_report(&out);
    assert_eq!(j["valid"], false, "{j}");
    assert_eq!(j["rows"][0]["valid"], false, "{j}");
    assert_eq!(j["rows"][0]["b_counted_async"], 0, "{j}");
    let md = fs::read_to_string(out.join("async-jobs.md")).unwrap();
    assert!(md.contains("| NO |"), "{md}");
    fs::remove_dir_all(&dir).ok();
}

#[test]
fn async_jobs_need_the_libica_backend() {
    for backend in [None, Some("software")] {
        let mut lab = Lab::bare().set("--sizes", "1024").set("--async-jobs", "8");
        if let Some(b) = backend {
            lab = lab.set("--backend", b);
        }
        let o = lab.output();
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("--async-jobs needs --backend libica"),
            "{}",
            text(&o)
        );
    }
}
