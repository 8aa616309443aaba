//! Asynchronous offload through OpenSSL's ASYNC jobs, on the emulated
//! libica (backend = libica):
//! - `openssl speed -async_jobs 16` and `s_server -async` with `s_client`:
//!   the operations succeed and are counted on libica and as async;
//! - fault injection (errno and corrupt modes) inside jobs: every result
//!   is still checked, falls back and is counted;
//! - tests/c/async_jobs.c: many jobs, some abandoned while paused (their
//!   wait contexts freed), then the library context freed (rustica
//!   unloaded) with requests possibly in flight, under valgrind; a fork
//!   while requests are in flight; the thread count of a process that
//!   never uses async and of one with `async = off`;
//! - the largest key sizes inside jobs: 4096 bits on the emulator, 7680 in
//!   software;
//! - key generation inside jobs (on the job's small stack), on the emulator
//!   and in software;
//! - PKCS#1 v1.5 implicit rejection inside jobs: the same synthetic
//!   message as outside a job and as the default provider's;
//! - a core of another libcrypto than rustica's (a 4.0 `openssl` with
//!   rustica built for libcrypto.so.3, or the reverse): async off, said by
//!   the build info and `rustica doctor`, operations still succeed.
//!
//! Behaviour and counters only: no timing is asserted (the figures are in
//! docs/performance.md, from workshop/scripts/bench-async.sh).

use crate::common;

use std::process::Command;

use common::*;
use ibmca_shim::stats::{Backend, Op, Snapshot};

/// A lab whose rustica runs on the emulated libica, with `keys` added to
/// its section and `env` (emulator settings) for every command.
fn emu_lab(keys: &[(&str, &str)], env: &[(&str, &str)]) -> Lab {
    let emu = emulator_path();
    let emu = emu.to_str().unwrap().to_string();
    let mut all = vec![("backend", "libica"), ("libica", emu.as_str())];
    all.extend_from_slice(keys);
    Lab::with_rustica(&all, env)
}

/// Runs tests/c/async_jobs.c (compiled into the lab) with `env`, through
/// `wrapper` (e.g. valgrind) when given; returns its stdout, failing the
/// test unless it exits 0.
fn async_jobs(
    lab: &Lab,
    wrapper: &[&str],
    env: &[(&str, &str)],
    key: &str,
    mode: &str,
    jobs: u32,
) -> String {
    async_jobs_with(lab, wrapper, env, key, mode, jobs, &[])
}

