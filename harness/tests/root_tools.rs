//! The `rustica` command run as root (issue 20, items 1, 2 and 8):
//! `doctor` and `lab` write nothing through directories and links another
//! user planted at the names they used to pick (/tmp/rustica-doctor-<pid>
//! and friends); `config --out` writes a new file and renames it into
//! place, refusing links, other users' files and directories others can
//! change; `doctor` loads no configuration another user could have
//! written; `install` leaves a module of mode 0644 owned by root whatever
//! the build tree's modes; and nothing tells root to use a shared
//! directory.
//!
//! Tests that need another user run only as root (CI does): they create
//! the user `rustica-test-intruder` when it is missing, and say so and
//! return when not root. Tests named `real_*` need the built module
//! ($RUSTICA_MODULE, else target/release/rustica.so).

use std::fs;
use std::io::Read;
use std::os::unix::fs::{lchown, symlink, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
use common::{real_module, rustica, system_user, text};

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Says why a root-only test did nothing; true when it may go on.
fn root_or_skip(test: &str) -> bool {
    if !is_root() {
        eprintln!("{test}: skipped: needs root (to create another user's files), CI runs as root");
    }
    is_root()
}

/// The other local user of these tests, created once if missing: (uid, gid).
fn intruder() -> (u32, u32) {
    system_user("rustica-test-intruder")
}

fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("rustica-root-tools-")
        .tempdir()
        .unwrap()
}

/// A directory like /tmp (root's, mode 1777), for planting in.
fn shared_tmp() -> tempfile::TempDir {
    let d = tempdir();
    fs::set_permissions(d.path(), fs::Permissions::from_mode(0o1777)).unwrap();
    d
}

/// A root-owned file whose content must never change, in a directory of
/// its own.
struct Marker {
    _dir: tempfile::TempDir,
    path: PathBuf,
    ino: u64,
}

const MARKER: &[u8] = b"root's file: nobody writes here\n";

impl Marker {
    fn new() -> Marker {
        let dir = tempdir();
        let path = dir.path().join("marker");
        fs::write(&path, MARKER).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        let ino = fs::metadata(&path).unwrap().ino();
        Marker {
            _dir: dir,
            path,
            ino,
        }
    }

    fn assert_unchanged(&self, what: &str) {
        let m = fs::metadata(&self.path).unwrap();
        assert_eq!(m.ino(), self.ino, "{what}: the marker was replaced");
        let now = fs::read(&self.path).unwrap();
        assert!(
            now == MARKER,
            "{what}: something was written into the marker file {}: it now holds {:?}",
            self.path.display(),
            String::from_utf8_lossy(&now)
        );
    }
}

/// The pids the next processes will get, roughly: from the last one the
/// kernel handed out, `n` of them (wrapping at pid_max).
fn next_pids(n: u32) -> Vec<u32> {
    let read = |p: &str| -> Option<u32> { fs::read_to_string(p).ok()?.trim().parse().ok() };
    let last = read("/proc/sys/kernel/ns_last_pid").unwrap_or_else(std::process::id);
    let max = read("/proc/sys/kernel/pid_max").unwrap_or(4_194_304);
    (1..=n)
        .map(|i| {
            let p = last + i;
            if p >= max {
                p - max + 300
            } else {
                p
            }
        })
        .collect()
}

/// The names the `rustica` command used to take in the temporary
/// directory: doctor's work directory `rustica-doctor-<pid>`
/// (create_dir_all took an existing one), and the files
/// `rustica-doc-<pid>` (fs::write followed a link there) and
/// `rustica-harness-compare-<pid>` of the harness's unit tests.
const OLD_DIRS: [&str; 1] = ["rustica-doctor-"];
const OLD_FILES: [&str; 2] = ["rustica-doc-", "rustica-harness-compare-"];

/// The files written into doctor's directory, each planted as a link.
const PLANTED_LINKS: [&str; 8] = [
    "doc.txt",
    "key.pem",
    "doc.sig",
    "stats",
    "counters",
    "document",
    "openssl.cnf",
    "rustica.cnf",
];

