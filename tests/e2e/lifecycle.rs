//! rustica's lifecycle in every order OpenSSL tears things down, and its
//! random numbers from the library context it was loaded into:
//! - `openssl req -x509 -new` (OPENSSL_cleanup at exit) 200 times with an
//!   RSA-PSS key and 200 times with an RSA key, none hung or crashed;
//! - a program that does its RSA in its own OSSL_LIB_CTX (the default one
//!   holds only the "null" provider, so it has no random generator), 20
//!   rounds of create / keygen / sign / verify / OAEP / free, with rustica
//!   freed with the context or unloaded first, under valgrind;
//! - the init error line with stderr on /dev/full.

use crate::common;

use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;

/// Runs `openssl req -x509 -new` `runs` times on `key` under rustica (by
/// openssl.cnf), two at a time, each under `timeout 20`. Returns the
/// failures (run number, exit status, stderr).
fn req_runs(lab: &Lab, key: &str, runs: usize) -> Vec<String> {
    let next = AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= runs {
                    break;
                }
                let cmd = lab.command(
                    Side::RusticaConfig,
                    &[
                        "req",
                        "-x509",
                        "-new",
                        "-key",
                        key,
                        "-subj",
                        "/CN=x",
                        "-out",
                        "/dev/null",
                    ],
                );
                // `timeout` in front: a hang at exit ends as status 124.
                let program = cmd.get_program().to_owned();
                let args: Vec<_> = cmd.get_args().map(|a| a.to_owned()).collect();
                let mut timed = Command::new("timeout");
                timed.arg("20").arg(program).args(args);
                for (k, v) in cmd.get_envs() {
                    match v {
                        Some(v) => timed.env(k, v),
                        None => timed.env_remove(k),
                    };
                }
                timed.current_dir(lab.dir.path());
                let out = timed.stdin(Stdio::null()).output().expect("run timeout");
                if !out.status.success() {
                    let what = if out.status.code() == Some(124) {
                        "HUNG (killed after 20 s)".to_string()
                    } else {
                        format!("{:?}", out.status)
                    };
                    failures.lock().unwrap().push(format!(
                        "run {i}: {what}: {}",
                        String::from_utf8_lossy(&out.stderr)
                    ));
                }
            });
        }
    });
    failures.into_inner().unwrap()
}

fn req_200(algorithm: &str) {
    let lab = Lab::new();
    let key = lab.p("key.pem");
    lab.ok(
        Side::Default,
        &[
            "genpkey",
            "-algorithm",
            algorithm,
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
            &key,
        ],
    );
    let before = lab.done(Op::Sign);
    let failures = req_runs(&lab, &key, 200);
    assert!(
        failures.is_empty(),
        "{} of 200 `openssl req -x509 -new` runs with an {algorithm} key failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(
        lab.done(Op::Sign) - before,
        200,
        "rustica did not sign each certificate"
    );
}

#[test]
fn req_x509_with_rsa_pss_key_never_hangs_at_exit() {
    req_200("RSA-PSS");
}

#[test]
fn req_x509_with_rsa_key_never_hangs_at_exit() {
    req_200("RSA");
}

/// The config the program loads into its own library context. With
/// `rustica_by_config`, rustica is activated by it; otherwise only default
/// is, and the program loads rustica by name (OPENSSL_MODULES).
fn app_config(lab: &Lab, rustica_by_config: bool) -> String {
    let rustica = if rustica_by_config {
        format!(
            "rustica = rustica_sect\n[rustica_sect]\nmodule = {}\nactivate = 1\n",
            module_path().display()
        )
    } else {
        String::new()
    };
    lab.write(
        "app.cnf",
        format!(
            "openssl_conf = openssl_init\n[openssl_init]\nproviders = provider_sect\n\
             alg_section = evp_properties\n[provider_sect]\ndefault = default_sect\n\
             {rustica}[default_sect]\nactivate = 1\n\
             [evp_properties]\ndefault_properties = {PROPQ}\n"
        )
        .as_bytes(),
    )
}

