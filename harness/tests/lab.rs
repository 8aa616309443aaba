//! End-to-end tests of `rustica lab` and `rustica stats`, driving the real
//! `rustica` binary and the stock `openssl` command with small sizes and
//! counts.
//!
//! Tests named `real_*` need the built provider module: $RUSTICA_MODULE,
//! else target/release/rustica.so of the workspace (scripts/build.sh makes
//! it). They fail with that message when it is missing.
//!
//! The negative tests need no rustica at all: they load OpenSSL's own
//! legacy provider under the name `rustica` (a module that loads, so
//! openssl succeeds on the default provider, but counts nothing), which
//! must make every row INVALID.

use ibmca_shim::stats::{self, Backend, Op};
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn rustica() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rustica"));
    c.env_remove("RUSTICA_MODULE")
        .env_remove("RUSTICA_STATS_PATH");
    c.stdin(Stdio::null());
    c
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rustica-harness-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

/// OpenSSL's legacy provider, copied as `rustica.so`: loads fine, does no
/// RSA, counts nothing.
fn fake_module(dir: &Path) -> PathBuf {
    let out = Command::new("openssl")
        .args(["version", "-m"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let modules = text
        .split('"')
        .nth(1)
        .expect("MODULESDIR in `openssl version -m`");
    let legacy = Path::new(modules).join("legacy.so");
    assert!(
        legacy.is_file(),
        "{} is needed for the negative tests",
        legacy.display()
    );
    let fake = dir.join("rustica.so");
    fs::copy(&legacy, &fake).unwrap();
    fake
}

/// The real module: $RUSTICA_MODULE, else the workspace's release build.
fn real_module() -> PathBuf {
    let p = match std::env::var_os("RUSTICA_MODULE") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/release/rustica.so"),
    };
    assert!(
        p.is_file(),
        "the rustica module {} is missing: run scripts/build.sh first (or set RUSTICA_MODULE)",
        p.display()
    );
    p
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

fn column<'a>(row: &'a Value, key: &str) -> &'a Value {
    row["columns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["column"] == key)
        .unwrap_or_else(|| panic!("no column {key}"))
}

#[test]
fn stats_table_json_and_reset() {
    let dir = temp_dir("stats");
    let path = dir.join("counters");
    let st = stats::Stats::open(&path).unwrap();
    st.record(Op::Sign, Backend::Software, 2048);
    st.record(Op::Sign, Backend::Software, 2048);
    st.record(Op::Verify, Backend::Libica, 4096);
    drop(st);

    let o = rustica()
        .args(["stats", "--json", "--path"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["ops"]["sign"]["software"], 2);
    assert_eq!(j["ops"]["sign"]["by_bits"]["2048"], 2);
    assert_eq!(j["ops"]["verify"]["libica"], 1);
    assert_eq!(j["ops"]["keygen"]["failed"], 0);

    // The default path comes from RUSTICA_STATS_PATH; the table names
    // every operation with its counts by key size.
    let o = rustica()
        .arg("stats")
        .env("RUSTICA_STATS_PATH", &path)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let t = String::from_utf8_lossy(&o.stdout);
    let sign = t.lines().find(|l| l.starts_with("sign")).unwrap();
    assert!(sign.contains("2048:2"), "{t}");
    assert!(t.lines().any(|l| l.starts_with("decrypt")), "{t}");

    let o = rustica()
        .args(["stats", "--reset", "--path"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("counters reset"));
    assert_eq!(stats::snapshot(&path).unwrap().total(Op::Sign), 0);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn lab_is_invalid_when_b_does_not_run_on_rustica() {
    let dir = temp_dir("invalid");
    let fake = fake_module(&dir);
    for load in ["config", "flags"] {
        let out = dir.join(format!("out-{load}"));
        let mut cmd = rustica();
        cmd.args(["lab", "--sizes", "1024", "--count", "2", "--reps", "1"])
            .args(["--skip", "tls,speed,newkey", "--load", load, "--module"])
            .arg(&fake)
            .arg("--out")
            .arg(&out);
        // The second run reuses the first run's key (--keys).
        let reused = dir.join("out-config");
        if load == "flags" {
            cmd.arg("--keys").arg(&reused);
        }
        let o = cmd.output().unwrap();
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
    let o = rustica()
        .args([
            "lab",
            "--sizes",
            "1024",
            "--module",
            "/nonexistent/rustica.so",
            "--out",
        ])
        .arg(dir.join("a"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("rustica module not found"),
        "{}",
        text(&o)
    );

    // No openssl on PATH.
    let fake = fake_module(&dir);
    let o = rustica()
        .args(["lab", "--sizes", "1024", "--module"])
        .arg(&fake)
        .env("PATH", dir.join("empty"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no `openssl` on PATH"),
        "{}",
        text(&o)
    );

    // Port in use.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port().to_string();
    let o = rustica()
        .args(["lab", "--sizes", "1024", "--port", &port, "--module"])
        .arg(&fake)
        .arg("--out")
        .arg(dir.join("b"))
        .output()
        .unwrap();
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
    let o = rustica()
        .args(["lab", "--sizes", "1024", "--module"])
        .arg(broken.join("rustica.so"))
        .arg("--out")
        .arg(dir.join("c"))
        .output()
        .unwrap();
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
    let mut child = rustica()
        .args([
            "lab",
            "--sizes",
            "1024,2048",
            "--count",
            "2",
            "--reps",
            "50",
            "--tls-seconds",
            "1",
        ])
        .args(["--skip", "speed,newkey", "--module"])
        .arg(&fake)
        .arg("--out")
        .arg(&out)
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

#[test]
fn real_quick_lab_is_valid_and_reported() {
    let module = real_module();
    let dir = temp_dir("real");
    let out = dir.join("out");
    let o = rustica()
        .args([
            "lab",
            "--sizes",
            "1024",
            "--count",
            "3",
            "--reps",
            "2",
            "--tls-seconds",
            "1",
        ])
        .args(["--speed-seconds", "1", "--newkey-certs", "1", "--module"])
        .arg(&module)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    let md = fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("**VALID**"), "{md}");
    for side in ["A", "B", "B/A"] {
        let prefix = format!("| 1024 | {side} |");
        let line = md
            .lines()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("{prefix}\n{md}"));
        assert!(
            !line.contains("INVALID") && !line.contains("FAILED"),
            "{line}"
        );
    }
    assert!(
        md.contains("3 signatures (s)") && md.contains("TLS 1.3 handshakes/s"),
        "{md}"
    );
    assert!(md.contains("SECLEVEL=1"), "the 1024-bit TLS note: {md}");

    let j = json(&out.join("report.json"));
    assert_eq!(j["valid"], true);
    assert_eq!(
        j["environment"]["provider_name"]
            .as_str()
            .map(|s| s.contains("rustica")),
        Some(true)
    );
    let row = &j["rows"][0];
    assert_eq!(row["status"], "valid");
    // Every column of the matrix, in table order, each measured.
    let columns: Vec<&str> = row["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["column"].as_str().unwrap())
        .collect();
    assert_eq!(
        columns,
        [
            "keygen",
            "signatures",
            "verifications",
            "certificates",
            "certificates_new_key",
            "tls13_handshakes",
            "tls12_ecdhe_rsa_handshakes",
            "speed_sign",
            "speed_verify"
        ]
    );
    assert!(row["columns"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["status"] == "measured"));
    // One counter check for each of the seven steps (TLS and speed each
    // fill two columns).
    let counted = row["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["check"].as_str().unwrap().contains("counted by rustica"))
        .count();
    assert_eq!(counted, 7, "{}", row["checks"]);
    let sig = column(row, "signatures");
    assert_eq!(sig["A"]["samples"].as_array().unwrap().len(), 3);
    assert_eq!(sig["B"]["samples"].as_array().unwrap().len(), 3);
    assert!(sig["ratio_B_over_A"]["median"].as_f64().unwrap() > 0.0);
    assert_eq!(
        column(row, "keygen")["B"]["samples"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    for k in [
        "tls13_handshakes",
        "tls12_ecdhe_rsa_handshakes",
        "speed_sign",
        "speed_verify",
    ] {
        assert!(
            column(row, k)["B"]["per_op"]["median"].as_f64().unwrap() > 0.0,
            "{k}"
        );
    }
    assert!(row["checks"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["ok"] == true));
    // Every B operation is in the run's private counters.
    assert!(
        j["b_counters"]["ops"]["sign"]["by_bits"]["1024"]
            .as_u64()
            .unwrap()
            >= 3 + 3
    );

    let csv = fs::read_to_string(out.join("report.csv")).unwrap();
    assert!(
        csv.lines()
            .any(|l| l.starts_with("1024,valid,signatures,s,3,measured,")),
        "{csv}"
    );
    let svg = fs::read_to_string(out.join("chart.svg")).unwrap();
    assert!(
        svg.contains("data-kind=\"signatures\" data-side=\"B\""),
        "{svg}"
    );
    assert!(
        svg.contains("data-kind=\"keygen\" data-side=\"A\""),
        "{svg}"
    );
    assert!(!svg.contains("INVALID"));
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn real_flags_mode_is_valid() {
    let module = real_module();
    let dir = temp_dir("real-flags");
    let out = dir.join("out");
    let o = rustica()
        .args([
            "lab", "--load", "flags", "--sizes", "2048", "--count", "2", "--reps", "1",
        ])
        .args(["--skip", "newkey,speed", "--module"])
        .arg(&module)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let j = json(&out.join("report.json"));
    assert_eq!(j["load"], "flags");
    assert_eq!(j["rows"][0]["status"], "valid");
    let _ = fs::remove_dir_all(&dir);
}
