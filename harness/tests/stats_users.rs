//! `rustica stats`: the caller's own counters file (table, JSON,
//! `--reset`); every user's (`--all-users`, `--sum`), as a table, JSON and
//! metrics; `--output`; and `--watch` in a pipe, ended by the reader going
//! away and by SIGINT.
//!
//! The files of other users are made by chown, so those parts run only as
//! root (CI does); elsewhere they say so and return.

use ibmca_shim::stats::{self, Backend, Op};
use serde_json::Value;
use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::{symlink, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;

mod common;
use common::{rustica, temp_dir, text};

const NOBODY: u32 = 65534;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// A counters file at `path` with `signs` signatures on libica (2048
/// bits) and one verify in software, then given to `uid`.
fn counters_file(path: &Path, uid: u32, signs: u64) {
    let st = stats::Stats::open(path).unwrap();
    for _ in 0..signs {
        st.record(Op::Sign, Backend::Libica, 2048);
    }
    st.record(Op::Verify, Backend::Software, 4096);
    drop(st);
    std::os::unix::fs::chown(path, Some(uid), None).unwrap();
}

/// A directory of users' files: root's (3 signs), nobody's (5), a link
/// named for uid 33, a file named for uid 4243 that root owns, and one of
/// uid 4244 that its group may write to.
fn users_dir(name: &str) -> std::path::PathBuf {
    let dir = temp_dir(name);
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
    counters_file(&dir.join("rustica-stats-0"), 0, 3);
    counters_file(&dir.join(format!("rustica-stats-{NOBODY}")), NOBODY, 5);
    symlink(dir.join("rustica-stats-0"), dir.join("rustica-stats-33")).unwrap();
    counters_file(&dir.join("rustica-stats-4243"), 0, 1);
    let writable = dir.join("rustica-stats-4244");
    counters_file(&writable, 4244, 1);
    fs::set_permissions(&writable, fs::Permissions::from_mode(0o660)).unwrap();
    dir
}

fn run_json(args: &[&str], dir: &Path) -> Value {
    let o = rustica()
        .arg("stats")
        .args(args)
        .arg("--dir")
        .arg(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)))
}