fn run_cycle(lab: &Lab, wrapper: &[&str], rounds: u32, mode: &str, default_ctx: &str) -> Output {
    let exe = compile_c(lab, "libctx_cycle");
    let conf = app_config(lab, mode == "free");
    let mut cmd = Command::new(wrapper.first().copied().unwrap_or(exe.to_str().unwrap()));
    if !wrapper.is_empty() {
        cmd.args(&wrapper[1..]).arg(&exe);
    }
    cmd.args([conf.as_str(), &rounds.to_string(), mode, default_ctx])
        .current_dir(lab.dir.path())
        .env("RUSTICA_STATS_PATH", lab.path("stats"))
        .env("OPENSSL_MODULES", module_dir())
        // The program loads its configuration itself; the default context
        // must stay without a random generator.
        .env("OPENSSL_CONF", "/dev/null")
        .env_remove("RUSTICA_BACKEND")
        .env_remove("RUSTICA_DEBUG")
        .stdin(Stdio::null())
        .output()
        .expect("run libctx_cycle")
}

fn assert_rustica_did_all(lab: &Lab, rounds: u64) {
    for op in [Op::Keygen, Op::Sign, Op::Verify, Op::Encrypt, Op::Decrypt] {
        assert_eq!(
            lab.done(op),
            rounds,
            "rustica's counters: {op:?} not done once per round"
        );
    }
}

/// Every random number comes from the application's library context: the
/// default one has no RNG here, so drawing from it fails the round.
#[test]
fn own_library_context_with_null_default_context() {
    for mode in ["free", "unload"] {
        let lab = Lab::new();
        let out = run_cycle(&lab, &[], 2, mode, "null");
        assert!(
            out.status.success(),
            "libctx_cycle ({mode}) failed: {:?}\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_rustica_did_all(&lab, 2);
    }
}

/// Rounds of create / use / free in one process under valgrind: no
/// invalid read or write, no use of freed memory, in either teardown order,
/// with and without a random generator in the default context (with one,
/// the teardown is tested on its own: before the fix, freeing the fetched
/// digests after the child library context read freed memory).
#[test]
fn own_library_context_twenty_rounds_under_valgrind() {
    if !valgrind_usable() {
        panic!("valgrind is missing: run scripts/setup.sh");
    }
    // 20 rounds in the main order; the other two orders 5 rounds each
    // (valgrind is slow, and the rounds do the same thing).
    for (mode, default_ctx, rounds) in [
        ("free", "null", 20),
        ("unload", "null", 5),
        ("free", "default", 5),
    ] {
        let lab = Lab::new();
        let out = run_cycle(
            &lab,
            &[
                "valgrind",
                "-q",
                "--error-exitcode=99",
                "--leak-check=no",
                "--track-origins=no",
            ],
            rounds,
            mode,
            default_ctx,
        );
        assert!(
            out.status.success(),
            "libctx_cycle ({mode}, {default_ctx} in the default context) under valgrind: {:?}\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_rustica_did_all(&lab, rounds.into());
    }
}

/// A configuration error makes rustica print one line on stderr at init;
/// with stderr on /dev/full that write fails, and must not panic across
/// `extern "C"` (an abort of the host program).
#[test]
fn init_error_line_with_stderr_on_dev_full() {
    let lab = Lab::with_rustica(&[("backend", "no-such-backend")], &[]);
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let out = lab
        .command(Side::RusticaConfig, &["list", "-providers"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(full)
        .output()
        .expect("run openssl");
    assert!(
        out.status.code().is_some(),
        "openssl was killed by a signal (panic across extern \"C\"?): {:?}",
        out.status
    );
    // And the line is there when stderr works.
    let out = lab.run(Side::RusticaConfig, &["list", "-providers"]);
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("rustica: not loaded"), "{text}");
}
