//! End-to-end tests of `rustica lab`, driving the real `rustica` binary
//! and the stock `openssl` command with small sizes and counts.
//!
//! Tests named `real_*` need the built provider module: $RUSTICA_MODULE,
//! else target/release/rustica.so of the workspace (scripts/build.sh makes
//! it). They fail with that message when it is missing.
//!
//! The negative tests need no rustica at all: they load OpenSSL's own
//! legacy provider under the name `rustica` (a module that loads, so
//! openssl succeeds on the default provider, but counts nothing), which
//! must make every row INVALID.

use serde_json::Value;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{real_module, rustica, temp_dir, text};

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
fn lab_is_invalid_when_b_does_not_run_on_rustica() {
    let dir = temp_dir("invalid");
    let fake = fake_module(&dir);
    for load in ["config", "flags"] {
        let out = dir.join(format!("out-{load}"));
        let mut cmd = rustica();
        cmd.args([
            "lab",
            "--sizes",
            "1024",
            "--count",
            "2",
            "--reps",
            "1",
            "--cell-budget",
            "0",
        ])
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
            "--cell-budget",
            "0",
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
            "--cell-budget",
            "0",
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
            "speed_verify",
            "speed_sign_per_core",
            "speed_linearity",
            "speed_cpu_per_sign"
        ]
    );
    assert!(row["columns"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["status"] == "measured"));
    // One counter check for each of the eight steps (TLS and speed each
    // fill two columns, speed -multi three).
    let counted = row["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["check"].as_str().unwrap().contains("counted by rustica"))
        .count();
    assert_eq!(counted, 8, "{}", row["checks"]);
    let sig = column(row, "signatures");
    assert_eq!(sig["A"]["samples"].as_array().unwrap().len(), 3);
    assert_eq!(sig["B"]["samples"].as_array().unwrap().len(), 3);
    assert!(sig["ratio_B_over_A"]["median"].as_f64().unwrap() > 0.0);
    // With --cell-budget 0 the planned 3 pairs are too few for a 95 %
    // interval: the verdict says so rather than showing a ratio.
    assert_eq!(sig["comparison"]["verdict"], "not enough samples to tell");
    assert!(sig["comparison"]["ci95"].is_null());
    assert_eq!(sig["comparison"]["sampling"], "planned runs");
    assert!(
        md.contains("## B against A: intervals and verdicts"),
        "{md}"
    );
    // Key generation has its own count, 15 per side at 1024 bits by
    // default (it was --reps, so 2 here), A and B alternating key by key.
    let keygen = column(row, "keygen");
    for side in ["A", "B"] {
        assert_eq!(
            keygen[side]["samples"].as_array().unwrap().len(),
            15,
            "{side}"
        );
    }
    assert_eq!(j["options"]["keygen_reps"]["1024"], 15);
    assert_eq!(j["options"]["reps"], 2);
    let written = |side: &str, i: usize| {
        fs::metadata(out.join(format!("{side}/keygen/private-1024-{i}.pem")))
            .and_then(|m| m.modified())
            .unwrap()
    };
    let mut order = Vec::new();
    for i in 1..=15 {
        order.push(written("A", i));
        order.push(written("B", i));
    }
    assert!(
        order.windows(2).all(|w| w[0] <= w[1]),
        "key files not written A B A B: {order:?}"
    );
    assert!(
        column(row, "tls13_handshakes")["A"]["samples"]
            .as_array()
            .unwrap()
            .len()
            == 2,
        "TLS rounds stay --reps"
    );
    // Which method made the keys: the default provider's classic method
    // at 1024 bits on A; on B, software by the counters, so the same.
    let methods = row["keygen_methods"].as_array().unwrap();
    let keygen_method = methods.iter().find(|m| m["column"] == "keygen").unwrap();
    assert_eq!(
        keygen_method["A"],
        "OpenSSL's classic method (two random probable primes)"
    );
    let b = keygen_method["B"].as_str().unwrap();
    assert!(
        b.starts_with(
            "OpenSSL's classic method (two random probable primes) (counters: software 15); \
             Miller-Rabin exponentiations: software "
        ),
        "{b}"
    );
    assert_eq!(keygen["B_counted_by_rustica"]["keygen"]["software"], 15);
    let newkey_method = methods
        .iter()
        .find(|m| m["column"] == "certificates_new_key")
        .unwrap();
    let newkey_b = newkey_method["B"].as_str().unwrap();
    assert!(
        newkey_b.contains("(counters: software 1); Miller-Rabin exponentiations: software "),
        "{newkey_b}"
    );
    assert!(md.contains("## Key generation methods"), "{md}");
    assert!(
        md.contains("| 1024 | key generation | OpenSSL's classic method (two random probable primes) | OpenSSL's classic method (two random probable primes) (counters: software 15); Miller-Rabin exponentiations: software "),
        "{md}"
    );
    assert!(
        md.contains("B for `openssl speed`: config (openssl-B.cnf)"),
        "{md}"
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

/// Flags mode, every column but the new-key certificates: every row valid,
/// `openssl speed` included. Before, speed ran on the default provider
/// (it does not apply -propquery to RSA keys): the row was INVALID with
/// "sign: expected 12241 to 12257, counted 0 (none)" at 1024 bits.
#[test]
fn real_flags_mode_is_valid_and_speed_runs_on_rustica() {
    let module = real_module();
    let dir = temp_dir("real-flags");
    let out = dir.join("out");
    let o = rustica()
        .args([
            "lab",
            "--load",
            "flags",
            "--sizes",
            "1024",
            "--count",
            "1",
            "--cell-budget",
            "0",
            "--reps",
            "1",
            "--keygen-reps",
            "1",
            "--tls-seconds",
            "1",
            "--speed-seconds",
            "1",
        ])
        .args(["--skip", "newkey", "--module"])
        .arg(&module)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let j = json(&out.join("report.json"));
    assert_eq!(j["load"], "flags");
    assert_eq!(j["valid"], true);
    let row = &j["rows"][0];
    assert_eq!(row["status"], "valid", "{}", row["checks"]);
    assert!(row["checks"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["ok"] == true));
    for c in row["columns"].as_array().unwrap() {
        let skipped = c["column"] == "certificates_new_key";
        assert_eq!(
            c["status"],
            if skipped { "skipped" } else { "measured" },
            "{}",
            c["column"]
        );
    }
    // B's speed run was counted by rustica, sign and verify, in software.
    let speed_check = row["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "B's openssl speed run counted by rustica")
        .expect("a counter check of B's speed run");
    assert_eq!(speed_check["ok"], true, "{speed_check}");
    let speed = column(row, "speed_sign");
    let counted = &speed["B_counted_by_rustica"];
    assert!(
        counted["sign"]["software"].as_u64().unwrap() > 0,
        "{counted}"
    );
    assert!(
        counted["verify"]["software"].as_u64().unwrap() > 0,
        "{counted}"
    );
    assert!(speed["B"]["per_op"]["median"].as_f64().unwrap() > 0.0);
    // The report says how B was loaded for speed, and the command shows it.
    let how = j["load_speed"].as_str().unwrap();
    assert!(
        how.starts_with("flags (-provider-path DIR -provider rustica -provider default) + config properties ?provider=rustica"),
        "{how}"
    );
    let md = fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains(&format!("B for `openssl speed`: {how}")),
        "{md}"
    );
    let b_cmd = speed["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .find(|c| c.contains("RUSTICA_STATS_PATH"))
        .unwrap();
    let conf = b_cmd
        .strip_prefix("OPENSSL_CONF=")
        .and_then(|c| c.split(' ').next())
        .map(PathBuf::from)
        .unwrap();
    assert!(
        b_cmd.contains("-provider rustica -provider default"),
        "{b_cmd}"
    );
    // Its configuration sits in a private directory of the run's own.
    assert_eq!(conf.file_name().unwrap(), "openssl-B-speed.cnf");
    let private = conf.parent().unwrap();
    assert_eq!(private.parent().unwrap(), out.join("B"));
    let mode = fs::metadata(private).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700, "{}", private.display());
    let text_conf = fs::read_to_string(&conf).unwrap();
    assert!(text_conf.contains("default_properties = ?provider=rustica"));
    // The other B commands keep the flags and side A's configuration.
    let sig = column(row, "signatures")["commands"][1].as_str().unwrap();
    assert!(
        sig.starts_with(&format!(
            "OPENSSL_CONF={} ",
            out.join("openssl-A.cnf").display()
        )) && sig.contains("-propquery"),
        "{sig}"
    );
    let _ = fs::remove_dir_all(&dir);
}

/// The emulated libica cargo built beside the module (libica-emu):
/// $RUSTICA_LIBICA_EMU, else libica_emu.so beside the module under test.
fn emulated_libica() -> PathBuf {
    let p = match std::env::var_os("RUSTICA_LIBICA_EMU") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => real_module().with_file_name("libica_emu.so"),
    };
    assert!(
        p.is_file(),
        "the emulated libica {} is missing: run cargo build --workspace (or set RUSTICA_LIBICA_EMU)",
        p.display()
    );
    p
}

/// README's "B on the emulated libica" with paths typed relative to the
/// shell: --libica, --module, --out and --keys are resolved against the
/// current directory. Before, the lab wrote the relative libica path into
/// openssl-B.cnf (or RUSTICA_LIBICA) and exited 2: "rustica: not loaded:
/// config key 'libica' has value 'target/debug/libica_emu.so'; expected an
/// absolute path".
#[test]
fn real_libica_lab_takes_relative_paths() {
    let module = real_module();
    let emu = emulated_libica();
    let dir = temp_dir("real-relative");
    let lib = dir.join("lib");
    fs::create_dir_all(&lib).unwrap();
    std::os::unix::fs::symlink(&emu, lib.join("libica_emu.so")).unwrap();
    std::os::unix::fs::symlink(&module, lib.join("rustica.so")).unwrap();
    let small = [
        "--sizes",
        "1024",
        "--count",
        "1",
        "--cell-budget",
        "0",
        "--reps",
        "1",
        "--keygen-reps",
        "1",
        "--tls-seconds",
        "1",
        "--speed-seconds",
        "1",
        "--skip",
        "newkey,multi",
    ];
    let relative = [
        "--backend",
        "libica",
        "--libica",
        "lib/libica_emu.so",
        "--module",
        "lib/rustica.so",
    ];
    for load in ["config", "flags"] {
        let mut cmd = rustica();
        cmd.current_dir(&dir)
            .args(["lab", "--load", load])
            .args(small)
            .args(relative)
            .args(["--out", &format!("out-{load}")]);
        if load == "flags" {
            // The key pair of the first run, by a relative path.
            cmd.args(["--keys", "out-config"]);
        }
        let o = cmd.output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{load}: {}", text(&o));
        let out = dir.join(format!("out-{load}"));
        let j = json(&out.join("report.json"));
        assert_eq!(j["valid"], true, "{load}");
        assert_eq!(j["rows"][0]["status"], "valid", "{load}");
        let abs_libica = lib.join("libica_emu.so").display().to_string();
        assert_eq!(j["libica_requested"], abs_libica.as_str(), "{load}");
        assert_eq!(j["options"]["out"], out.display().to_string().as_str());
        // Every B signature ran on the emulated libica.
        let sign = &j["b_counters"]["ops"]["sign"];
        assert!(sign["libica"].as_u64().unwrap() > 0, "{load}: {sign}");
        assert_eq!(sign["software"], 0, "{load}: {sign}");
        let row = &j["rows"][0];
        if load == "config" {
            let cnf = fs::read_to_string(out.join("openssl-B.cnf")).unwrap();
            assert!(
                cnf.lines().any(|l| l == format!("libica = {abs_libica}")),
                "{cnf}"
            );
            assert!(
                cnf.lines()
                    .any(|l| l
                        == format!("module = {}", fs::canonicalize(&module).unwrap().display())),
                "{cnf}"
            );
            // rustica's own keys, their Miller-Rabin exponentiations on
            // the emulated adapter: counted, and reported, as libica, with
            // the exponentiations by where they ran.
            let m = row["keygen_methods"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["column"] == "keygen")
                .unwrap();
            let b = m["B"].as_str().unwrap();
            assert!(
                b.starts_with(
                    "OpenSSL's classic method (two random probable primes), its Miller-Rabin \
                     exponentiations on libica (ica_rsa_mod_expo) (counters: libica 1); \
                     Miller-Rabin exponentiations: libica "
                ),
                "{b}"
            );
            assert_eq!(
                m["A"],
                "OpenSSL's classic method (two random probable primes)"
            );
        } else {
            let sig = column(row, "signatures")["commands"][1].as_str().unwrap();
            assert!(
                sig.contains(&format!("RUSTICA_LIBICA={abs_libica} ")),
                "{sig}"
            );
            let key_source = row["key_source"].as_str().unwrap();
            assert!(
                key_source.contains(
                    &dir.join("out-config/private-1024.pem")
                        .display()
                        .to_string()
                ),
                "{key_source}"
            );
            assert_eq!(column(row, "keygen")["status"], "skipped");
        }
    }
    let _ = fs::remove_dir_all(&dir);
}

/// A known slowdown on B's private operations (the emulated libica waits
/// 300 µs per call): with sampling until precise, the lab calls B slower
/// where 300 µs matters (in-process 1024-bit signing, about 0.1 ms per
/// signature in software), with an interval below 1×, and takes more than
/// the planned pairs where it needed them. Verification (public, in
/// software on every backend) must not be called different by this.
#[test]
fn real_lab_calls_a_known_slowdown_and_samples_until_clear() {
    let module = real_module();
    let emu = emulated_libica();
    let dir = temp_dir("real-slowdown");
    let out = dir.join("out");
    let o = rustica()
        .env("LIBICA_EMU_LATENCY_US", "300")
        .args([
            "lab",
            "--sizes",
            "1024",
            "--count",
            "3",
            "--reps",
            "2",
            "--keygen-reps",
            "1",
            "--speed-seconds",
            "1",
            "--cell-budget",
            "20",
            "--skip",
            "newkey,tls,multi",
            "--backend",
            "libica",
        ])
        .arg("--libica")
        .arg(&emu)
        .arg("--module")
        .arg(&module)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let j = json(&out.join("report.json"));
    let row = &j["rows"][0];
    let sign = column(row, "speed_sign");
    let cmp = &sign["comparison"];
    assert_eq!(cmp["verdict_key"], "B slower", "{cmp}");
    assert!(cmp["ci95"][1].as_f64().unwrap() < 0.8, "{cmp}");
    // At least the 6 pairs an interval needs, though 2 were planned.
    assert!(cmp["n"].as_u64().unwrap() >= 6, "{cmp}");
    assert_ne!(cmp["sampling"], "planned runs", "{cmp}");
    let md = fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("Differences that count"), "{md}");
    assert!(
        md.contains("1024 bits, speed sign (in-process): B slower by"),
        "{md}"
    );
    let _ = fs::remove_dir_all(&dir);
}

