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
//!   software.
//!
//! Behaviour and counters only: no timing is asserted (the figures are in
//! docs/performance.md, from scripts/bench-async.sh).

mod common;

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
    let exe = compile_c(lab, "async_jobs");
    let (program, mut args): (String, Vec<String>) = match wrapper.split_first() {
        Some((w, rest)) => (
            w.to_string(),
            rest.iter()
                .map(|s| s.to_string())
                .chain([exe.display().to_string()])
                .collect(),
        ),
        None => (exe.display().to_string(), Vec::new()),
    };
    args.extend([
        lab.p("rustica.cnf"),
        key.to_string(),
        mode.to_string(),
        jobs.to_string(),
    ]);
    let mut cmd = Command::new("timeout");
    cmd.arg("300").arg(&program).args(&args);
    cmd.current_dir(lab.dir.path())
        .env("RUSTICA_STATS_PATH", lab.path("stats"))
        .env("OPENSSL_CONF", "/dev/null");
    for (k, v) in env {
        cmd.env(k, v);
    }
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
    if Command::new("valgrind").arg("--version").output().is_err() {
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
    let lab = emu_lab(&[], &[]);
    let key = lab.genkey(2048, "key.pem");
    // Never inside a job: the process has its main thread only.
    let out = async_jobs(&lab, &[], &[], &key, "sync", 6);
    assert_eq!(printed(&out, "threads"), 1, "{out}");
    assert_eq!(lab.stats().max_inflight(), 0);
    // async = off: jobs, but synchronous, and still no thread.
    let off = emu_lab(&[("async", "off")], &[]);
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
