//! Threads and fork, in-process: many threads signing and decrypting with
//! one shared rustica key get correct results (each checked with the
//! default provider), and a process that used rustica and then forks keeps
//! working in parent and child.
//!
//! The fork happens in a child process (this test binary re-executed with
//! `RUSTICA_FORK_HELPER=1`, running only `fork_helper`), never in the
//! multi-threaded test runner itself.

mod common;
#[path = "conformance/evp.rs"]
mod evp;

use std::process::Command;
use std::sync::Arc;

use evp::{names as n, Lib, Params, Pkey, DEFAULT, RUSTICA};

const THREADS: usize = 8;
const ROUNDS: usize = 25;
const HELPER_ENV: &str = "RUSTICA_FORK_HELPER";

fn message(t: usize, i: usize) -> Vec<u8> {
    format!("thread {t} round {i}: rustica shares one key")
        .into_bytes()
        .repeat(1 + (t + i) % 5)
}

fn sig_params(pss: bool) -> Params {
    let mut p = Params::new();
    if pss {
        p.utf8(n::SIG_PAD_MODE, "pss")
            .utf8(n::SIG_MGF1_DIGEST, "SHA2-256")
            .int(n::SIG_SALTLEN, 32);
    } else {
        p.utf8(n::SIG_PAD_MODE, "pkcs1");
    }
    p
}

fn cipher_params(oaep: bool) -> Params {
    let mut p = Params::new();
    if oaep {
        p.utf8(n::CIPHER_PAD_MODE, "oaep")
            .utf8(n::OAEP_DIGEST, "SHA2-256")
            .utf8(n::MGF1_DIGEST, "SHA2-256")
            .octets(n::OAEP_LABEL, b"rustica label");
    } else {
        p.utf8(n::CIPHER_PAD_MODE, "pkcs1");
    }
    p
}

/// Signs with rustica and verifies with the default provider; encrypts
/// with the default provider and decrypts with rustica. Panics on any
/// wrong result.
fn round_trip(lib: &Lib, key: &Pkey, t: usize, i: usize) {
    let msg = message(t, i);
    let pss = (t + i).is_multiple_of(2);
    let sig = lib
        .digest_sign(key, "SHA2-256", RUSTICA, &mut sig_params(pss), &msg)
        .unwrap_or_else(|e| panic!("thread {t} round {i}: sign: {e}"));
    let checked = lib
        .digest_verify(key, "SHA2-256", DEFAULT, &mut sig_params(pss), &msg, &sig)
        .expect("verify setup");
    assert!(
        checked.is_ok(),
        "thread {t} round {i}: the default provider refused rustica's signature: {checked:?}"
    );

    let secret = &msg[..msg.len().min(60)];
    let oaep = !(t + i).is_multiple_of(3);
    let ct = lib
        .encrypt(key, DEFAULT, &mut cipher_params(oaep), secret)
        .expect("encrypt setup")
        .expect("encrypt");
    let pt = lib
        .decrypt(key, RUSTICA, &mut cipher_params(oaep), &ct)
        .expect("decrypt setup")
        .unwrap_or_else(|e| panic!("thread {t} round {i}: decrypt: {e}"));
    assert_eq!(pt, secret, "thread {t} round {i}: wrong plaintext");
}

#[test]
fn many_threads_share_one_key() {
    let lib = Arc::new(Lib::new(common::module_dir()));
    let key = lib.generate(RUSTICA, 2048);
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (lib, key) = (Arc::clone(&lib), key.clone());
            std::thread::spawn(move || {
                for i in 0..ROUNDS {
                    round_trip(&lib, &key, t, i);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("a worker thread failed");
    }
}

#[test]
fn fork_after_use_keeps_working_in_parent_and_child() {
    if std::env::var_os(HELPER_ENV).is_some() {
        return;
    }
    let exe = std::env::current_exe().expect("test binary");
    let out = Command::new(exe)
        .args(["--exact", "fork_helper", "--nocapture", "--test-threads=1"])
        .env(HELPER_ENV, "1")
        .env("RUSTICA_MODULE_DIR", common::module_dir())
        .output()
        .expect("re-run the test binary");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "fork helper failed:\n{text}");
    assert!(
        text.contains("fork-helper: parent ok, child ok"),
        "fork helper did not run:\n{text}"
    );
}

/// Runs only in the re-executed process: use rustica, fork, use it again
/// on both sides (the child reports by exit status).
#[test]
fn fork_helper() {
    if std::env::var_os(HELPER_ENV).is_none() {
        return;
    }
    let lib = Lib::new(common::module_dir());
    let key = lib.generate(RUSTICA, 2048);
    for i in 0..4 {
        round_trip(&lib, &key, 0, i);
    }
    // SAFETY: this process runs one test on one thread (--test-threads=1);
    // the runner's main thread only waits for it, holding no locks.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let ok = std::panic::catch_unwind(|| {
            for i in 0..6 {
                round_trip(&lib, &key, 1, i);
            }
            // A key made after the fork works too.
            let fresh = lib.generate(RUSTICA, 1024);
            round_trip(&lib, &fresh, 2, 0);
        })
        .is_ok();
        // SAFETY: leave the child at once, without running the parent's
        // exit handlers or destructors a second time.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    for i in 0..6 {
        round_trip(&lib, &key, 3, i);
    }
    let mut status = 0;
    // SAFETY: waits for our own child; status is a valid out pointer.
    let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
    assert_eq!(waited, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the forked child failed (status {status:#x})"
    );
    println!("fork-helper: parent ok, child ok");
}