/// An openssl.cnf that loads rustica on the emulated libica and prefers it:
/// a side C the test can count.
fn rustica_config(dir: &Path, module: &Path, libica: &Path, extra: &str) -> PathBuf {
    let conf = dir.join("side-c.cnf");
    fs::write(
        &conf,
        format!(
            "openssl_conf = openssl_init\n[openssl_init]\nproviders = provider_sect\n\
             alg_section = evp_properties\n[provider_sect]\ndefault = default_sect\n\
             rustica = rustica_sect\n[default_sect]\nactivate = 1\n[rustica_sect]\n\
             module = {}\nbackend = libica\nlibica = {}\nactivate = 1\n\
             [evp_properties]\ndefault_properties = {extra}\n",
            module.display(),
            libica.display()
        ),
    )
    .unwrap();
    conf
}

/// Side C (`--c-config`): the named configuration runs every step after A
/// and B, its results are checked against theirs, its libica calls are
/// counted from the emulator's log (`--count-libica-calls`), and the
/// reports carry C, C/A and B/C. A side C whose operations fail is C's
/// failure alone: A and B still measure, the row stays valid, and C's
/// checks say what failed. An engine that does not exist is refused
/// before anything runs; one that does is put on every C command line.
#[test]
fn real_lab_runs_a_third_side_and_checks_it() {
    let module = real_module();
    let emu = emulated_libica();
    let dir = temp_dir("real-side-c");
    let small = [
        "--sizes",
        "1024",
        "--count",
        "2",
        "--cell-budget",
        "0",
        "--reps",
        "1",
        "--keygen-reps",
        "1",
        "--skip",
        "newkey,multi,speed",
    ];
    // B and C on the emulated libica, C named by `conf`.
    let lab_with_c = |conf: &Path, out: &Path, extra: &[&str]| {
        rustica()
            .arg("lab")
            .args(small)
            .args(["--backend", "libica", "--libica"])
            .arg(&emu)
            .arg("--module")
            .arg(&module)
            .arg("--c-config")
            .arg(conf)
            .args(extra)
            .arg("--out")
            .arg(out)
            .output()
            .unwrap()
    };
    let conf = rustica_config(&dir, &module, &emu, "?provider=rustica");
    let out = dir.join("out");
    let o = lab_with_c(
        &conf,
        &out,
        &["--c-name", "rustica again", "--count-libica-calls"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let j = json(&out.join("report.json"));
    assert_eq!(j["side_C"], "rustica again");
    let row = &j["rows"][0];
    assert_eq!(row["status"], "valid");
    let checks = row["C_checks"].as_array().unwrap();
    assert!(checks.iter().all(|c| c["ok"] == true), "{checks:?}");
    for name in [
        "C's PKCS#1 v1.5 signature is identical to A's and B's",
        "B's signature verifies under C",
        "C's certificate passes `openssl verify` under A",
        "B's certificate passes `openssl verify` under C",
    ] {
        assert!(
            checks.iter().any(|c| c["name"] == name),
            "{name}: {checks:?}"
        );
    }
    let sig = column(row, "signatures");
    assert_eq!(sig["C"]["samples"].as_array().unwrap().len(), 2, "{sig}");
    // Two signing processes a side, one ica_rsa_crt each: counted per side
    // from the emulator's logs.
    assert_eq!(sig["libica_calls"]["B"]["rsa_crt"], 2, "{sig}");
    assert_eq!(sig["libica_calls"]["C"]["rsa_crt"], 2, "{sig}");
    assert!(sig["comparison_C_over_A"].is_object(), "{sig}");
    assert!(sig["comparison_B_over_C"].is_object(), "{sig}");
    let keygen = column(row, "keygen");
    assert!(
        keygen["libica_calls"]["C"]["rsa_mod_expo"]
            .as_u64()
            .unwrap()
            > 0,
        "{keygen}"
    );
    let csv = fs::read_to_string(out.join("report.csv")).unwrap();
    assert!(csv.lines().next().unwrap().contains(",c_figure,"), "{csv}");
    let md = fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("## C beside A and B"), "{md}");
    assert!(md.contains("\n| 1024 | C |"), "{md}");
    let svg = fs::read_to_string(out.join("chart.svg")).unwrap();
    assert!(svg.contains("data-side=\"C\""), "{svg}");

    // A side C that loads but can do no RSA (it asks for a provider that
    // is not there): every C run fails, A and B are unaffected.
    let broken = rustica_config(&dir, &module, &emu, "provider=nowhere");
    let out = dir.join("out-broken");
    let o = lab_with_c(&broken, &out, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("side C: failed check"),
        "{}",
        text(&o)
    );
    let j = json(&out.join("report.json"));
    let row = &j["rows"][0];
    assert_eq!(row["status"], "valid");
    let sig = column(row, "signatures");
    assert!(sig["C_failed"].is_string(), "{sig}");
    assert_eq!(sig["B"]["samples"].as_array().unwrap().len(), 2, "{sig}");
    let checks = row["C_checks"].as_array().unwrap();
    assert!(
        checks.iter().any(
            |c| c["name"] == "C's PKCS#1 v1.5 signature is identical to A's and B's"
                && c["ok"] == false
        ),
        "{checks:?}"
    );

    // No such engine: refused at set-up.
    let o = rustica()
        .arg("lab")
        .args(small)
        .arg("--module")
        .arg(&module)
        .args(["--c-engine", "no-such-engine", "--out"])
        .arg(dir.join("out-engine"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("side C (stock OpenSSL with `-engine no-such-engine`) does not load"),
        "{}",
        text(&o)
    );
    // A configuration file that is not there: refused at set-up.
    let o = rustica()
        .arg("lab")
        .args(small)
        .arg("--module")
        .arg(&module)
        .arg("--c-config")
        .arg(dir.join("no-such.cnf"))
        .arg("--out")
        .arg(dir.join("out-missing"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no-such.cnf: not a file"),
        "{}",
        text(&o)
    );

    // A real engine (OpenSSL's own loader_attic, which does no RSA: C is
    // then stock OpenSSL with `-engine` on every command line).
    let out = dir.join("out-attic");
    let o = rustica()
        .arg("lab")
        .args(small)
        .arg("--module")
        .arg(&module)
        .args(["--c-engine", "loader_attic", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let j = json(&out.join("report.json"));
    assert_eq!(j["side_C"], "stock OpenSSL with `-engine loader_attic`");
    let row = &j["rows"][0];
    let checks = row["C_checks"].as_array().unwrap();
    assert!(
        !checks.is_empty() && checks.iter().all(|c| c["ok"] == true),
        "{checks:?}"
    );
    let sig = column(row, "signatures")["commands"][2].as_str().unwrap();
    assert!(
        sig.contains("openssl dgst -engine loader_attic -sha256"),
        "{sig}"
    );
    let _ = fs::remove_dir_all(&dir);
}