/// What another user leaves in `tmp` for the pids to come: directories
/// named as the doctor used to name its own, each full of links to the
/// marker, and links to the marker at the old file names; all theirs.
/// Returns every planted name.
fn plant(tmp: &Path, marker: &Path, who: (u32, u32), pids: &[u32]) -> Vec<PathBuf> {
    let mut planted = Vec::new();
    for pid in pids {
        for prefix in OLD_DIRS {
            let d = tmp.join(format!("{prefix}{pid}"));
            fs::create_dir(&d).unwrap();
            fs::set_permissions(&d, fs::Permissions::from_mode(0o777)).unwrap();
            for name in PLANTED_LINKS {
                let l = d.join(name);
                symlink(marker, &l).unwrap();
                lchown(&l, Some(who.0), Some(who.1)).unwrap();
            }
            lchown(&d, Some(who.0), Some(who.1)).unwrap();
            planted.push(d);
        }
        for prefix in OLD_FILES {
            let l = tmp.join(format!("{prefix}{pid}"));
            symlink(marker, &l).unwrap();
            lchown(&l, Some(who.0), Some(who.1)).unwrap();
            planted.push(l);
        }
    }
    planted
}

/// Every planted name is still there as it was planted (the directories
/// hold exactly their links), and `tmp` holds nothing else.
fn assert_planted_untouched(tmp: &Path, planted: &[PathBuf], marker: &Path) {
    let mut names: Vec<PathBuf> = fs::read_dir(tmp)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    let mut want = planted.to_vec();
    want.sort();
    let extra: Vec<_> = names.iter().filter(|n| !want.contains(n)).collect();
    assert!(extra.is_empty(), "left in {}: {extra:?}", tmp.display());
    let missing: Vec<_> = want.iter().filter(|n| !names.contains(n)).collect();
    assert!(
        missing.is_empty(),
        "removed from {}: {missing:?}",
        tmp.display()
    );
    for p in planted {
        let m = fs::symlink_metadata(p).unwrap();
        if m.file_type().is_symlink() {
            assert_eq!(fs::read_link(p).unwrap(), marker);
            continue;
        }
        let mut inside: Vec<String> = fs::read_dir(p)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        inside.sort();
        let mut expected: Vec<String> = PLANTED_LINKS.iter().map(|s| s.to_string()).collect();
        expected.sort();
        assert_eq!(inside, expected, "{} was written into", p.display());
        for name in PLANTED_LINKS {
            assert_eq!(fs::read_link(p.join(name)).unwrap(), marker);
        }
    }
}

/// No source file of the command names a temporary file by its pid or
/// by a fixed path in /tmp: every temporary path comes from mkdtemp.
#[test]
fn no_temporary_path_is_made_from_a_pid() {
    fn walk(dir: &Path, found: &mut Vec<String>) {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, found);
                continue;
            }
            if p.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            for (i, line) in fs::read_to_string(&p).unwrap().lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                if code.contains("process::id()") || code.contains("\"/tmp") {
                    found.push(format!("{}:{}: {line}", p.display(), i + 1));
                }
            }
        }
    }
    let mut found = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut found,
    );
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The `openssl` program on PATH.
fn system_openssl() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("openssl"))
        .find(|p| p.is_file())
        .expect("openssl on PATH")
}

/// A directory with an `openssl` that logs, for every run, its
/// OPENSSL_CONF and each argument under `watched` with the mode and owner
/// of the directory holding it, then runs the real openssl. Returns the
/// directory (to put first on PATH) and the log.
fn logging_openssl(watched: &Path) -> (tempfile::TempDir, PathBuf) {
    let bin = tempdir();
    let log = bin.path().join("log");
    let script = format!(
        "#!/bin/sh\n\
         printf 'conf=%s\\n' \"${{OPENSSL_CONF-}}\" >>'{log}'\n\
         for a in \"$@\"; do\n\
         \x20 case \"$a\" in '{w}'/*) d=$(dirname \"$a\"); printf 'arg=%s dir=%s %s\\n' \"$a\" \"$d\" \"$(stat -c '%a %u' \"$d\")\" >>'{log}';; esac\n\
         done\n\
         exec '{real}' \"$@\"\n",
        log = log.display(),
        w = watched.display(),
        real = system_openssl().display()
    );
    let p = bin.path().join("openssl");
    fs::write(&p, script).unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
    (bin, log)
}

fn path_with(first: &Path) -> std::ffi::OsString {
    let mut dirs = vec![first.to_path_buf()];
    if let Some(p) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&p));
    }
    std::env::join_paths(dirs).unwrap()
}

