//! End-to-end tests of `rustica lab` that need no rustica at all: set-up
//! failures, Ctrl-C, and a side B that does not run on rustica. They load
//! OpenSSL's own legacy provider under the name `rustica` (a module that
//! loads, so openssl succeeds on the default provider, but counts
//! nothing), which must make every row INVALID.
//!
//! The lab with the real module: lab_real.rs (software backend),
//! lab_libica.rs (the emulated libica), lab_side_c.rs (a third side),
//! lab_aa.rs (A/A), lab_async.rs (--async-jobs).

use std::fs;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

mod common;
use common::lab::{column, fake_module, json, Lab};
use common::{temp_dir, text};

#[test]
fn lab_is_invalid_when_b_does_not_run_on_rustica() {
    let dir = temp_dir("invalid");
    let fake = fake_module(&dir);
    for load in ["config", "flags"] {
        let out = dir.join(format!("out-{load}"));
        let mut lab = Lab::small()
            .unset("--keygen-reps")
            .set("--count", "2")
            .skip("tls,speed,newkey")
            .set("--load", load)
            .module(&fake)
            .out(&out);
        // The second run reuses the first run's key (--keys).
        let reused = dir.join("out-config");
        if load == "flags" {
            lab = lab.set("--keys", &reused);
        }
        let o = lab.output();
        assert_eq!(o.status.code(), Some(1), "{load}: {}", text(&o));
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(stdout.contains("1024 bits: INVALID"), "{stdout}");
        assert!(stdout.contains("counted by rustica"), "{stdout}");

        let md = fs::read_to_string(out.join("report.md")).unwrap();
        assert!(md.contains("**INVALID**"), "{md}");
        let b = md.lines().find(|l| l.starts_with("| 1024 | B |")).unwrap();
        assert!(b.contains("INVALID"), "{b}");
        let cells: Vec<&str> = b.split('|').map(str::trim).collect();
        for c in &cells[3..cells.len() - 1] {
            assert!(
                matches!(*c, "INVALID" | "skipped" | ""),
                "a B number leaked: {b}"
            );
        }
        assert!(
            md.contains("**FAILED**: B's signatures counted by rustica"),
            "{md}"
        );

        let j = json(&out.join("report.json"));
        assert_eq!(j["valid"], false);
        assert_eq!(j["rows"][0]["status"], "INVALID");
        let sig = column(&j["rows"][0], "signatures");
        assert_eq!(sig["B"]["invalid"], true);
        assert!(sig["ratio_B_over_A"].is_null());
        assert!(sig["A"]["figure"].is_number());

        let csv = fs::read_to_string(out.join("report.csv")).unwrap();
        assert!(
            csv.lines()
                .any(|l| l.starts_with("1024,INVALID,signatures") && l.ends_with(",INVALID")),
            "{csv}"
        );
        let svg = fs::read_to_string(out.join("chart.svg")).unwrap();
        assert!(svg.contains(">INVALID</text>"));
        assert!(
            !svg.contains("data-side=\"B\""),
            "no B series for an invalid row"
        );
        if load == "config" {
            // A key generation nobody counted names no method for B.
            let m = &j["rows"][0]["keygen_methods"][0];
            assert_eq!(m["column"], "keygen");
            assert_eq!(m["B"], "none counted by rustica", "{m}");
        }
        if load == "flags" {
            assert_eq!(column(&j["rows"][0], "keygen")["status"], "skipped");
            assert_eq!(
                fs::read(out.join("private-1024.pem")).unwrap(),
                fs::read(reused.join("private-1024.pem")).unwrap()
            );
        }
        // The lab's artifacts are there.
        for f in [
            "private-1024.pem",
            "public-1024.pem",
            "B/signature-1024.bin",
            "B/mycert-1024.pem",
        ] {
            assert!(out.join(f).is_file(), "{f}");
        }
    }
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn lab_setup_failures_are_clear() {
    let dir = temp_dir("setup");
    // Module missing.
    let o = Lab::bare()
        .set("--sizes", "1024")
        .module(Path::new("/nonexistent/rustica.so"))
        .out(&dir.join("a"))
        .output();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("rustica module not found"),
        "{}",
        text(&o)
    );

    // No openssl on PATH.
    let fake = fake_module(&dir);
    let o = Lab::bare()
        .set("--sizes", "1024")
        .module(&fake)
        .env("PATH", &dir.join("empty").to_string_lossy())
        .output();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no `openssl` on PATH"),
        "{}",
        text(&o)
    );

    // Port in use.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port().to_string();
    let o = Lab::bare()
        .set("--sizes", "1024")
        .set("--port", &port)
        .module(&fake)
        .out(&dir.join("b"))
        .output();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("in use"),
        "{}",
        text(&o)
    );

    // A module that does not load at all.
    let broken = dir.join("broken");
    fs::create_dir_all(&broken).unwrap();
    fs::write(broken.join("rustica.so"), b"not a shared object").unwrap();
    let o = Lab::bare()
        .set("--sizes", "1024")
        .module(&broken.join("rustica.so"))
        .out(&dir.join("c"))
        .output();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("does not load"),
        "{}",
        text(&o)
    );
    drop(l);
    let _ = fs::remove_dir_all(&dir);
}

/// Processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmd) = fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(needle) && cmd.contains("s_server") {
                found.push(cmd);
            }
        }
    }
    found
}

#[test]
fn ctrl_c_keeps_partial_results_and_stops_servers() {
    let dir = temp_dir("sigint");
    let fake = fake_module(&dir);
    let out = dir.join("out");
    let mut child = Lab::small()
        .unset("--keygen-reps")
        .unset("--speed-seconds")
        .set("--sizes", "1024,2048")
        .set("--count", "2")
        .set("--reps", "50")
        .skip("speed,newkey")
        .module(&fake)
        .out(&out)
        .command()
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until a server has been started, then interrupt.
    let deadline = Instant::now() + Duration::from_secs(300);
    while !out.join("logs/s_server-B.stderr").exists() {
        assert!(
            Instant::now() < deadline,
            "the lab never started a B server"
        );
        assert!(child.try_wait().unwrap().is_none(), "the lab ended early");
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: sending SIGINT to our own child process.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("partial results kept"),
        "{}",
        text(&o)
    );
    let md = fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("INCOMPLETE"), "{md}");
    let j = json(&out.join("report.json"));
    assert_eq!(j["interrupted"], true);
    assert_eq!(j["rows"][0]["status"], "INCOMPLETE");
    let left = processes_mentioning(&out.to_string_lossy());
    assert!(left.is_empty(), "servers left running: {left:?}");
    let _ = fs::remove_dir_all(&dir);
}