/// [`async_jobs`] with `extra` arguments after JOBS (reject mode's
/// ciphertext file).
fn async_jobs_with(
    lab: &Lab,
    wrapper: &[&str],
    env: &[(&str, &str)],
    key: &str,
    mode: &str,
    jobs: u32,
    extra: &[&str],
) -> String {
    let exe = compile_c(lab, "async_jobs");
    let prefix: Vec<&str> = ["timeout", "300"]
        .into_iter()
        .chain(wrapper.iter().copied())
        .collect();
    let mut cmd = lab.program(&prefix, &exe, env);
    cmd.args([
        lab.p("rustica.cnf"),
        key.to_string(),
        mode.to_string(),
        jobs.to_string(),
    ])
    .args(extra);
    let out = cmd.output().expect("run async_jobs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "async_jobs {mode} {jobs} ({wrapper:?}, {env:?}): {:?}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The number printed after `what` by async_jobs.
fn printed(out: &str, what: &str) -> u64 {
    out.lines()
        .find_map(|l| l.strip_prefix(what)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no '{what}' in {out}"))
}

/// Every private operation counted ended on libica or fell back; none
/// failed.
fn assert_private_ops_offloaded(s: &Snapshot) {
    for op in [Op::Sign, Op::Decrypt] {
        assert_eq!(s.get(op, Backend::Failed), 0, "{}", s.to_json());
        assert_eq!(s.get(op, Backend::Software), 0, "{}", s.to_json());
        assert!(
            s.asynchronous(op) <= s.total(op),
            "more async than operations: {}",
            s.to_json()
        );
    }
}

#[test]
fn speed_with_16_async_jobs_runs_through_paused_jobs() {
    let lab = emu_lab(&[], &[("LIBICA_EMU_LATENCY_US", "500")]);
    let out = lab.ok(
        Side::RusticaConfig,
        &[
            "speed",
            "-seconds",
            "1",
            "-elapsed",
            "-async_jobs",
            "16",
            "rsa2048",
        ],
    );
    // "rsa 2048 bits" on 3.0, "rsa  2048 bits" (more columns) from 3.4.
    assert!(
        out.lines()
            .any(|l| l.starts_with("rsa") && l.contains("2048 bits")),
        "{out}"
    );
    assert!(!out.contains("failure"), "{out}");
    let s = lab.stats();
    assert_private_ops_offloaded(&s);
    assert!(s.get(Op::Sign, Backend::Libica) > 16, "{}", s.to_json());
    // Nearly all signatures completed through a paused job (speed's own
    // first check signature runs outside a job).
    assert!(
        s.asynchronous(Op::Sign) * 10 >= s.total(Op::Sign) * 9,
        "{}",
        s.to_json()
    );
    assert!(s.max_inflight() >= 2, "{}", s.to_json());
    assert!(s.max_inflight() <= 16, "{}", s.to_json());
}

#[test]
fn async_off_and_software_keep_speed_synchronous() {
    let lab = emu_lab(&[("async", "off")], &[]);
    lab.ok(
        Side::RusticaConfig,
        &["speed", "-seconds", "1", "-async_jobs", "4", "rsa1024"],
    );
    let s = lab.stats();
    assert!(s.get(Op::Sign, Backend::Libica) > 0, "{}", s.to_json());
    assert_eq!(s.asynchronous(Op::Sign), 0, "{}", s.to_json());
    assert_eq!(s.max_inflight(), 0, "{}", s.to_json());
}

#[test]
fn tls_handshakes_with_s_server_async() {
    let lab = emu_lab(&[], &[("LIBICA_EMU_LATENCY_US", "500")]);
    let key = lab.genkey(2048, "server.pem");
    let cert = lab.self_signed(&key, "cert.pem");
    let (_server, port) = lab.tls_server(Side::RusticaConfig, &key, &cert, &["-async"]);
    // TLS 1.3 (RSA-PSS signature) and TLS 1.2 with RSA key exchange
    // (PKCS#1 v1.5 decryption of the premaster secret).
    let out = lab.tls_client(Side::Default, port, &["-tls1_3"]);
    assert!(out.contains("CONNECTION ESTABLISHED"), "{out}");
    let out = lab.tls_client(
        Side::Default,
        port,
        &["-tls1_2", "-cipher", "AES128-GCM-SHA256"],
    );
    assert!(out.contains("CONNECTION ESTABLISHED"), "{out}");
    assert!(out.contains("AES128-GCM-SHA256"), "{out}");
    let s = lab.stats();
    assert_private_ops_offloaded(&s);
    // The certificate's signature (openssl req) ran outside a job; the
    // TLS 1.3 handshake's inside one.
    assert!(s.asynchronous(Op::Sign) >= 1, "{}", s.to_json());
    assert!(s.asynchronous(Op::Decrypt) >= 1, "{}", s.to_json());
}

#[test]
fn faults_inside_jobs_are_checked_and_fall_back() {
    for fault in ["LIBICA_EMU_ERRNO_EVERY", "LIBICA_EMU_CORRUPT_EVERY"] {
        let lab = emu_lab(&[], &[]);
        let key = lab.genkey(2048, "key.pem");
        let env = [(fault, "3"), ("LIBICA_EMU_LATENCY_US", "2000")];
        let out = async_jobs(&lab, &[], &env, &key, "jobs", 30);
        assert!(printed(&out, "paused") > 0, "{out}");
        let s = lab.stats();
        for op in [Op::Sign, Op::Decrypt] {
            assert_eq!(s.get(op, Backend::Failed), 0, "{fault}: {}", s.to_json());
        }
        let fell_back = s.get(Op::Sign, Backend::Fallback) + s.get(Op::Decrypt, Backend::Fallback);
        assert!(fell_back > 0, "{fault}: {}", s.to_json());
        assert!(s.asynchronous(Op::Sign) > 0, "{fault}: {}", s.to_json());
    }
}

#[test]
fn abandoned_jobs_and_unload_under_valgrind() {
    let lab = emu_lab(&[], &[]);
    let key = lab.genkey(2048, "key.pem");
    // A long latency keeps the abandoned requests in flight while their
    // wait contexts are freed and the provider is unloaded.
    let env = [
        ("LIBICA_EMU_LATENCY_US", "50000"),
        ("LIBICA_EMU_UNITS", "4"),
    ];
    let out = async_jobs(&lab, &[], &env, &key, "jobs", 60);
    assert_eq!(printed(&out, "paused"), 60, "{out}");
    assert!(printed(&out, "threads") > 1, "{out}");
    if !valgrind_usable() {
        eprintln!("valgrind is missing: the run under valgrind is skipped");
        return;
    }
    let valgrind = [
        "valgrind",
        "-q",
        "--error-exitcode=99",
        "--leak-check=no",
        "--track-origins=no",
    ];
    let out = async_jobs(&lab, &valgrind, &env, &key, "jobs", 20);
    assert!(printed(&out, "paused") > 0, "{out}");
}

#[test]
fn fork_with_requests_in_flight() {
    let lab = emu_lab(&[], &[]);
    let key = lab.genkey(2048, "key.pem");
    let env = [("LIBICA_EMU_LATENCY_US", "20000")];
    let out = async_jobs(&lab, &[], &env, &key, "fork", 12);
    assert!(out.contains("child ok"), "{out}");
    assert_eq!(printed(&out, "paused"), 12, "{out}");
    let s = lab.stats();
    assert_private_ops_offloaded(&s);
}

#[test]
fn no_thread_without_async_use_or_with_async_off() {
    // Without a deadline (offload-timeout-ms = 0): with one, every libica
    // call runs on an offload thread, inside a job or not.
    let lab = emu_lab(&[("offload-timeout-ms", "0")], &[]);
    let key = lab.genkey(2048, "key.pem");
    // Never inside a job: the process has its main thread only.
    let out = async_jobs(&lab, &[], &[], &key, "sync", 6);
    assert_eq!(printed(&out, "threads"), 1, "{out}");
    assert_eq!(lab.stats().max_inflight(), 0);
    // The default deadline: the synchronous calls went to an offload
    // thread, which stays (idle) for the next one.
    let dl = emu_lab(&[], &[]);
    let out = async_jobs(&dl, &[], &[], &key, "sync", 6);
    assert!(printed(&out, "threads") > 1, "{out}");
    assert_eq!(dl.stats().max_inflight(), 0);
    // async = off: jobs, but synchronous, and still no thread.
    let off = emu_lab(&[("async", "off"), ("offload-timeout-ms", "0")], &[]);
    let out = async_jobs(&off, &[], &[], &key, "jobs", 10);
    assert_eq!(printed(&out, "threads"), 1, "{out}");
    assert_eq!(printed(&out, "paused"), 0, "{out}");
    let s = off.stats();
    assert_eq!(s.asynchronous(Op::Sign), 0, "{}", s.to_json());
    assert!(s.get(Op::Sign, Backend::Libica) > 0, "{}", s.to_json());
}

#[test]
fn largest_keys_inside_jobs() {
    // 4096 bits: the emulator's largest, offloaded from the jobs.
    let lab = emu_lab(&[], &[("LIBICA_EMU_LATENCY_US", "1000")]);
    let key = lab.genkey(4096, "key4096.pem");
    let out = async_jobs(
        &lab,
        &[],
        &[("LIBICA_EMU_LATENCY_US", "1000")],
        &key,
        "jobs",
        8,
    );
    assert!(printed(&out, "paused") > 0, "{out}");
    let s = lab.stats();
    assert!(s.asynchronous(Op::Sign) > 0, "{}", s.to_json());
    assert_eq!(
        s.by_bits(Op::Sign).get(&4096).copied().unwrap_or(0),
        s.total(Op::Sign)
    );
    // 7680 bits: outside the offload range, software inside the job (no
    // pause, and the job's small stack is enough).
    let lab = emu_lab(&[], &[]);
    let big = fixture(7680).display().to_string();
    let out = async_jobs(&lab, &[], &[], &big, "jobs", 3);
    assert_eq!(printed(&out, "paused"), 0, "{out}");
    let s = lab.stats();
    assert!(s.get(Op::Sign, Backend::Software) > 0, "{}", s.to_json());
    assert_eq!(s.asynchronous(Op::Sign), 0, "{}", s.to_json());
}

#[test]
fn fips_mode_libica_sends_small_keys_to_software_by_rule() {
    let lab = emu_lab(&[("debug", "stderr")], &[("LIBICA_FIPS_FLAG", "1")]);
    let small = lab.genkey(2048, "k2048.pem");
    let large = lab.genkey(3072, "k3072.pem");
    let doc = lab.write("doc.txt", b"FIPS floor");
    let before = lab.stats();
    for key in [&small, &large] {
        let out = lab.run(
            Side::RusticaConfig,
            &["dgst", "-sha256", "-sign", key, "-out", "/dev/null", &doc],
        );
        assert!(out.status.success(), "{out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("libica is in FIPS mode"), "{err}");
    }
    let s = lab.stats();
    let delta = |b| s.get(Op::Sign, b) - before.get(Op::Sign, b);
    // 2048 bits in software by rule (not a fallback per call), 3072 on
    // libica.
    assert_eq!(delta(Backend::Software), 1, "{}", s.to_json());
    assert_eq!(delta(Backend::Libica), 1, "{}", s.to_json());
    assert_eq!(delta(Backend::Fallback), 0, "{}", s.to_json());
}

#[test]
fn key_generation_inside_jobs() {
    // On the emulator: each key's generation runs on an offload thread
    // while its job pauses once, with the prime candidates' Miller-Rabin
    // exponentiations on the (emulated) adapter.
    let env = [("LIBICA_EMU_LATENCY_US", "1000")];
    let lab = emu_lab(&[], &env);
    // (The key only gives the size to generate.)
    let key = implicit_rejection_fixture("RSA-2048.pem");
    let out = async_jobs(&lab, &[], &env, &key, "keygen", 4);
    assert_eq!(printed(&out, "paused"), 4, "{out}");
    let s = lab.stats();
    assert_eq!(s.get(Op::Keygen, Backend::Libica), 4, "{}", s.to_json());
    assert_eq!(s.total(Op::Keygen), 4, "{}", s.to_json());
    assert_eq!(s.asynchronous(Op::Keygen), 4, "{}", s.to_json());
    assert!(
        s.get(Op::KeygenModexp, Backend::Libica) >= 4 * 20,
        "{}",
        s.to_json()
    );
    assert_eq!(
        s.get(Op::KeygenModexp, Backend::Fallback),
        0,
        "{}",
        s.to_json()
    );
    // Each generated key signed once, outside the jobs, on libica.
    assert_eq!(s.get(Op::Sign, Backend::Libica), 4, "{}", s.to_json());
    // In software (backend = software): the same method inside the job,
    // on a helper thread's stack; nothing pauses.
    let soft = Lab::with_rustica(&[("backend", "software")], &[]);
    let out = async_jobs(&soft, &[], &[], &key, "keygen", 3);
    assert_eq!(printed(&out, "paused"), 0, "{out}");
    let s = soft.stats();
    assert_eq!(s.get(Op::Keygen, Backend::Software), 3, "{}", s.to_json());
    assert_eq!(s.total(Op::Keygen), 3, "{}", s.to_json());
}

fn implicit_rejection_fixture(name: &str) -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/implicit-rejection")
        .join(name)
        .display()
        .to_string()
}

/// (key file, ciphertext, synthetic message) of OpenSSL's implicit
/// rejection vectors for the 2048-bit keys whose padding is invalid
/// (their comment says wrong, invalid or corrupted), implicit rejection on.
fn synthetic_vectors() -> Vec<(String, Vec<u8>, Vec<u8>)> {
    let unhex = |h: &str| {
        (0..h.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&h[i..i + 2], 16).expect("hex"))
            .collect::<Vec<u8>>()
    };
    let text = std::fs::read_to_string(implicit_rejection_fixture("vectors.txt")).unwrap();
    let mut out = Vec::new();
    for block in text.split("\n\n") {
        let field = |name: &str| {
            block.lines().find_map(|l| {
                l.strip_prefix(name)?
                    .trim()
                    .strip_prefix('=')
                    .map(str::trim)
            })
        };
        let invalid = block.lines().any(|l| {
            let l = l.to_lowercase();
            l.starts_with('#')
                && ["wrong", "invalid", "corrupted"]
                    .iter()
                    .any(|w| l.contains(w))
        });
        let key = match field("Decrypt") {
            Some(k @ ("RSA-2048" | "RSA-2048-2")) => k,
            _ => continue,
        };
        if !invalid || field("Ctrl").is_some() {
            continue;
        }
        if let (Some(input), Some(output)) = (field("Input"), field("Output")) {
            if !output.starts_with('"') {
                out.push((
                    implicit_rejection_fixture(&format!("{key}.pem")),
                    unhex(input),
                    unhex(output),
                ));
            }
        }
    }
    out
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The hex string printed after `what` by async_jobs.
fn printed_hex(out: &str, what: &str) -> String {
    out.lines()
        .find_map(|l| l.strip_prefix(what)?.strip_prefix(' ').map(str::to_string))
        .unwrap_or_else(|| panic!("no '{what}' in {out}"))
}

#[test]
fn implicit_rejection_inside_jobs_matches_the_synchronous_path() {
    let vectors = synthetic_vectors();
    assert!(vectors.len() >= 3, "only {} vectors", vectors.len());
    // The latency keeps every job's request in flight past its pause.
    let env = [("LIBICA_EMU_LATENCY_US", "2000")];
    let lab = emu_lab(&[], &env);
    // The default provider does implicit rejection from OpenSSL 3.2 on;
    // on older ones the vectors' messages (OpenSSL 3.5's) stand for it.
    let live_default = openssl_version() >= (3, 2);
    for (i, (key, ct, want)) in vectors.iter().take(3).enumerate() {
        let ct_file = lab.write(&format!("ct{i}.bin"), ct);
        let before = lab.stats();
        let out = async_jobs_with(&lab, &[], &env, key, "reject", 6, &[&ct_file]);
        let s = lab.stats();
        // Every job paused for its libica call, and the seven decryptions
        // (one outside a job) were rustica's, on libica.
        assert_eq!(printed(&out, "paused"), 6, "{out}");
        let delta = |b| s.get(Op::Decrypt, b) - before.get(Op::Decrypt, b);
        assert_eq!(delta(Backend::Libica), 7, "{}", s.to_json());
        assert_eq!(
            s.asynchronous(Op::Decrypt) - before.asynchronous(Op::Decrypt),
            6,
            "{}",
            s.to_json()
        );
        let sync = printed_hex(&out, "sync");
        assert_eq!(printed_hex(&out, "async"), sync, "vector {i}");
        assert_eq!(
            sync,
            hex(want),
            "vector {i}: not OpenSSL's synthetic message"
        );
        if live_default {
            let pt = format!("pt{i}.bin");
            lab.ok(
                Side::Default,
                &[
                    "pkeyutl", "-decrypt", "-inkey", key, "-in", &ct_file, "-out", &pt,
                ],
            );
            let stock = std::fs::read(lab.path(&pt)).unwrap();
            assert_eq!(
                sync,
                hex(&stock),
                "vector {i}: the default provider differs"
            );
        }
    }
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// The build cache as scripts/lib/common.sh's `cache_dir` names it:
/// $RUSTICA_CACHE, else /var/cache/rustica-build for root and
/// ${XDG_CACHE_HOME:-$HOME/.cache}/rustica-build for anyone else (a
/// relative XDG_CACHE_HOME ignored).
fn build_cache() -> Option<std::path::PathBuf> {
    use std::path::PathBuf;
    if let Some(c) = std::env::var_os("RUSTICA_CACHE") {
        return Some(c.into());
    }
    if euid() == 0 {
        return Some("/var/cache/rustica-build".into());
    }
    let xdg = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    let base = xdg.or_else(|| Some(PathBuf::from(std::env::var_os("HOME")?).join(".cache")))?;
    Some(base.join("rustica-build"))
}

/// The cache's rule (docs/security.md, "What the build scripts trust") for
/// a program this test would run from it: the program, with no link left in
/// its name, is the caller's and writable by the caller alone; every
/// directory above it is the caller's or root's, and one others may write
/// to is sticky.
fn trusted_build(program: &std::path::Path) -> Result<(), String> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let real = program
        .canonicalize()
        .map_err(|e| format!("{}: {e}", program.display()))?;
    let m = std::fs::metadata(&real).map_err(|e| format!("{}: {e}", real.display()))?;
    if m.uid() != euid() || m.permissions().mode() & 0o022 != 0 {
        return Err(format!(
            "{} has owner {} and mode {:o}: not yours (uid {}) alone",
            real.display(),
            m.uid(),
            m.permissions().mode() & 0o7777,
            euid()
        ));
    }
    for dir in real.ancestors().skip(1) {
        let m = std::fs::metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mode = m.permissions().mode();
        if (m.uid() != 0 && m.uid() != euid()) || (mode & 0o022 != 0 && mode & 0o1000 == 0) {
            return Err(format!(
                "{} has owner {} and mode {:o}: another user could swap what is below it",
                dir.display(),
                m.uid(),
                mode & 0o7777
            ));
        }
    }
    Ok(())
}

/// An `openssl` command whose libcrypto is not the one rustica was built
/// against: OpenSSL 4.0's (libcrypto.so.4, scripts/openssl-build.sh's
/// cache) when rustica calls a 3.x libcrypto, the host's 3.x when rustica
/// was built for 4.0 (scripts/test-openssl.sh 4.0). $RUSTICA_FOREIGN_OPENSSL
/// overrides it.
fn foreign_openssl() -> Option<std::path::PathBuf> {
    if let Some(p) = std::env::var_os("RUSTICA_FOREIGN_OPENSSL") {
        return Some(p.into());
    }
    let linked = ibmca_shim::linked_openssl_version().0;
    let candidate = if linked == 3 {
        let candidate = build_cache()?.join("openssl-4.0/install/bin/openssl");
        if candidate.exists() {
            if let Err(e) = trusted_build(&candidate) {
                panic!("refusing to run {}: {e}", candidate.display());
            }
        }
        candidate
    } else {
        std::path::PathBuf::from("/usr/bin/openssl")
    };
    let major = Command::new(&candidate)
        .arg("version")
        .env("OPENSSL_CONF", "/dev/null")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| {
            let v = String::from_utf8_lossy(&o.stdout).into_owned();
            v.split_whitespace()
                .nth(1)?
                .split('.')
                .next()?
                .parse::<u32>()
                .ok()
        })?;
    (major != linked).then_some(candidate)
}

#[test]
fn a_core_of_another_libcrypto_keeps_async_off_and_operations_counted() {
    let Some(openssl) = foreign_openssl() else {
        eprintln!(
            "no openssl of another libcrypto than rustica's (scripts/openssl-build.sh 4.0 \
             caches one): skipped"
        );
        return;
    };
    let lab = emu_lab(&[], &[("LIBICA_EMU_LATENCY_US", "500")]);
    let foreign = |args: &[&str]| {
        let out = Command::new(&openssl)
            .args(args)
            .current_dir(lab.dir.path())
            .env("OPENSSL_CONF", lab.path("rustica.cnf"))
            .env("RUSTICA_STATS_PATH", lab.path("stats"))
            .env("LIBICA_EMU_LATENCY_US", "500")
            .env_remove("RUSTICA_BACKEND")
            .output()
            .expect("run the foreign openssl");
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "{} {args:?}: {text}",
            openssl.display()
        );
        text
    };
    // The build info line (the `backend` information) says why.
    let listed = foreign(&["list", "-providers", "-verbose"]);
    assert!(
        listed.contains("async: off (the core is another libcrypto than rustica's"),
        "{listed}"
    );
    // speed's jobs are the foreign libcrypto's: rustica runs every
    // signature synchronously, on libica, and none fails.
    let out = foreign(&["speed", "-seconds", "1", "-async_jobs", "4", "rsa2048"]);
    assert!(out.contains("2048 bits"), "{out}");
    let s = lab.stats();
    assert!(s.get(Op::Sign, Backend::Libica) > 4, "{}", s.to_json());
    assert_eq!(s.get(Op::Sign, Backend::Failed), 0, "{}", s.to_json());
    assert_eq!(s.asynchronous(Op::Sign), 0, "{}", s.to_json());
    assert_eq!(s.max_inflight(), 0, "{}", s.to_json());
    // `rustica doctor` with that openssl first on PATH says the same.
    let bin = lab.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(&openssl, bin.join("openssl")).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = Command::new(rustica_bin())
        .args([
            "doctor",
            "--module",
            module_path().to_str().unwrap(),
            "--config",
            &lab.p("rustica.cnf"),
        ])
        .env("PATH", path)
        .env("RUSTICA_STATS_PATH", lab.path("doctor-stats"))
        .output()
        .unwrap();
    let t = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    let line = t
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some("async:"))
        .unwrap_or_else(|| panic!("no async line: {t}"));
    assert!(line.contains("off (the openssl command is OpenSSL"), "{t}");
}