/// `rustica config --fresh` for `module` into `out`.
fn config(module: &Path, out: &Path, extra: &[&str]) -> Output {
    rustica()
        .args(["config", "--fresh", "--module"])
        .arg(module)
        .arg("--out")
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

/// A file that passes for a module with `--no-check` (and fails the check).
fn not_a_module(dir: &Path) -> PathBuf {
    let p = dir.join("rustica.so");
    fs::write(&p, b"not a shared object").unwrap();
    p
}

// ---- 1. temporary directories -------------------------------------------

#[test]
fn real_doctor_as_root_writes_nothing_through_planted_directories() {
    if !root_or_skip("real_doctor_as_root_writes_nothing_through_planted_directories") {
        return;
    }
    let module = real_module();
    let who = intruder();
    let marker = Marker::new();
    let private = tempdir();
    let cnf = private.path().join("rustica.cnf");
    let o = config(&module, &cnf, &[]);
    assert!(o.status.success(), "{}", text(&o));

    let tmp = shared_tmp();
    let (bin, log) = logging_openssl(tmp.path());
    let planted = plant(tmp.path(), &marker.path, who, &next_pids(400));
    let o = rustica()
        .args(["doctor", "--module"])
        .arg(&module)
        .arg("--config")
        .arg(&cnf)
        .env("TMPDIR", tmp.path())
        .env("PATH", path_with(bin.path()))
        .output()
        .unwrap();
    marker.assert_unchanged("rustica doctor");
    assert_planted_untouched(tmp.path(), &planted, &marker.path);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("a test signature was made by rustica"),
        "{}",
        text(&o)
    );

    // Every file the doctor gave openssl (key.pem, doc.txt, doc.sig) was
    // in one new directory: mkdtemp's, 0700, root's, not a planted one.
    let log = fs::read_to_string(&log).unwrap();
    let dirs: Vec<&str> = log
        .lines()
        .filter_map(|l| l.strip_prefix("arg="))
        .filter_map(|l| l.split_once(" dir="))
        .map(|(_, d)| d)
        .collect();
    assert!(
        dirs.len() >= 3,
        "the doctor named no files to openssl:\n{log}"
    );
    for d in &dirs {
        assert_eq!(d, &dirs[0], "more than one directory:\n{log}");
    }
    let (dir, mode_owner) = dirs[0].split_once(' ').unwrap();
    assert_eq!(mode_owner, "700 0", "{log}");
    assert!(
        !planted.iter().any(|p| p.as_os_str() == dir),
        "the doctor used a planted directory: {dir}"
    );
    let name = Path::new(dir).file_name().unwrap().to_string_lossy();
    assert!(
        name.starts_with("rustica-doctor-") && name.len() == "rustica-doctor-".len() + 6,
        "{name}"
    );
    assert!(!Path::new(dir).exists(), "{dir} was not removed");
}

