//! Shared plumbing of the harness's integration tests (lab.rs,
//! lab_async.rs, root_tools.rs): the `rustica` binary with a clean
//! environment, the module under test, private directories, and the
//! text of a finished command for assertion messages.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub mod lab;

/// The `rustica` binary of this build, without the variables that would
/// point it (or the openssl it runs) elsewhere, and with no standard input.
pub fn rustica() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rustica"));
    for v in [
        "RUSTICA_MODULE",
        "RUSTICA_STATS_PATH",
        "RUSTICA_BACKEND",
        "RUSTICA_LIBICA",
        "RUSTICA_DEBUG",
        "OPENSSL_CONF",
    ] {
        c.env_remove(v);
    }
    c.stdin(Stdio::null());
    c
}

/// The real module: $RUSTICA_MODULE, else the workspace's release build.
pub fn real_module() -> PathBuf {
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

/// A new private directory (mkdtemp: random name, mode 0700), kept until
/// the test removes it, so a failed test leaves its files to look at.
pub fn temp_dir(name: &str) -> PathBuf {
    tempfile::Builder::new()
        .prefix(&format!("rustica-harness-{name}-"))
        .tempdir()
        .unwrap()
        .keep()
}

/// Exit status, standard output and standard error, for a failed assertion.
pub fn text(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A local system user for tests that need a second one (root only; CI
/// runs as root), created without a home or a login shell when missing:
/// its (uid, gid).
pub fn system_user(name: &str) -> (u32, u32) {
    let id = |flag: &str| -> Option<u32> {
        let o = Command::new("id").args([flag, name]).output().ok()?;
        String::from_utf8_lossy(&o.stdout).trim().parse().ok()
    };
    if id("-u").is_none() {
        let o = Command::new("useradd")
            .args(["-M", "-r", "-s", "/usr/sbin/nologin", name])
            .output()
            .expect("run useradd");
        // A parallel test may have created it first.
        assert!(
            o.status.success() || id("-u").is_some(),
            "useradd {name} failed: {}",
            text(&o)
        );
    }
    (id("-u").expect("uid"), id("-g").expect("gid"))
}