/// A job that registers rustica's wait fd pauses at least once, so the
/// application sees the fd (HAProxy aborted on a wait fd it had never been
/// told of: with a fast adapter the result was there before the job's
/// first check, and the job returned without pausing; and over
/// `async-max-inflight` the fd was registered before the operation was
/// sent to run synchronously). async_jobs fails on such a job.
#[test]
fn every_registered_wait_fd_is_announced_by_a_pause() {
    // An instant adapter: results are often there before the job looks.
    let lab = emu_lab(&[], &[]);
    let key = lab.genkey(2048, "key.pem");
    let instant = [("LIBICA_EMU_LATENCY_US", "0")];
    for _ in 0..3 {
        let out = async_jobs(&lab, &[], &instant, &key, "jobs", 40);
        assert!(printed(&out, "paused") > 0, "{out}");
    }
    // Over async-max-inflight: those operations run synchronously and
    // must not leave a wait fd behind.
    let capped = emu_lab(&[("async-max-inflight", "2")], &[]);
    let slow = [("LIBICA_EMU_LATENCY_US", "5000")];
    let out = async_jobs(&capped, &[], &slow, &key, "jobs", 30);
    let paused = printed(&out, "paused");
    assert!(paused > 0 && paused < 30, "{out}");
    let s = capped.stats();
    assert!(s.max_inflight() <= 2, "{}", s.to_json());
    // Some operations ran synchronously (over the cap), the others async.
    let asynced = s.asynchronous(Op::Sign) + s.asynchronous(Op::Decrypt);
    let total = s.total(Op::Sign) + s.total(Op::Decrypt);
    assert!(asynced > 0 && asynced < total, "{}", s.to_json());
}