#[test]
fn real_lab_as_root_writes_nothing_through_planted_directories() {
    if !root_or_skip("real_lab_as_root_writes_nothing_through_planted_directories") {
        return;
    }
    let module = real_module();
    let who = intruder();
    let marker = Marker::new();
    let tmp = shared_tmp();
    let planted = plant(tmp.path(), &marker.path, who, &next_pids(300));
    let private = tempdir();
    let out = private.path().join("out");
    let o = rustica()
        .args(["lab", "--sizes", "1024", "--count", "1", "--reps", "1"])
        .args([
            "--keygen-reps",
            "1",
            "--skip",
            "tls,speed,newkey",
            // The DNSSEC step runs too (BIND's tools, where installed),
            // on a zone small enough for a test.
            "--dnssec-names",
            "20",
            "--module",
        ])
        .arg(&module)
        .arg("--out")
        .arg(&out)
        .env("TMPDIR", tmp.path())
        .current_dir(private.path())
        .output()
        .unwrap();
    marker.assert_unchanged("rustica lab");
    assert_planted_untouched(tmp.path(), &planted, &marker.path);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn lab_refuses_an_output_directory_another_user_made() {
    if !root_or_skip("lab_refuses_an_output_directory_another_user_made") {
        return;
    }
    let who = intruder();
    let marker = Marker::new();
    let tmp = shared_tmp();
    // Another user made the directory root was going to use, and filled it
    // with links at the names of the lab's files.
    let out = tmp.path().join("lab");
    fs::create_dir(&out).unwrap();
    fs::set_permissions(&out, fs::Permissions::from_mode(0o777)).unwrap();
    for name in [
        "report.md",
        "report.json",
        "report.csv",
        "chart.svg",
        "openssl-A.cnf",
    ] {
        let l = out.join(name);
        symlink(&marker.path, &l).unwrap();
        lchown(&l, Some(who.0), Some(who.1)).unwrap();
    }
    lchown(&out, Some(who.0), Some(who.1)).unwrap();
    let module = tempdir();
    let fake = not_a_module(module.path());
    let o = rustica()
        .args(["lab", "--sizes", "1024", "--count", "1", "--reps", "1"])
        .args([
            "--keygen-reps",
            "1",
            "--skip",
            "tls,speed,newkey",
            "--module",
        ])
        .arg(&fake)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    marker.assert_unchanged("rustica lab --out <another user's directory>");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("output directory"),
        "{}",
        text(&o)
    );
    assert_eq!(fs::read_dir(&out).unwrap().count(), 5);
    // Inside a directory others may write to, even a new directory is
    // refused: its name could be taken first (the sticky /tmp is fine).
    let open = tempdir();
    fs::set_permissions(open.path(), fs::Permissions::from_mode(0o777)).unwrap();
    let o = rustica()
        .args(["lab", "--sizes", "1024", "--module"])
        .arg(&fake)
        .arg("--out")
        .arg(open.path().join("new"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("without the sticky bit"),
        "{}",
        text(&o)
    );
}

// ---- 2. rustica config --out, and what doctor loads ----------------------

#[test]
fn config_out_refuses_a_symlink_and_keeps_its_target() {
    let d = tempdir();
    let fake = not_a_module(d.path());
    let victim = d.path().join("victim");
    fs::write(&victim, MARKER).unwrap();
    let link = d.path().join("openssl.cnf");
    symlink(&victim, &link).unwrap();
    let o = config(&fake, &link, &["--no-check"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("symbolic link"),
        "{}",
        text(&o)
    );
    assert_eq!(fs::read(&victim).unwrap(), MARKER);
    assert_eq!(fs::read_link(&link).unwrap(), victim);
    // Nothing else appeared beside them.
    assert_eq!(fs::read_dir(d.path()).unwrap().count(), 3);
}

#[test]
fn real_config_out_replaces_the_callers_file_with_a_new_inode() {
    let module = real_module();
    let d = tempdir();
    let out = d.path().join("openssl-rustica.cnf");
    let old_text = b"# the caller's old file\n";
    fs::write(&out, old_text).unwrap();
    fs::set_permissions(&out, fs::Permissions::from_mode(0o600)).unwrap();
    let old_ino = fs::metadata(&out).unwrap().ino();
    let held = fs::File::open(&out).unwrap();
    // Twice: the second run replaces the file the first one wrote.
    let mut inodes = vec![old_ino];
    for run in 1..=2 {
        let o = config(&module, &out, &[]);
        assert!(o.status.success(), "run {run}: {}", text(&o));
        let m = fs::symlink_metadata(&out).unwrap();
        assert!(m.is_file());
        assert!(!inodes.contains(&m.ino()), "run {run}: same inode");
        inodes.push(m.ino());
        assert_eq!(m.permissions().mode() & 0o7777, 0o644, "run {run}");
        // SAFETY: geteuid has no preconditions and cannot fail.
        assert_eq!(m.uid(), unsafe { libc::geteuid() });
        let t = fs::read_to_string(&out).unwrap();
        assert!(t.contains("[rustica_sect]"), "{t}");
        // Only the file: no temporary left beside it.
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 1, "run {run}");
    }
    // The old file was replaced, not truncated and rewritten in place.
    let mut was = Vec::new();
    (&held).read_to_end(&mut was).unwrap();
    assert_eq!(was, old_text);
}

#[test]
fn config_out_refuses_another_users_file_and_directory() {
    if !root_or_skip("config_out_refuses_another_users_file_and_directory") {
        return;
    }
    let who = intruder();
    let d = tempdir();
    let fake = not_a_module(d.path());
    // Their file, where root was told to write: root leaves it alone.
    let tmp = shared_tmp();
    let theirs = tmp.path().join("openssl.cnf");
    let their_text = b"[rustica_sect]\nmodule = /home/intruder/evil.so\n";
    fs::write(&theirs, their_text).unwrap();
    fs::set_permissions(&theirs, fs::Permissions::from_mode(0o644)).unwrap();
    lchown(&theirs, Some(who.0), Some(who.1)).unwrap();
    let ino = fs::metadata(&theirs).unwrap().ino();
    let o = config(&fake, &theirs, &["--no-check"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(&format!("belongs to uid {}", who.0)),
        "{}",
        text(&o)
    );
    let m = fs::metadata(&theirs).unwrap();
    assert_eq!((m.ino(), m.uid()), (ino, who.0));
    assert_eq!(fs::read(&theirs).unwrap(), their_text);
    assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 1);
    // A name nobody has taken in the same sticky directory is written.
    let free = tmp.path().join("free.cnf");
    let o = config(&fake, &free, &["--no-check"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(fs::metadata(&free).unwrap().uid(), 0);

    // Their directory: they could swap root's file afterwards.
    let their_dir = d.path().join("theirs");
    fs::create_dir(&their_dir).unwrap();
    lchown(&their_dir, Some(who.0), Some(who.1)).unwrap();
    let o = config(&fake, &their_dir.join("openssl.cnf"), &["--no-check"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(&format!("belongs to uid {}", who.0)),
        "{}",
        text(&o)
    );
    assert_eq!(fs::read_dir(&their_dir).unwrap().count(), 0);
}

#[test]
fn config_out_refuses_a_directory_others_may_write_without_the_sticky_bit() {
    let d = tempdir();
    let fake = not_a_module(d.path());
    let open = d.path().join("open");
    fs::create_dir(&open).unwrap();
    fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
    let o = config(&fake, &open.join("openssl.cnf"), &["--no-check"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("without the sticky bit"),
        "{}",
        text(&o)
    );
    assert_eq!(fs::read_dir(&open).unwrap().count(), 0);
}

#[test]
fn config_out_leaves_nothing_when_the_check_fails() {
    let d = tempdir();
    let m = tempdir();
    let fake = not_a_module(m.path());
    // Nothing there before: nothing there after.
    let out = d.path().join("openssl-rustica.cnf");
    let o = config(&fake, &out, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("OpenSSL does not accept"),
        "{}",
        text(&o)
    );
    assert_eq!(fs::read_dir(d.path()).unwrap().count(), 0);
    // A file there before keeps its content and its inode.
    fs::write(&out, b"# good\n").unwrap();
    let ino = fs::metadata(&out).unwrap().ino();
    let o = config(&fake, &out, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(fs::read(&out).unwrap(), b"# good\n");
    assert_eq!(fs::metadata(&out).unwrap().ino(), ino);
    assert_eq!(fs::read_dir(d.path()).unwrap().count(), 1);
}

#[test]
fn doctor_loads_no_config_another_user_could_have_written() {
    if !root_or_skip("doctor_loads_no_config_another_user_could_have_written") {
        return;
    }
    let who = intruder();
    let tmp = shared_tmp();
    // What root was told to run after `rustica config --out
    // /tmp/openssl.cnf`, with the file made by someone else first.
    let planted = tmp.path().join("openssl.cnf");
    fs::write(
        &planted,
        "openssl_conf = init\n[init]\nproviders = p\n[p]\nrustica = r\n[r]\n\
         module = /nonexistent/their-module.so\nactivate = 1\n",
    )
    .unwrap();
    lchown(&planted, Some(who.0), Some(who.1)).unwrap();
    let watch = tempdir();
    let (bin, log) = logging_openssl(watch.path());
    let o = rustica()
        .arg("doctor")
        .env("OPENSSL_CONF", &planted)
        .env("PATH", path_with(bin.path()))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("FAIL  config") && out.contains("is not used"),
        "{}",
        text(&o)
    );
    assert!(out.contains("/etc/ssl/openssl-rustica.cnf"), "{}", text(&o));
    let log = fs::read_to_string(&log).unwrap_or_default();
    assert!(
        !log.contains(&format!("conf={}", planted.display())),
        "openssl ran with the planted config:\n{log}"
    );
    // The same file, root's and not writable by others, is used.
    lchown(&planted, Some(0), Some(0)).unwrap();
    let o = rustica()
        .arg("doctor")
        .env("OPENSSL_CONF", &planted)
        .env("PATH", path_with(bin.path()))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!out.contains("is not used"), "{}", text(&o));
    let log = fs::read_to_string(bin.path().join("log")).unwrap_or_default();
    assert!(
        log.contains(&format!("conf={}", planted.display())),
        "{log}"
    );
}

/// The commands that tell an administrator where to write the merged
/// configuration: the package's postinst, the example, rustica(1), the
/// README's package block and docs/system-wide.md; each names the one
/// root-owned path and no shared directory.
#[test]
fn recommendations_name_no_shared_directory() {
    const PATH: &str = "/etc/ssl/openssl-rustica.cnf";
    const SHARED: [&str; 3] = ["/tmp", "/dev/shm", "/var/tmp"];
    let top = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let read = |p: &str| fs::read_to_string(top.join(p)).unwrap();
    let first_sh_block = |text: &str, after: &str| -> String {
        let from = text.find(after).unwrap_or_else(|| panic!("no {after:?}"));
        let rest = &text[from..];
        let start = rest.find("```sh\n").expect("an sh block") + 6;
        let end = rest[start..].find("```").expect("the block's end");
        rest[start..start + end].to_string()
    };
    let man = rustica().arg("man").output().unwrap();
    assert!(man.status.success(), "{}", text(&man));
    let man = String::from_utf8_lossy(&man.stdout).replace("\\-", "-");
    let examples = man[man.find(".SH EXAMPLES").expect("EXAMPLES")..].to_string();
    let readme = read("README.md");
    let system_wide = read("docs/system-wide.md");
    let texts = [
        ("debian/rustica.postinst", read("debian/rustica.postinst")),
        (
            "packaging/openssl.cnf.example",
            read("packaging/openssl.cnf.example"),
        ),
        ("rustica(1) EXAMPLES", examples),
        (
            "README.md's package block",
            first_sh_block(&readme, "## Install from the package"),
        ),
        (
            "docs/system-wide.md's first block",
            first_sh_block(&system_wide, "# System-wide set-up"),
        ),
    ];
    for (what, t) in &texts {
        for shared in SHARED {
            assert!(!t.contains(shared), "{what} names {shared}:\n{t}");
        }
        assert!(
            t.contains(&format!("config --out {PATH}")),
            "{what} does not recommend {PATH}:\n{t}"
        );
        assert!(t.contains(&format!("OPENSSL_CONF={PATH}")), "{what}:\n{t}");
    }
    // The path exists on Debian and is root's.
    if let Ok(m) = fs::metadata("/etc/ssl") {
        assert!(m.is_dir() && m.uid() == 0 && m.permissions().mode() & 0o022 == 0);
    }
}

// ---- 8. rustica install ---------------------------------------------------

#[test]
fn install_gives_the_module_mode_0644_and_root_whatever_the_source() {
    let src = tempdir();
    let dest = tempdir();
    let modules = dest.path().join("ossl-modules");
    let contents = b"\x7fELF pretend module".to_vec();
    for (i, mode) in [0o777u32, 0o600, 0o4755].into_iter().enumerate() {
        let module = src.path().join(format!("rustica-{i}.so"));
        fs::write(&module, &contents).unwrap();
        if is_root() {
            let who = intruder();
            lchown(&module, Some(who.0), Some(who.1)).unwrap();
        }
        // After the chown, which clears a set-user-ID bit.
        fs::set_permissions(&module, fs::Permissions::from_mode(mode)).unwrap();
        // Under umask 077, which would make a created file 0600.
        let o = Command::new("sh")
            .arg("-c")
            .arg("umask 077; exec \"$0\" \"$@\"")
            .arg(env!("CARGO_BIN_EXE_rustica"))
            .args(["install", "--module"])
            .arg(&module)
            .arg("--modules-dir")
            .arg(&modules)
            .env_remove("RUSTICA_MODULE")
            .output()
            .unwrap();
        assert!(o.status.success(), "source mode {mode:o}: {}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("/etc/ssl/openssl-rustica.cnf"),
            "{}",
            text(&o)
        );
        let installed = modules.join("rustica.so");
        let m = fs::symlink_metadata(&installed).unwrap();
        assert!(m.is_file());
        assert_eq!(
            m.permissions().mode() & 0o7777,
            0o644,
            "installed from a source of mode {mode:o}"
        );
        if is_root() {
            assert_eq!((m.uid(), m.gid()), (0, 0), "owner of the installed module");
        } else {
            eprintln!("install test: not root, so the owner (root) is not checked");
        }
        assert_eq!(fs::read(&installed).unwrap(), contents);
        assert_eq!(fs::read_dir(&modules).unwrap().count(), 1, "stray files");
    }
}