fn reason(doc: &Value, uid: u32) -> &str {
    doc["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["uid"] == uid)
        .unwrap_or_else(|| panic!("uid {uid} not skipped: {doc}"))["reason"]
        .as_str()
        .unwrap()
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
fn root_sees_every_trusted_users_file_and_the_sum() {
    if !is_root() {
        eprintln!("skipped: needs root to give files to other users; CI runs as root");
        return;
    }
    let dir = users_dir("all-users");

    let doc = run_json(&["--all-users", "--sum", "--json"], &dir);
    assert_eq!(doc["layout_version"], stats::VERSION);
    let users = doc["users"].as_array().unwrap();
    let names: Vec<&str> = users.iter().map(|u| u["user"].as_str().unwrap()).collect();
    assert_eq!(names, ["root", "nobody"], "{doc}");
    assert_eq!(users[0]["counters"]["ops"]["sign"]["libica"], 3);
    assert_eq!(users[1]["counters"]["ops"]["sign"]["libica"], 5);
    assert_eq!(doc["sum"]["ops"]["sign"]["libica"], 8);
    assert_eq!(doc["sum"]["ops"]["sign"]["by_bits"]["2048"], 8);
    assert_eq!(doc["sum"]["ops"]["verify"]["software"], 2);
    assert!(reason(&doc, 33).contains("symbolic link"), "{doc}");
    assert!(
        reason(&doc, 4243).contains("owned by uid 0, not 4243"),
        "{doc}"
    );
    assert!(
        reason(&doc, 4244).contains("lets other users write"),
        "{doc}"
    );
    assert!(doc.get("note").is_none(), "root is told nothing: {doc}");

    // --sum alone: the users summed, without their counters.
    let doc = run_json(&["--sum", "--json"], &dir);
    assert!(doc["users"][0].get("counters").is_none(), "{doc}");
    assert_eq!(doc["sum"]["ops"]["sign"]["libica"], 8);

    let o = rustica()
        .args(["stats", "--all-users", "--sum", "--dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(t.contains("== user root (uid 0)"), "{t}");
    assert!(t.contains(&format!("== user nobody (uid {NOBODY})")), "{t}");
    assert!(t.contains("== sum of 2 users: root, nobody"), "{t}");
    let sign_lines: Vec<&str> = t.lines().filter(|l| l.starts_with("sign")).collect();
    assert_eq!(sign_lines.len(), 3, "{t}");
    assert!(sign_lines[2].contains("2048:8"), "{t}");
    assert!(t.contains("rustica-stats-33: a symbolic link"), "{t}");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_caller_that_is_not_root_sees_what_modes_allow_and_is_told() {
    if !is_root() {
        eprintln!("skipped: needs root to run as another user; CI runs as root");
        return;
    }
    let dir = users_dir("not-root");
    let o = rustica()
        .args(["stats", "--all-users", "--json", "--dir"])
        .arg(&dir)
        .uid(NOBODY)
        .gid(NOBODY)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let users = doc["users"].as_array().unwrap();
    assert_eq!(users.len(), 1, "{doc}");
    assert_eq!(users[0]["uid"], NOBODY);
    assert!(reason(&doc, 0).contains("Permission denied"), "{doc}");
    let note = doc["note"].as_str().unwrap();
    assert!(note.contains("not running as root"), "{note}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("run as root to see every user"),
        "{}",
        text(&o)
    );
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn metrics_of_every_user_and_atomic_output() {
    if !is_root() {
        eprintln!("skipped: needs root to give files to other users; CI runs as root");
        return;
    }
    let dir = users_dir("metrics");
    let o = rustica()
        .args(["stats", "--all-users", "--format", "openmetrics", "--dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let om = String::from_utf8_lossy(&o.stdout);
    assert!(om.ends_with("# EOF\n"), "{om}");
    assert!(om.contains(&format!(
        "rustica_operations_total{{user=\"nobody\",uid=\"{NOBODY}\",operation=\"sign\",backend=\"libica\"}} 5\n"
    )), "{om}");
    assert!(om.contains(
        "rustica_operations_by_key_size_total{user=\"root\",uid=\"0\",operation=\"sign\",bits=\"2048\"} 3\n"
    ), "{om}");
    assert!(om.contains("rustica_stats_skipped_files 3\n"), "{om}");

    // --output: the same text, in a new file of mode 0644.
    let out = dir.join("out").join("rustica.prom");
    fs::create_dir(out.parent().unwrap()).unwrap();
    let o = rustica()
        .args(["stats", "--all-users", "--format", "prometheus", "--dir"])
        .arg(&dir)
        .arg("--output")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(o.stdout.is_empty());
    let written = fs::read_to_string(&out).unwrap();
    assert!(
        written.contains("# TYPE rustica_operations_total counter\n"),
        "{written}"
    );
    assert!(!written.contains("# EOF"));
    assert_eq!(
        fs::metadata(&out).unwrap().permissions().mode() & 0o777,
        0o644
    );
    // A link at the name is refused, and left alone.
    fs::remove_file(&out).unwrap();
    symlink("/etc/passwd", &out).unwrap();
    let o = rustica()
        .args(["stats", "--format", "prometheus", "--output"])
        .arg(&out)
        .env("RUSTICA_STATS_PATH", dir.join("rustica-stats-0"))
        .output()
        .unwrap();
    assert!(!o.status.success(), "{}", text(&o));
    assert!(fs::symlink_metadata(&out).unwrap().file_type().is_symlink());
    let _ = fs::remove_dir_all(&dir);
}

/// `--watch` in a pipe: one line per interval, then an exit status of 0
/// when the reader goes away or when SIGINT comes.
#[test]
fn watch_prints_lines_and_ends_cleanly() {
    let dir = temp_dir("watch");
    let path = dir.join("counters");
    let st = stats::Stats::open(&path).unwrap();
    st.record(Op::Sign, Backend::Libica, 2048);

    for end_by_signal in [false, true] {
        let mut child = rustica()
            .args(["stats", "--watch", "0.05", "--path"])
            .arg(&path)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut seen_sign = false;
        for _ in 0..200 {
            // Counted before a line, so after the child's first reading
            // once a line has come.
            st.record(Op::Sign, Backend::Libica, 2048);
            let line = lines.next().unwrap().unwrap();
            assert!(line.contains("s "), "{line}");
            assert!(line.contains("in flight"), "{line}");
            if line.contains("sign: libica ") && line.contains("2048 bits") {
                seen_sign = true;
                break;
            }
        }
        assert!(seen_sign, "no interval showed the signature");
        if end_by_signal {
            // SAFETY: kill has no memory preconditions; the pid is our
            // child's, not yet waited for.
            assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
        } else {
            drop(lines);
        }
        let status = child.wait().unwrap();
        assert!(
            status.success(),
            "end_by_signal {end_by_signal}: {status:?}"
        );
    }
    drop(st);
    let _ = fs::remove_dir_all(&dir);
}