/// Inside ASYNC jobs (`openssl speed -async_jobs 4`), every adapter call
/// hanging for two minutes and `offload-timeout-ms = 100`: each paused job
/// is woken at its deadline and its signature finished in software (speed
/// checks its first signature), so every signature is a fallback, some
/// are counted late, none fails, and the process exits without waiting
/// for the offload threads still in the hung calls.
#[test]
fn paused_jobs_give_a_hung_adapter_call_up_at_the_deadline() {
    let lab = emu_lab(
        &[("offload-timeout-ms", "100"), ("async-threads", "4")],
        &[
            ("LIBICA_EMU_HANG_EVERY", "1"),
            ("LIBICA_EMU_HANG_MS", "120000"),
        ],
    );
    let cmd = lab.command(
        Side::RusticaConfig,
        &["speed", "-seconds", "1", "-async_jobs", "4", "rsa2048"],
    );
    let out = output_within(cmd, std::time::Duration::from_secs(60));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("2048 bits"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = lab.stats();
    let late = s.late(Op::Sign);
    assert!((1..=4).contains(&late), "{}", s.to_json());
    assert_eq!(s.get(Op::Sign, Backend::Libica), 0, "{}", s.to_json());
    assert_eq!(s.get(Op::Sign, Backend::Failed), 0, "{}", s.to_json());
    assert!(s.get(Op::Sign, Backend::Fallback) > late, "{}", s.to_json());
    // Still in libica when the process ended: nothing was discarded.
    assert_eq!(s.late_discarded(Op::Sign), 0, "{}", s.to_json());
}

/// One long-lived process, outside any job: the emulated libica hangs
/// each call 1.5 s, `offload-timeout-ms = 100`. The first signature is
/// given up at its deadline and finished in software; while its thread
/// (the only one, `async-threads = 1`) waits for the answer the others go
/// to software at once; when the answer comes it is discarded and counted.
/// The process stays 15 s (ten times the hang: a bound on the event). The
/// debug trace says so too, once per discarded answer.
#[test]
fn a_late_answer_is_discarded_and_counted_when_it_comes() {
    let debug_dir = tempfile::tempdir().unwrap();
    let debug_path = debug_dir.path().display().to_string();
    let lab = emu_lab(
        &[
            ("offload-timeout-ms", "100"),
            ("async-threads", "1"),
            ("debug", "yes"),
            ("debug-path", &debug_path),
        ],
        &[],
    );
    let key = lab.genkey(2048, "key.pem");
    let env = [
        ("LIBICA_EMU_HANG_EVERY", "1"),
        ("LIBICA_EMU_HANG_MS", "1500"),
        ("LINGER_MS", "15000"),
    ];
    let out = async_jobs(&lab, &[], &env, &key, "linger", 3);
    assert_eq!(printed(&out, "paused"), 0, "{out}");
    let s = lab.stats();
    let late = s.late(Op::Sign) + s.late(Op::Decrypt);
    assert!(late >= 1, "{}", s.to_json());
    assert_eq!(
        s.late_discarded(Op::Sign) + s.late_discarded(Op::Decrypt),
        late,
        "{}",
        s.to_json()
    );
    assert_eq!(s.get(Op::Sign, Backend::Failed), 0, "{}", s.to_json());
    assert_eq!(s.get(Op::Sign, Backend::Libica), 0, "{}", s.to_json());
    let trace = std::fs::read_to_string(debug_dir.path().join("rustica-debug.log")).unwrap();
    let told = trace
        .lines()
        .filter(|l| l.ends_with("a late answer came from libica, discarded"))
        .count() as u64;
    assert_eq!(told, late, "{trace}");
}

/// Requests still queued when their jobs give them up are never sent: one
/// offload thread (`async-threads = 1`), four jobs at once, the emulated
/// libica hanging its second call (the first job's) for 1.5 s and
/// `offload-timeout-ms = 100`. All four jobs finish in software at their
/// deadlines; the emulator's call log has the signature made before the
/// jobs and the first job's call, nothing of the three queued behind it,
/// although the process stays 15 s (ten times the hang: a bound on the
/// event), long enough for a queued request to have been sent.
#[test]
fn queued_requests_given_up_are_never_sent() {
    let lab = emu_lab(
        &[("offload-timeout-ms", "100"), ("async-threads", "1")],
        &[],
    );
    let key = lab.genkey(2048, "key.pem");
    let calls = lab.path("emu-calls");
    let env = [
        ("LIBICA_EMU_HANG_EVERY", "2"),
        ("LIBICA_EMU_HANG_MS", "1500"),
        ("LIBICA_EMU_COUNTS", calls.to_str().unwrap()),
        ("LINGER_MS", "15000"),
    ];
    let out = async_jobs(&lab, &[], &env, &key, "jobs", 4);
    assert!(printed(&out, "paused") > 0, "{out}");
    let log = std::fs::read_to_string(&calls).unwrap_or_default();
    assert_eq!(log.lines().count(), 2, "{log}");
    let s = lab.stats();
    let (late, discarded) = Op::ALL.iter().fold((0, 0), |(l, d), op| {
        (l + s.late(*op), d + s.late_discarded(*op))
    });
    assert_eq!((late, discarded), (4, 1), "{}", s.to_json());
    assert_eq!(s.get(Op::Sign, Backend::Failed), 0, "{}", s.to_json());
    assert_eq!(s.get(Op::Decrypt, Backend::Failed), 0, "{}", s.to_json());
}
